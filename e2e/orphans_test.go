package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
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
			byID[o.RunID] = o
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
