package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

// ReconcileInput selects the open delegations to reconcile.
type ReconcileInput struct {
	Namespace string `json:"namespace"`
	// OlderThan keeps delegations started more than this long ago (0: all).
	OlderThan time.Duration `json:"older_than,omitempty"`
	// State keeps delegations whose search attribute A2AState is State.
	State string `json:"state,omitempty"`
}

// ReconcileQuery is the visibility query of in.
func ReconcileQuery(in ReconcileInput, now time.Time) string {
	q := fmt.Sprintf(`WorkflowType = %q AND ExecutionStatus = "Running"`, contracts.WorkflowType)
	if in.State != "" {
		// A schedule made before a spelling changed keeps the old one.
		q += " AND " + contracts.A2AStateFilter(contracts.CurrentA2AState(in.State))
	}
	if in.OlderThan > 0 {
		q += fmt.Sprintf(` AND StartTime < %q`, now.Add(-in.OlderThan).UTC().Format(time.RFC3339))
	}
	return q
}

// ReconcileOpen finds open delegations through visibility and sends each
// the Signal "reconcile" (the workflow then reads its remote task once).
// It returns the workflow ids signaled. Used by the Schedule that
// `delegate reconcile --schedule` creates.
func (a *Activities) ReconcileOpen(ctx context.Context, in ReconcileInput) ([]string, error) {
	if a.Temporal == nil {
		return nil, errors.New("the worker has no Temporal client for reconciliation")
	}
	ids, err := ListOpen(ctx, a.Temporal, in, time.Now())
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := a.Temporal.SignalWorkflow(ctx, id, "", "reconcile", nil); err != nil {
			a.logger().Warn("reconcile signal failed", "workflow_id", id)
		}
	}
	return ids, nil
}

// ListOpen lists the ids of the open delegations in selects.
func ListOpen(ctx context.Context, c client.Client, in ReconcileInput, now time.Time) ([]string, error) {
	var ids []string
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: in.Namespace, Query: ReconcileQuery(in, now), NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, ex := range resp.Executions {
			ids = append(ids, ex.Execution.WorkflowId)
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return ids, nil
		}
	}
}
