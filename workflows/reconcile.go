package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
)

// ReconcileWorkflowType is the workflow a reconcile Schedule starts.
const ReconcileWorkflowType = "ReconcileDelegations"

// ReconcileScheduleID is the id of the Schedule `delegate reconcile
// --schedule` creates.
const ReconcileScheduleID = "delegate-reconcile"

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
