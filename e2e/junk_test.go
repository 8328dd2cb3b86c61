package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// A contract near its size limit, then 1.9 MB junk Signals (an answer
// nobody can use and a Signal of a name the workflow does not know, three
// of each), then a cancel and a revoke: the delegation ends canceled at
// once and its remote task is canceled; no workflow task fails with a
// potential deadlock (TMPRL1101). (The server may fail a workflow task
// while its buffered signals are over its limit, FORCE_CLOSE_COMMAND, and
// schedules another: that is its own protection, and the run goes on.)
// Before the workflow bounded its own input, a 1.9 MB contract ran and
// left every later workflow task failing.
func TestJunkSignalsThenCancelEndCleanly(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := lostParcel("junk-then-cancel", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"slow","pad":"` + strings.Repeat("p", 250<<10) + `"}`)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "working").RemoteTaskID
	junk := strings.Repeat("j", 1900<<10)
	for i := 0; i < 3; i++ {
		if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.ProvideInput, map[string]any{"text": junk}); err != nil {
			t.Fatalf("junk answer %d: %v", i, err)
		}
		if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", "no-such-signal", junk); err != nil {
			t.Fatalf("junk signal %d: %v", i, err)
		}
	}
	if err := dclient.Get(e.c, d.LocalWorkflowID).Cancel(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	_ = dclient.Get(e.c, d.LocalWorkflowID).Revoke(ctx, "and revoke") // may find it ended
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled {
		t.Fatalf("outcome = %s %+v, %v; want canceled", out.Status, out.Error, err)
	}
	agent, err := a2aclient.Dial(ctx, contracts.Interface{URL: e.base + claimsagent.JSONRPCPath, Binding: "JSONRPC", Version: "1.0"}, a2aclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if s, err := agent.GetTask(ctx, task, ""); err != nil || s.State != contracts.TaskStateCanceled {
		t.Errorf("remote task = %s, %v; want canceled", s.State, err)
	}
	if h := exportHistory(t, ctx, e.c, d.LocalWorkflowID); strings.Contains(h, "TMPRL1101") {
		t.Errorf("a workflow task failed with a potential deadlock")
	}
}
