package e2e

import (
	"context"
	"testing"

	dclient "github.com/a2adelegate/delegate/client"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

func listRequest(ns, query string) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query}
}

// outcomeOf starts d and waits for its Outcome.
func (e *env) outcomeOf(t *testing.T, ctx context.Context, d contracts.Delegation) contracts.Outcome {
	t.Helper()
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatalf("Start(%s) error = %v", d.LocalWorkflowID, err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("%s: %v", d.LocalWorkflowID, err)
	}
	return out
}

// startRun starts d through package client (as a backend does) and returns
// its workflow run.
func startRun(ctx context.Context, c client.Client, d contracts.Delegation) (client.WorkflowRun, error) {
	h, err := dclient.Start(ctx, c, d)
	if err != nil {
		return nil, err
	}
	return h.Run(), nil
}
