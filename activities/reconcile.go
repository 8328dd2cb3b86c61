package activities

import (
	"context"
	"errors"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// ReconcileOpen finds open delegations through visibility
// (client.ReconcileOptions of in) and sends each the Signal "reconcile"
// (the workflow then reads its remote task once). It returns the workflow
// ids signaled. Used by the Schedule that `delegate reconcile --schedule`
// creates.
func (a *Activities) ReconcileOpen(ctx context.Context, in contracts.ReconcileInput) ([]string, error) {
	if a.Temporal == nil {
		return nil, errors.New("the worker has no Temporal client for reconciliation")
	}
	// Its heartbeat timeout (a minute) is shorter than a pass over many
	// delegations may take.
	stop := keepHeartbeating(ctx, 3*time.Second)
	defer stop()
	rows, err := dclient.List(ctx, a.Temporal, dclient.ReconcileOptions(in, time.Now()))
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
		if err := dclient.Get(a.Temporal, r.ID).Reconcile(ctx); err != nil {
			a.logger().Warn("reconcile signal failed", "local_workflow_id", r.ID, "error", err)
		}
	}
	return ids, nil
}
