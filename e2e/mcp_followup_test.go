package e2e

import (
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/mcp"
)

// TestMCPStatusWaitsPastAnAnswer: right after delegation_answer, the
// search attribute A2AState may still say input-required while the
// delegation sends the answer; delegation_status with wait_seconds waits
// until the delegation really moved on (here: the agent works a second,
// then completes), not returning at once with "sending".
func TestMCPStatusWaitsPastAnAnswer(t *testing.T) {
	e := setup(t, func(o *options) { o.agent = claimsagent.Config{WorkDelay: 1500 * time.Millisecond} })
	cs := stdioSession(t, e.mcpServer(t, "alice"), nil)
	res, r := call(t, cs, "open_parcel_claim_auto", map[string]any{"order_id": "A-9009", "wait_seconds": 30})
	if res.IsError || r.Question == nil {
		t.Fatalf("start: %s (%+v), want the agent's question", text(res), r)
	}
	id := r.LocalWorkflowID
	res, r = call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": id, "text": "Photo sent."})
	if res.IsError {
		t.Fatalf("delegation_answer: %s", text(res))
	}
	begin := time.Now()
	res, r = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 10})
	took := time.Since(begin)
	if res.IsError {
		t.Fatalf("delegation_status: %s", text(res))
	}
	if r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("delegation_status wait_seconds=10 returned after %s with a2a_state %s (%s), want it to wait until the delegation completed",
			took.Round(time.Millisecond), r.A2AState, text(res))
	}
}
