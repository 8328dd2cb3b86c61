package e2e

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexus-rpc/sdk-go/nexus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/nexusop"
)

// nexusCaller is a workflow in another namespace that delegates through
// the Nexus endpoint "delegate" and returns the Outcome; a cancel of it
// cancels the operation and waits for the delegation's end. Its body is
// docs/backends.md's (TestNexusDocQuotesCaller).
func nexusCaller(ctx workflow.Context, d contracts.Delegation) (contracts.Outcome, error) {
	c := workflow.NewNexusClient("delegate", "delegate") // endpoint, service (nexusop.Endpoint, nexusop.Service)
	f := c.ExecuteOperation(ctx, "start-delegation", d, workflow.NexusOperationOptions{})
	// A cancel of the caller cancels the operation; read in a disconnected context to get the
	// delegation's Outcome (canceled) once it has canceled its remote task.
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var out contracts.Outcome
	err := f.Get(dctx, &out) // a *temporal.NexusOperationError: refused (BAD_REQUEST), terminated, timed out
	return out, err
}

// The names the doc's caller spells out are nexusop's, and each line of
// the doc's caller but its first is a line of nexusCaller.
func TestNexusDocQuotesCaller(t *testing.T) {
	if nexusop.Endpoint != "delegate" || nexusop.Service != "delegate" || nexusop.Operation != "start-delegation" {
		t.Errorf("nexusop's names %q %q %q: update docs/backends.md and nexusCaller", nexusop.Endpoint, nexusop.Service, nexusop.Operation)
	}
	doc, err := os.ReadFile("../docs/backends.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("nexus_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(doc), "\n### From another namespace: the Nexus operation\n")
	if !ok {
		t.Fatal("docs/backends.md has no section \"From another namespace: the Nexus operation\"")
	}
	_, block, ok := strings.Cut(body, "\n```go\n")
	block, _, ok2 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/backends.md, From another namespace: no Go block")
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for i, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); i > 0 && l != "" && !lines[l] {
			t.Errorf("docs/backends.md, From another namespace: %q is not a line of nexusCaller", l)
		}
	}
}

const (
	nexusCallerType      = "NexusCaller"
	nexusCallerNamespace = "callers"
	nexusCallerQueue     = "callers"
)

