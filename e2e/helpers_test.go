package e2e

import (
	"context"
	"testing"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

func listRequest(ns, query string) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query}
}

// outcomeOf starts d and waits for its Outcome.
func (e *env) outcomeOf(t *testing.T, ctx context.Context, d contracts.Delegation) contracts.Outcome {
	t.Helper()
	run, err := workflows.Start(ctx, e.c, d)
	if err != nil {
		t.Fatalf("Start(%s) error = %v", d.LocalWorkflowID, err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("%s: %v", d.LocalWorkflowID, err)
	}
	return out
}
