package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// A delegation killed from outside never ran its CancelTask: terminated
// by an operator, or replaced by a start with the conflict policy
// TERMINATE_EXISTING, its remote task stayed WORKING and nothing looked
// for it. The orphan sweep (reconcile, and its Schedule) finds the
// terminated runs, cancels each remote task still working, and records
// what it did; the delegation that replaced one keeps its own task.
func TestTerminatedDelegationsOrphansCanceled(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	slow := func(id string) contracts.Delegation {
		d := lostParcel(id, e.base)
		d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"slow"}`)
		return d
	}
	working := func(id string) contracts.State {
		t.Helper()
		return waitA2AState(t, ctx, e.c, id, "working")
	}
	agent, err := a2aclient.Dial(ctx, contracts.Interface{URL: e.base + claimsagent.JSONRPCPath, Binding: "JSONRPC", Version: "1.0"}, a2aclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	remote := func(taskID string) contracts.TaskState {
		t.Helper()
		s, err := agent.GetTask(ctx, taskID, "")
		if err != nil {
			t.Fatal(err)
		}
		return s.State
	}

	// Terminated by an operator.
	killed := slow("orphan-terminated")
	if _, err := startRun(ctx, e.c, killed); err != nil {
		t.Fatal(err)
	}
	killedTask := working(killed.LocalWorkflowID).RemoteTaskID
	if err := e.c.TerminateWorkflow(ctx, killed.LocalWorkflowID, "", "an operator's terminate"); err != nil {
		t.Fatal(err)
	}

	// Replaced by a start with TERMINATE_EXISTING.
	replaced := slow("orphan-replaced")
	first, err := startRun(ctx, e.c, replaced)
	if err != nil {
		t.Fatal(err)
	}
	replacedTask := working(replaced.LocalWorkflowID).RemoteTaskID
	second, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: replaced.LocalWorkflowID, TaskQueue: contracts.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING}, contracts.WorkflowType, replaced)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replacing run's own task", time.Minute, func() (bool, string) {
		s, err := dclient.Get(e.c, replaced.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.RemoteTaskID != "" && s.RemoteTaskID != replacedTask, s.A2AState
	})
	if remote(killedTask) != contracts.TaskStateWorking || remote(replacedTask) != contracts.TaskStateWorking {
		t.Fatalf("the orphans' tasks should still work before the sweep")
	}

	// The sweep (visibility follows a little behind: until it lists both).
	var report contracts.ReconcileReport
	byID := map[string]contracts.Orphan{}
	waitFor(t, "the sweep to cancel both orphans", time.Minute, func() (bool, string) {
		var err error
		if _, report, err = dclient.SweepOrphans(ctx, e.c, contracts.ReconcileInput{}); err != nil {
			return false, err.Error()
		}
		for _, o := range report.Orphans {
			// The first sweep that handled a run says what it did; a
			// later one finds its task ended (already_ended).
			if _, seen := byID[o.RunID]; !seen {
				byID[o.RunID] = o
			}
		}
		return byID[first.GetRunID()].Action != "" && len(byID) >= 2, "orphans so far: " + jsonOf(report.Orphans)
	})
	o := byID[first.GetRunID()]
	if o.WorkflowID != replaced.LocalWorkflowID || o.RemoteTaskID != replacedTask || o.Action != contracts.OrphanCanceled || o.Seen != string(contracts.TaskStateCanceled) {
		t.Errorf("replaced run's orphan = %+v, want its task %s canceled", o, replacedTask)
	}
	var k *contracts.Orphan
	for _, x := range byID {
		if x.WorkflowID == killed.LocalWorkflowID {
			k = &x
		}
	}
	if k == nil || k.RemoteTaskID != killedTask || k.Action != contracts.OrphanCanceled {
		t.Errorf("terminated run's orphan = %+v, want its task %s canceled", k, killedTask)
	}
	if remote(killedTask) != contracts.TaskStateCanceled || remote(replacedTask) != contracts.TaskStateCanceled {
		t.Errorf("the orphans' remote tasks are not canceled")
	}
	// The run that replaced one keeps working on its own task.
	s := stateOf(t, ctx, e.c, replaced.LocalWorkflowID)
	if remote(s.RemoteTaskID) != contracts.TaskStateWorking || second.GetRunID() == first.GetRunID() {
		t.Errorf("the replacing run's task = %s, want still working", remote(s.RemoteTaskID))
	}

	// A second sweep finds the tasks ended and cancels nothing again.
	_, again, err := dclient.SweepOrphans(ctx, e.c, contracts.ReconcileInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range again.Orphans {
		if x.Action != contracts.OrphanAlreadyEnded {
			t.Errorf("second sweep: %+v, want already_ended", x)
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A Reset (the Temporal UI's, or ResetWorkflowExecution) of a waiting
// delegation to its first workflow task: Temporal closes the run it resets
// as terminated, and the new run sends round 0 again with the same
// messageId (the agent gives back the same task). The orphan sweep then
// lists the closed run as terminated; the task it tracked is tracked by the
// live run, so the sweep leaves it ("tracked") and the delegation goes on:
// the answer is taken, the claim completes, one task at the agent.
func TestResetThenSweepKeepsTheLiveTask(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := lostParcel("reset-then-sweep", e.base)
	first, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
	// The first workflow task's completion is event 4 (started, scheduled,
	// started, completed).
	resp, err := e.c.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 e.srv.Namespace(),
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: d.LocalWorkflowID, RunId: first.GetRunID()},
		Reason:                    "an operator's reset",
		WorkflowTaskFinishEventId: 4,
		RequestId:                 uuid.NewString(),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reset run to reach the question again", time.Minute, func() (bool, string) {
		s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.A2AState == "input-required" && s.RemoteTaskID == task, s.A2AState + " " + s.RemoteTaskID
	})
	var swept contracts.Orphan
	waitFor(t, "the sweep to list the reset run", time.Minute, func() (bool, string) {
		_, report, err := dclient.SweepOrphans(ctx, e.c, contracts.ReconcileInput{})
		if err != nil {
			return false, err.Error()
		}
		for _, o := range report.Orphans {
			if o.RunID == first.GetRunID() {
				swept = o
				return true, ""
			}
		}
		return false, jsonOf(report.Orphans)
	})
	if swept.Action != contracts.OrphanTracked || !strings.Contains(swept.Error, resp.GetRunId()) {
		t.Errorf("sweep of the reset run = %+v, want tracked by run %s", swept, resp.GetRunId())
	}
	if n, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo"}); err != nil {
		t.Fatalf("answer after the reset and the sweep: round %d, %v", n, err)
	}
	var out contracts.Outcome
	if err := e.c.GetWorkflow(ctx, d.LocalWorkflowID, resp.GetRunId()).Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %s %+v, %v; want completed", out.Status, out.Error, err)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("the agent made %d tasks, want 1", n)
	}
}