// A workflow in another namespace delegates through the Nexus endpoint
// "delegate" (service delegate, operation start-delegation): the
// delegation is the Delegation workflow in delegate's namespace (id
// local_workflow_id, DelegationStarter nexus:<namespace>/<caller>),
// answered through package client it completes and the caller gets the
// Outcome; the caller's cancel cancels the operation, the delegation and
// its remote task, and it gets the Outcome canceled; a terminated caller
// leaves the delegation running; a bad contract is a non-retryable
// handler error naming the field and its rule, and starts nothing.
func TestNexusDelegation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e, cc := nexusEnv(t, ctx)
	w := worker.New(cc, nexusCallerQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(nexusCaller, workflow.RegisterOptions{Name: nexusCallerType})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	remote := e.remoteStates(t, ctx)
	start := func(t *testing.T, name string, d contracts.Delegation) client.WorkflowRun {
		t.Helper()
		run, err := cc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "caller-" + name, TaskQueue: nexusCallerQueue}, nexusCallerType, d)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}

	t.Run("answered", func(t *testing.T) {
		d := lostParcel("nexus-answered", e.base)
		caller := start(t, "answered", d)
		waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
		desc, err := e.c.DescribeWorkflowExecution(ctx, d.LocalWorkflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		if tq := desc.GetWorkflowExecutionInfo().GetTaskQueue(); tq != contracts.TaskQueue {
			t.Errorf("task queue = %q, want %s", tq, contracts.TaskQueue)
		}
		want := "nexus:" + nexusCallerNamespace + "/" + caller.GetID()
		waitListedBy(t, ctx, e, want, d.LocalWorkflowID)
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo of the parcel", AnsweredBy: "ops"}); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := caller.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Status != contracts.StatusCompleted || len(out.Outputs) == 0 || out.LocalWorkflowID != d.LocalWorkflowID {
			t.Errorf("the caller's Outcome = %s %+v %+v, want completed with outputs", out.Status, out.Outputs, out.Error)
		}
	})

	t.Run("caller-canceled", func(t *testing.T) {
		d := lostParcel("nexus-canceled", e.base)
		caller := start(t, "canceled", d)
		cancelCallerOf(t, ctx, e, cc, caller, d, remote)
		// The operation's cancel waits for its end (the default
		// cancellation type, WAIT_COMPLETED): the caller gets the
		// delegation's Outcome.
		var out contracts.Outcome
		if err := caller.Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled || out.LocalWorkflowID != d.LocalWorkflowID {
			t.Errorf("the caller: %s %+v, %v; want the Outcome canceled", out.Status, out.Error, err)
		}
	})

	// Unlike a child (parent close policy), an operation outlives its
	// caller: a terminated caller leaves the delegation running, to be
	// answered or canceled through package client.
	t.Run("caller-terminated", func(t *testing.T) {
		d := lostParcel("nexus-terminated", e.base)
		caller := start(t, "terminated", d)
		waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
		if err := cc.TerminateWorkflow(ctx, caller.GetID(), "", "an operator's terminate of the caller"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		h := dclient.Get(e.c, d.LocalWorkflowID)
		if s, err := h.WorkflowStatus(ctx); err != nil || s != "running" {
			t.Errorf("the delegation after its caller's terminate: %q, %v; want running", s, err)
		}
		if err := h.Cancel(ctx, "the test is over"); err != nil {
			t.Fatal(err)
		}
		if out, err := h.Outcome(ctx); err != nil || out.Status != contracts.StatusCanceled {
			t.Errorf("the delegation's Outcome = %s, %v; want canceled", out.Status, err)
		}
	})

	t.Run("bad-contract", func(t *testing.T) {
		d := lostParcel("nexus-bad", e.base)
		d.AllowedOutputs = nil
		caller := start(t, "bad", d)
		var out contracts.Outcome
		err := caller.Get(ctx, &out)
		var he *nexus.HandlerError
		if !errors.As(err, &he) {
			t.Fatalf("the caller: %v, want a Nexus handler error", err)
		}
		if he.Type != nexus.HandlerErrorTypeBadRequest || he.Retryable() || !strings.Contains(err.Error(), "allowed_outputs") {
			t.Errorf("handler error %s retryable=%v %q; want BAD_REQUEST, not retryable, naming allowed_outputs", he.Type, he.Retryable(), err)
		}
		if _, err := e.c.DescribeWorkflowExecution(ctx, d.LocalWorkflowID, ""); err == nil {
			t.Errorf("a delegation %s was started for a bad contract", d.LocalWorkflowID)
		}
	})
}

// nexusEnv is setup with the Nexus service registered on the delegate
// worker, the endpoint delegate targeting its namespace and task queue,
// and namespace callers with a client of it (closed with the test).
func nexusEnv(t *testing.T, ctx context.Context) (*env, client.Client) {
	t.Helper()
	e := setup(t, func(o *options) {
		o.register = func(w worker.Worker) {
			if err := nexusop.Register(w); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err := e.srv.EnsureNexusEndpoint(ctx, nexusop.Endpoint, e.srv.Namespace(), contracts.TaskQueue); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.EnsureNamespace(ctx, nexusCallerNamespace); err != nil {
		t.Fatal(err)
	}
	cc, err := client.Dial(client.Options{HostPort: e.srv.FrontendAddr(), Namespace: nexusCallerNamespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Close)
	return e, cc
}

// cancelCallerOf cancels caller (a workflow of namespace callers waiting
// on d through Nexus) once d waits in input-required, and checks that the
// delegation ends canceled (client.Await: the server can miss a close
// notification) with its remote task.
func cancelCallerOf(t *testing.T, ctx context.Context, e *env, cc client.Client, caller client.WorkflowRun, d contracts.Delegation, remote func(string) contracts.TaskState) {
	t.Helper()
	task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
	if err := cc.CancelWorkflow(ctx, caller.GetID(), ""); err != nil {
		t.Fatal(err)
	}
	dout, err := dclient.Get(e.c, d.LocalWorkflowID).Outcome(ctx)
	if err != nil || dout.Status != contracts.StatusCanceled {
		t.Fatalf("the delegation's Outcome = %s %+v, %v; want canceled", dout.Status, dout.Error, err)
	}
	if s := remote(task); s != contracts.TaskStateCanceled {
		t.Errorf("the remote task: %s, want canceled", s)
	}
}
