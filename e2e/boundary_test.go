package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// TestDirectStartProbes starts the workflow as a backend in another
// language, a Schedule or the UI's "Start Workflow" form would: a plain
// Temporal client, workflow type "Delegation", raw JSON. Each probe used
// to run (and some reached the agent); the workflow now refuses each
// itself, at once, non-retryable, naming the field and the rule, before
// any activity: nothing reaches the agent.
func TestDirectStartProbes(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	contractJSON := func(id string, change func(m map[string]any)) json.RawMessage {
		b, _ := json.Marshal(lostParcel(id, e.base))
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if change != nil {
			change(m)
		}
		out, _ := json.Marshal(m)
		return out
	}
	start := func(t *testing.T, wfID string, args ...any) error {
		t.Helper()
		run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: contracts.TaskQueue}, contracts.WorkflowType, args...)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		return run.Get(ctx, nil)
	}
	refused := func(t *testing.T, err error, typ string, want ...string) {
		t.Helper()
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != typ || !ae.NonRetryable() {
			t.Fatalf("error = %v, want a non-retryable %s", err, typ)
		}
		for _, w := range want {
			if !strings.Contains(ae.Error(), w) {
				t.Errorf("error %q does not say %q", ae.Error(), w)
			}
		}
	}

	for name, tc := range map[string]struct {
		change func(m map[string]any)
		want   []string
	}{
		// A TypeScript or Java backend's spelling: it silently turned the
		// signed-card requirement off, and the message went to an
		// unsigned agent.
		"requireSignedCard": {func(m map[string]any) { m["requireSignedCard"] = true }, []string{"requireSignedCard"}},
		"SKILL":             {func(m map[string]any) { m["SKILL"] = m["skill"]; delete(m, "skill") }, []string{"SKILL"}},
		"Write_Authority":   {func(m map[string]any) { m["Write_Authority"] = m["write_authority"]; delete(m, "write_authority") }, []string{"Write_Authority"}},
		"deadline in 10 years": {func(m map[string]any) {
			m["deadline"] = time.Now().AddDate(10, 0, 0).UTC().Format(time.RFC3339)
		}, []string{"deadline", "at most 366 days ahead"}},
		// A relative deadline is the CLI's and package client's: a raw
		// start must carry the absolute one.
		"deadline_in": {func(m map[string]any) { delete(m, "deadline"); m["deadline_in"] = "1h" }, []string{
			"deadline_in: a relative deadline is resolved by the CLI or package client", `a backend that starts the workflow itself must send "deadline"`}},
		"1.9 MB message": {func(m map[string]any) {
			m["message"] = map[string]any{"text": strings.Repeat("x", 1900<<10)}
		}, []string{"over the 262144-byte limit"}},
		"wrong type": {func(m map[string]any) { m["allowed_outputs"] = "claim_opened" }, []string{"allowed_outputs"}},
	} {
		t.Run(name, func(t *testing.T) {
			id := "probe-" + strings.NewReplacer(" ", "-", ".", "-").Replace(strings.ToLower(name))
			refused(t, start(t, id, contractJSON(id, tc.change)), "invalid_contract", tc.want...)
		})
	}

	// A workflow id other than local_workflow_id: status of that run
	// printed "answer with: delegate answer <the other id>".
	t.Run("workflow id", func(t *testing.T) {
		refused(t, start(t, "probe-other-id", contractJSON("probe-the-contract-id", nil)), "invalid_contract",
			`"probe-the-contract-id" is not the workflow id "probe-other-id"`)
	})

	// Search attributes a starter set on a refused run (a lie in list and
	// in the orphan sweep's query) are replaced by the run's own.
	t.Run("starter's search attributes", func(t *testing.T) {
		id := "probe-liar"
		run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: contracts.TaskQueue,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState).ValueSet("completed"),
				temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2ARemoteTaskID).ValueSet("someone-elses-task"))},
			contracts.WorkflowType, contractJSON(id, func(m map[string]any) { m["SKILL"] = "x" }))
		if err != nil {
			t.Fatal(err)
		}
		refused(t, run.Get(ctx, nil), "invalid_contract", "SKILL")
		d, err := e.c.DescribeWorkflowExecution(ctx, id, run.GetRunID())
		if err != nil {
			t.Fatal(err)
		}
		f := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
		if _, has := f[contracts.SearchAttributeA2ARemoteTaskID]; has || !strings.Contains(string(f[contracts.SearchAttributeA2AState].GetData()), `"ended"`) {
			t.Errorf("search attributes of the refused run: %v, want A2AState ended and no remote task", f)
		}
	})

	// A cron schedule: each tick sent round 0 again, and from the second
	// tick a made-up carry was taken (the run had a previous run).
	t.Run("cron", func(t *testing.T) {
		id := "probe-cron"
		run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: contracts.TaskQueue, CronSchedule: "@every 2s"},
			contracts.WorkflowType, contractJSON(id, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.c.TerminateWorkflow(context.Background(), id, "", "end of the cron probe") }()
		messages := e.agent.MessageCount()
		iter := e.c.GetWorkflowHistory(ctx, id, run.GetRunID(), true, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		// A cron run's failure closes it as continued as new (the next
		// tick), with the failure attached.
		f := ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetFailure()
		if f.GetApplicationFailureInfo().GetType() != "invalid_contract" || !f.GetApplicationFailureInfo().GetNonRetryable() || !strings.Contains(f.GetMessage(), "(cron schedule)") {
			t.Errorf("the cron run closed with %v, want invalid_contract naming the cron schedule", ev)
		}
		if n := e.agent.MessageCount(); n != messages {
			t.Errorf("the agent got %d message(s) from the cron runs", n-messages)
		}
	})

	// A made-up carry (workflow input 2) naming another delegation's
	// remote task made this run answer that task: the agent took the
	// message, and the other delegation ended with no answer of its own.
	t.Run("made-up carry", func(t *testing.T) {
		victim := lostParcel("probe-victim", e.base)
		vrun, err := startRun(ctx, e.c, victim)
		if err != nil {
			t.Fatal(err)
		}
		vs := waitA2AState(t, ctx, e.c, victim.LocalWorkflowID, "input-required")
		messages := e.agent.MessageCount()
		carry := json.RawMessage(fmt.Sprintf(`{"state": {"local_workflow_id": "probe-attacker", "agent_card_url": %q, "skill": "open-claim",
			"remote_task_id": %q, "context_id": %q, "a2a_state": "input-required", "input_rounds": 0,
			"last_snapshot": {"task_id": %q, "context_id": %q, "state": "input-required"}},
			"pending": {"text": "not the operator's answer"}}`, victim.AgentCardURL, vs.RemoteTaskID, vs.ContextID, vs.RemoteTaskID, vs.ContextID))
		refused(t, start(t, "probe-attacker", contractJSON("probe-attacker", nil), carry), "carried_state", "started anew")
		if n := e.agent.MessageCount(); n != messages {
			t.Errorf("the agent got %d message(s) from the refused run", n-messages)
		}
		// The victim still waits for its own operator, and completes.
		out := e.answerAndFinish(t, ctx, victim.LocalWorkflowID, vrun)
		if out.InputRounds != 1 {
			t.Errorf("victim: %d rounds, want its own 1", out.InputRounds)
		}
	})
}
