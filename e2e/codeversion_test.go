package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// TestCodeVersionOnFinishedDelegations: a delegation that ended, and a run
// that refused its contract, show the code version that wrote them in
// search attribute DelegationCodeVersion, in visibility as well.
func TestCodeVersionOnFinishedDelegations(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := lostParcel("code-version-done", e.base)
	done.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"instant"}`)
	if out := e.outcomeOf(t, ctx, done); out.Status != contracts.StatusCompleted {
		t.Fatalf("status %s", out.Status)
	}
	refused := lostParcel("code-version-refused", e.base)
	refused.WriteAuthority = "all" // the workflow refuses it
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: refused.LocalWorkflowID, TaskQueue: contracts.TaskQueue}, contracts.WorkflowType, refused)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err == nil {
		t.Fatal("the contract with write_authority all was not refused")
	}
	for _, id := range []string{done.LocalWorkflowID, refused.LocalWorkflowID} {
		if got := codeVersionOf(t, ctx, e, id); got != workflows.Newest() {
			t.Errorf("%s: DelegationCodeVersion = %q, want %q", id, got, workflows.Newest())
		}
	}
	query := fmt.Sprintf("%s = '%s' AND ExecutionStatus != 'Running'", contracts.SearchAttributeDelegationCodeVersion, workflows.Newest())
	waitFor(t, "visibility: "+query, 30*time.Second, func() (bool, string) {
		resp, err := e.c.ListWorkflow(ctx, listRequest(e.srv.Namespace(), query))
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, ex := range resp.GetExecutions() {
			ids = append(ids, ex.GetExecution().GetWorkflowId())
		}
		return slices.Contains(ids, done.LocalWorkflowID) && slices.Contains(ids, refused.LocalWorkflowID), fmt.Sprint(ids)
	})
}

// codeVersionOf is the search attribute DelegationCodeVersion of id's
// current run ("" when unset).
func codeVersionOf(t *testing.T, ctx context.Context, e *env, id string) string {
	t.Helper()
	resp, err := e.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeDelegationCodeVersion]
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
