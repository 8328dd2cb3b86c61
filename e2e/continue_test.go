package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// TestContinueAsNewCarriesTheState lowers the history threshold so that
// the delegation continues as new between watches; the state (remote task,
// question, rounds) goes with it and the delegation completes.
func TestContinueAsNewCarriesTheState(t *testing.T) {
	e := setup(t, func(o *options) {
		// The chain needs a watch (a run continues as new only after it
		// watched once): the agent works long enough that the first
		// send's reply is still "working" on a loaded machine. With
		// 200 ms the test failed once under parallel builds
		// ("continued 0 times"), presumably a reply that was already
		// input-required.
		o.agent.WorkDelay = 2 * time.Second
		o.workflows.ContinueAsNewEvents = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("continued-1", e.base)
	out := e.answeredOnce(t, ctx, d)
	s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
	if s.ContinuedAsNew < 1 || s.RemoteTaskID != out.RemoteTaskID {
		t.Errorf("state after the chain: continued %d times, task %s", s.ContinuedAsNew, s.RemoteTaskID)
	}
	if e.agent.TaskCount() != 1 {
		t.Errorf("task count = %d", e.agent.TaskCount())
	}
	// The list shows the delegation once, as it ended: the runs that
	// continued as new showed too, each with the state it handed over.
	waitFor(t, "the list to show the delegation once", 10*time.Second, func() (bool, string) {
		rows, err := dclient.List(ctx, e.c, dclient.ListOptions{Namespace: e.srv.Namespace()})
		if err != nil {
			return false, err.Error()
		}
		var mine []dclient.Listed
		for _, r := range rows {
			if r.ID == d.LocalWorkflowID {
				mine = append(mine, r)
			}
		}
		return len(mine) == 1 && mine[0].Status == "completed", fmt.Sprintf("%+v", mine)
	})
}

// TestReconcileDelegations runs the workflow a reconcile Schedule starts:
// it finds the open delegation and signals it; the delegation reads its
// remote task once and records what it saw.
func TestReconcileDelegations(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("reconcile-1", e.base)
	if _, err := startRun(ctx, e.c, d); err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	var report contracts.ReconcileReport
	waitFor(t, "visibility to list the delegation", 30*time.Second, func() (bool, string) {
		run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: contracts.TaskQueue},
			contracts.ReconcileWorkflowType, contracts.ReconcileInput{Namespace: e.srv.Namespace(), State: "input-required"})
		if err != nil {
			return false, err.Error()
		}
		if err := run.Get(ctx, &report); err != nil {
			return false, err.Error()
		}
		ids := report.Signaled
		return len(ids) == 1 && ids[0] == d.LocalWorkflowID && len(report.Orphans) == 0, fmt.Sprint(report)
	})
	waitFor(t, "a reconciliation", 30*time.Second, func() (bool, string) {
		s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
		if len(s.Reconciliations) == 0 {
			return false, "none"
		}
		r := s.Reconciliations[len(s.Reconciliations)-1]
		return r.Seen == "input-required" && !r.Changed && r.Error == "", fmt.Sprintf("%+v", r)
	})
}
