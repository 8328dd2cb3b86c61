package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/child"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// childParent is a backend workflow that delegates through package child
// with its defaults, and returns the typed Outcome.
func childParent(ctx workflow.Context, d contracts.Delegation) (contracts.Outcome, error) {
	return child.ExecuteDelegation(ctx, d, child.Options{})
}

const childParentType = "ChildParent"

// A backend workflow, on its own worker and task queue, delegates with
// child.ExecuteDelegation: the delegation is its child (id local_workflow_id, task queue delegate,
// parent close policy REQUEST_CANCEL, started by the parent), answered
// from outside it completes and the parent gets the typed Outcome; a
// parent canceled gets the Outcome canceled, its remote task canceled; a
// parent terminated leaves no orphan: the delegation cancels its own
// remote task; a contract the workflow refuses reaches the parent as the
// workflow's own refusal.
func TestChildDelegation(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The backend's own worker, on its own task queue.
	const backendQueue = "child-backend"
	bw := worker.New(e.c, backendQueue, worker.Options{})
	bw.RegisterWorkflowWithOptions(childParent, workflow.RegisterOptions{Name: childParentType})
	if err := bw.Start(); err != nil {
		t.Fatal(err)
	}
	defer bw.Stop()
	remote := e.remoteStates(t, ctx)
	start := func(t *testing.T, name string) (client.WorkflowRun, contracts.Delegation, string) {
		t.Helper()
		d := lostParcel("child-"+name, e.base)
		parent, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parent-" + name, TaskQueue: backendQueue}, childParentType, d)
		if err != nil {
			t.Fatal(err)
		}
		task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
		return parent, d, task
	}

	t.Run("answered", func(t *testing.T) {
		parent, d, _ := start(t, "answered")
		desc, err := e.c.DescribeWorkflowExecution(ctx, d.LocalWorkflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		info := desc.GetWorkflowExecutionInfo()
		if p := info.GetParentExecution().GetWorkflowId(); p != parent.GetID() {
			t.Errorf("parent = %q, want %s", p, parent.GetID())
		}
		if tq := info.GetTaskQueue(); tq != contracts.TaskQueue {
			t.Errorf("task queue = %q, want %s", tq, contracts.TaskQueue)
		}
		if pc := desc.GetPendingChildren(); len(pc) != 0 {
			t.Errorf("the delegation has pending children %v", pc)
		}
		waitListedBy(t, ctx, e, "workflow:default/"+parent.GetID(), d.LocalWorkflowID)
		pdesc, err := e.c.DescribeWorkflowExecution(ctx, parent.GetID(), "")
		if err != nil {
			t.Fatal(err)
		}
		if pc := pdesc.GetPendingChildren(); len(pc) != 1 || pc[0].GetParentClosePolicy() != enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL {
			t.Errorf("the parent's pending children = %v, want the delegation with REQUEST_CANCEL", pc)
		}
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo of the parcel", AnsweredBy: "ops"}); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := parent.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Status != contracts.StatusCompleted || len(out.Outputs) == 0 || out.LocalWorkflowID != d.LocalWorkflowID {
			t.Errorf("the parent's Outcome = %s %+v %+v, want completed with outputs", out.Status, out.Outputs, out.Error)
		}
	})

	t.Run("parent-canceled", func(t *testing.T) {
		parent, _, task := start(t, "canceled")
		if err := e.c.CancelWorkflow(ctx, parent.GetID(), ""); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := parent.Get(ctx, &out); err != nil {
			t.Fatalf("the parent: %v, want the Outcome of its canceled delegation", err)
		}
		if out.Status != contracts.StatusCanceled {
			t.Errorf("the parent's Outcome = %s %+v, want canceled", out.Status, out.Error)
		}
		if s := remote(task); s != contracts.TaskStateCanceled {
			t.Errorf("the remote task: %s, want canceled", s)
		}
	})

	t.Run("refused-contract", func(t *testing.T) {
		d := lostParcel("child-refused", e.base)
		d.Skill = ""
		parent, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parent-refused", TaskQueue: backendQueue}, childParentType, d)
		if err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		err = parent.Get(ctx, &out)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeInvalidContract || !strings.Contains(appErr.Message(), "skill") {
			t.Errorf("the parent: %v, want the workflow's own refusal (%s) naming skill", err, workflows.ErrTypeInvalidContract)
		}
	})

	t.Run("parent-terminated", func(t *testing.T) {
		parent, d, task := start(t, "terminated")
		if err := e.c.TerminateWorkflow(ctx, parent.GetID(), "", "an operator's terminate of the parent"); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := e.c.GetWorkflow(ctx, d.LocalWorkflowID, "").Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled {
			t.Fatalf("the delegation's Outcome = %s %+v, %v; want canceled (REQUEST_CANCEL)", out.Status, out.Error, err)
		}
		if s := remote(task); s != contracts.TaskStateCanceled {
			t.Errorf("the remote task: %s, want canceled by the delegation itself", s)
		}
	})
}

// waitListedBy waits (visibility records a start a little after it) until
// the delegations whose DelegationStarter is starter are id alone.
func waitListedBy(t *testing.T, ctx context.Context, e *env, starter, id string) {
	t.Helper()
	waitFor(t, "the delegation listed under its starter "+starter, time.Minute, func() (bool, string) {
		l, err := dclient.List(ctx, e.c, dclient.ListOptions{Starter: starter})
		if err != nil {
			return false, err.Error()
		}
		return len(l) == 1 && l[0].ID == id, fmt.Sprintf("%+v", l)
	})
}
