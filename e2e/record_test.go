package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/activities"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// TestRecordHistories runs one delegation per scenario and writes each
// workflow history as JSON into $DELEGATE_RECORD_HISTORIES (make
// record-histories NAME=baseline, or NAME=<change-id>-v<N> for a version
// after it: docs/versioning.md); workflows/replay_test.go replays them.
// Every version records every scenario. Skipped unless the variable names
// a directory.
func TestRecordHistories(t *testing.T) {
	dir := os.Getenv("DELEGATE_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set DELEGATE_RECORD_HISTORIES=DIR to record histories (make record-histories)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// hang, when armed, makes the next SendMessage an unknown outcome: the
	// agent takes the message, its answer is dropped.
	var hang atomic.Bool
	p := newFaultProxy(func(int) string {
		if hang.CompareAndSwap(true, false) {
			return "hang"
		}
		return "pass"
	})
	defer p.close()
	// noList, when set, makes the agent one that serves no ListTasks
	// (JSON-RPC method not found), so that an unknown outcome is left to
	// an operator.
	var noList atomic.Bool
	recording := func(o *options) {
		o.agent.WorkDelay = 600 * time.Millisecond
		o.proxy = func(agentURL string) http.Handler { return withoutListTasks(p.handler(agentURL), noList.Load) }
		o.acts = func(a *activities.Activities, _ string) { a.SendTimeout = 2 * time.Second }
	}
	e := setup(t, recording)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	only := os.Getenv("DELEGATE_RECORD_ONLY") // comma-separated scenario names
	want := func(name string) bool { return only == "" || slices.Contains(strings.Split(only, ","), name) }

	contract := func(id, scenario string) contracts.Delegation {
		d := lostParcel("record-"+id, e.base)
		if scenario != "" {
			d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"` + scenario + `"}`)
		}
		return d
	}
	waitState := func(id, state string) contracts.State {
		var s contracts.State
		waitFor(t, id+" "+state, time.Minute, func() (bool, string) {
			var err error
			s, err = dclient.Get(e.c, id).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return s.A2AState == state, s.A2AState
		})
		return s
	}
	// writeRun writes one run's history and returns the run it continued
	// as new into ("" when none).
	writeRun := func(name, id, runID string) string {
		hist := &historypb.History{}
		it := e.c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, ev)
		}
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d events", name, len(hist.Events))
		last := hist.Events[len(hist.Events)-1]
		if a := last.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
			return a.GetNewExecutionRunId()
		}
		return ""
	}
	write := func(name string, run client.WorkflowRun, want contracts.Status) {
		first := run.GetRunID()
		var out contracts.Outcome
		if err := run.Get(ctx, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %s", name, out.Status)
		if out.Status != want {
			t.Errorf("%s ended %s (%+v), want %s: not recorded", name, out.Status, out.Error, want)
			return
		}
		runID, n := first, 0
		for runID != "" {
			file := name
			if n > 0 {
				file = fmt.Sprintf("%s-run%d", name, n)
			}
			runID = writeRun(file, run.GetID(), runID)
			n++
		}
	}
	start := func(d contracts.Delegation) client.WorkflowRun {
		run, err := startRun(ctx, e.c, d)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}

	if want("continue-as-new") {
		// A worker whose delegations continue as new at the first chance
		// (the closures below use e).
		saved := e
		e = setup(t, recording, func(o *options) { o.workflows.ContinueAsNewEvents = 1 })
		d := contract("continue-as-new", "")
		run := start(d)
		waitState(d.LocalWorkflowID, "input-required")
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg"}); err != nil {
			t.Fatal(err)
		}
		write("continue-as-new", run, contracts.StatusCompleted)
		e = saved
	}
	resolve := func(id string, res contracts.Resolution) {
		h, err := e.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contracts.ResolveUnknown,
			Args: []any{res}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			t.Fatalf("resolve-unknown %s: %v", res.Action, err)
		}
	}
	answer := func(id string) {
		waitState(id, "input-required")
		if _, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg"}); err != nil {
			t.Fatal(err)
		}
	}
	if want("unknown-outcome-resend") {
		// An agent without ListTasks: the operator resends.
		d := contract("unknown-outcome-resend", "")
		noList.Store(true)
		hang.Store(true)
		run := start(d)
		waitState(d.LocalWorkflowID, string(contracts.PhaseUnknownOutcome))
		noList.Store(false)
		resolve(d.LocalWorkflowID, contracts.Resolution{Action: contracts.ActionResend})
		answer(d.LocalWorkflowID)
		write("unknown-outcome-resend", run, contracts.StatusCompleted)
	}
	if want("unknown-outcome-found") {
		// The task the lost reply was about is found by ListTasks.
		d := contract("unknown-outcome-found", "")
		hang.Store(true)
		run := start(d)
		answer(d.LocalWorkflowID)
		write("unknown-outcome-found", run, contracts.StatusCompleted)
	}
	if want("cancel-while-sending") {
		// A cancel while the send's reply is held: the send is abandoned,
		// its task found by ListTasks and canceled.
		d := contract("cancel-while-sending", "slow")
		before := e.agent.TasksOf(claimsagent.ScenarioSlow)
		hang.Store(true)
		run := start(d)
		waitState(d.LocalWorkflowID, string(contracts.PhaseSending))
		waitFor(t, "the agent working on the task", time.Minute, func() (bool, string) { return e.agent.TasksOf(claimsagent.ScenarioSlow) > before, "" })
		if err := e.c.CancelWorkflow(ctx, d.LocalWorkflowID, ""); err != nil {
			t.Fatal(err)
		}
		write("cancel-while-sending", run, contracts.StatusCanceled)
	}
	if want("unknown-outcome-adopt") {
		d := contract("unknown-outcome-adopt", "")
		run := start(d)
		answer(d.LocalWorkflowID)
		// The follow-up's answer is lost; the operator adopts the task.
		hang.Store(true)
		s := waitState(d.LocalWorkflowID, string(contracts.PhaseUnknownOutcome))
		resolve(d.LocalWorkflowID, contracts.Resolution{Action: contracts.ActionAdopt, TaskID: s.RemoteTaskID})
		write("unknown-outcome-adopt", run, contracts.StatusCompleted)
	}
	if want("cancel-unconfirmed") {
		d := contract("cancel-unconfirmed", "stubborn")
		run := start(d)
		waitState(d.LocalWorkflowID, "working")
		if err := e.c.CancelWorkflow(ctx, d.LocalWorkflowID, ""); err != nil {
			t.Fatal(err)
		}
		write("cancel-unconfirmed", run, contracts.StatusCancelUnconfirmed)
	}
	if only == "" {
		d := contract("instant", "instant")
		write("instant", start(d), contracts.StatusCompleted)

		d = contract("signal-round", "")
		run := start(d)
		waitState(d.LocalWorkflowID, "input-required")
		if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.ProvideInput, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "recorder"}); err != nil {
			t.Fatal(err)
		}
		write("signal-round", run, contracts.StatusCompleted)

		d = contract("update-round", "")
		run = start(d)
		waitState(d.LocalWorkflowID, "input-required")
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "recorder"}); err != nil {
			t.Fatal(err)
		}
		write("update-round", run, contracts.StatusCompleted)

		d = contract("reconcile-then-answer", "")
		run = start(d)
		waitState(d.LocalWorkflowID, "input-required")
		if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.SignalReconcile, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "reconciled", time.Minute, func() (bool, string) {
			s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return len(s.Reconciliations) == 1, s.A2AState
		})
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg"}); err != nil {
			t.Fatal(err)
		}
		write("reconcile-then-answer", run, contracts.StatusCompleted)

		d = contract("reconcile-twice-during-a-read", "")
		run = start(d)
		waitState(d.LocalWorkflowID, "input-required")
		// Two requests back to back: the second arrives while the first
		// one's read runs and is folded into it.
		for range 2 {
			if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.SignalReconcile, nil); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "reconciled twice", time.Minute, func() (bool, string) {
			s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return s.ReconcileCount == 2, fmt.Sprintf("%+v", s.Reconciliations)
		})
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg"}); err != nil {
			t.Fatal(err)
		}
		write("reconcile-twice-during-a-read", run, contracts.StatusCompleted)

		d = contract("revoke", "")
		run = start(d)
		waitState(d.LocalWorkflowID, "input-required")
		if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.SignalRevoke, map[string]string{"reason": "recorded"}); err != nil {
			t.Fatal(err)
		}
		write("revoke", run, contracts.StatusAuthorizationDenied)

		d = contract("cancel", "slow")
		run = start(d)
		waitState(d.LocalWorkflowID, "working")
		if err := e.c.CancelWorkflow(ctx, d.LocalWorkflowID, ""); err != nil {
			t.Fatal(err)
		}
		write("cancel", run, contracts.StatusCanceled)

		d = contract("deadline-waiting", "")
		d.Deadline = time.Now().Add(6 * time.Second).UTC()
		write("deadline-waiting", start(d), contracts.StatusDeadlineExceeded)

		d = contract("deadline-working", "slow")
		d.Deadline = time.Now().Add(6 * time.Second).UTC()
		write("deadline-working", start(d), contracts.StatusDeadlineExceeded)
	}
	if want("pushed") {
		// The agent pushes the task's completion to a webhook; the
		// delegation reads the task on the push.
		var c client.Client
		settings, _ := newWebhook(t, []byte(strings.Repeat("r", 32)), &c, "")
		saved := e
		e = setup(t, recording, func(o *options) {
			o.agent.StubbornDelay = 2 * time.Second
			inner := o.acts
			o.acts = func(a *activities.Activities, base string) { inner(a, base); a.Push = settings }
		})
		c = e.c
		d := contract("pushed", "stubborn")
		d.WaitingPollSeconds = 3600
		run := start(d)
		write("pushed", run, contracts.StatusCompleted)
		e = saved
	}
	if want("encrypted") {
		// Every payload sealed (package codec) with the test keys the replay
		// test opens them with.
		keys, err := codec.LoadKeys("../workflows/testdata/encryption-test-keys.txt")
		if err != nil {
			t.Fatal(err)
		}
		saved := e
		e = setup(t, recording, func(o *options) { o.keys = keys })
		d := contract("encrypted-update-round", "")
		run := start(d)
		waitState(d.LocalWorkflowID, "input-required")
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "recorder"}); err != nil {
			t.Fatal(err)
		}
		write("encrypted-update-round", run, contracts.StatusCompleted)
		e = saved
	}
	if want("card-change-rediscover") {
		// Last: it changes the agent's card for good.
		d := contract("card-change-rediscover", "")
		run := start(d)
		waitState(d.LocalWorkflowID, "input-required")
		e.agent.Update(dropJSONRPC10)
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg"}); err != nil {
			t.Fatal(err)
		}
		waitState(d.LocalWorkflowID, string(contracts.PhaseCardChanged))
		if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.SignalRediscover, nil); err != nil {
			t.Fatal(err)
		}
		write("card-change-rediscover", run, contracts.StatusCompleted)
	}
}
