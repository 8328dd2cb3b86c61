package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// thinkContract is a contract for scenario "think": the agent works inside
// the send (a blocking send whatever returnImmediately says), for the
// agent's ThinkDelay, and makes a new task for every delivery of a
// messageId.
func thinkContract(id, base string) contracts.Delegation {
	d := lostParcel(id, base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"think"}`)
	return d
}

// TestAgentsThatWorkInsideTheSend: an agent that answers the send only
// when its work is done (3 s here; 40 s in the example), and does
// not deduplicate messageIds.
//   - Its card declares streaming: the first message goes by
//     SendStreamingMessage and the task id comes with the first event, so
//     a send timeout shorter than the work makes nothing unknown.
//   - Without streaming, a send_timeout longer than the work: the send
//     returns the finished task.
//   - Without streaming and a send_timeout shorter than the work, resend
//     on: the send's outcome is unknown, the task it made is found by its
//     messageId (ListTasks) and adopted; no resend, one task at the agent
//     (four sends made four before).
//   - A cancel while such a send is in flight does not wait for it: the
//     send is abandoned, the task found and canceled, and the agent
//     confirms the cancel (its work was not done).
func TestAgentsThatWorkInsideTheSend(t *testing.T) {
	e := setup(t, func(o *options) { o.agent.ThinkDelay = 3 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	streaming := func(on bool) { e.agent.Update(func(c *a2a.AgentCard) { c.Capabilities.Streaming = on }) }
	tasks := func() int { return e.agent.TasksOf(claimsagent.ScenarioThink) }

	t.Run("streaming card, send timeout shorter than the work", func(t *testing.T) {
		streaming(true)
		before := tasks()
		d := thinkContract("think-streaming", e.base)
		d.SendTimeout = "1s"
		out := e.outcomeOf(t, ctx, d)
		if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
			t.Fatalf("outcome = %s %+v, want completed with the claim", out.Status, out.Error)
		}
		if n := tasks() - before; n != 1 {
			t.Errorf("the agent made %d tasks, want 1", n)
		}
		st, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Sends {
			if strings.Contains(s.Result, "unknown") {
				t.Errorf("sends = %+v: a streamed first send is never unknown once its first event came", st.Sends)
			}
		}
	})
	t.Run("no streaming, send_timeout longer than the work", func(t *testing.T) {
		streaming(false)
		before := tasks()
		d := thinkContract("think-long-timeout", e.base)
		d.SendTimeout = "30s"
		out := e.outcomeOf(t, ctx, d)
		if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
			t.Fatalf("outcome = %s %+v, want completed", out.Status, out.Error)
		}
		if n := tasks() - before; n != 1 {
			t.Errorf("the agent made %d tasks, want 1", n)
		}
	})
	t.Run("no streaming, send timeout shorter than the work, resend", func(t *testing.T) {
		streaming(false)
		before := tasks()
		d := thinkContract("think-short-timeout", e.base)
		d.SendTimeout = "1s"
		d.OnUnknownOutcome = contracts.OnUnknownResend
		out := e.outcomeOf(t, ctx, d)
		if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
			t.Fatalf("outcome = %s %+v, want completed: the task the send made, adopted", out.Status, out.Error)
		}
		if n := tasks() - before; n != 1 {
			t.Errorf("the agent made %d tasks, want 1: a resend made a second", n)
		}
		st, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var results []string
		for _, s := range st.Sends {
			results = append(results, s.Result)
		}
		if strings.Join(results, ",") != "unknown_outcome,adopted: found by ListTasks" {
			t.Errorf("sends = %q, want the unknown outcome, then the task adopted", results)
		}
	})
	t.Run("cancel during a send in flight", func(t *testing.T) {
		// An agent whose work takes longer than this test may run (2
		// minutes): the cancel can only be confirmed if it did not wait.
		e := setup(t, func(o *options) { o.agent.ThinkDelay = 2 * time.Minute })
		e.agent.Update(func(c *a2a.AgentCard) { c.Capabilities.Streaming = false })
		tasks := func() int { return e.agent.TasksOf(claimsagent.ScenarioThink) }
		d := thinkContract("think-cancel", e.base)
		d.SendTimeout = "5m"
		run, err := startRun(ctx, e.c, d)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the agent working on the task", 30*time.Second, func() (bool, string) { return tasks() == 1, "" })
		if err := dclient.Get(e.c, d.LocalWorkflowID).Cancel(ctx, "no longer needed"); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := run.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		// canceled (not cancel_unconfirmed): the agent canceled the task, so
		// its work was not done when the CancelTask came.
		if out.Status != contracts.StatusCanceled || out.RemoteTaskID == "" {
			t.Errorf("outcome = %s %+v (task %q), want canceled, the task found and canceled", out.Status, out.Error, out.RemoteTaskID)
		}
		if n := tasks(); n != 1 {
			t.Errorf("the agent made %d tasks, want 1", n)
		}
	})
}
