package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
)

// ReconcileDelegations signals "reconcile" to the open delegations that in
// selects (a Temporal Schedule runs it every interval). It returns the ids.
func ReconcileDelegations(ctx workflow.Context, in activities.ReconcileInput) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var ids []string
	err := workflow.ExecuteActivity(ctx, acts.ReconcileOpen, in).Get(ctx, &ids)
	return ids, err
}
