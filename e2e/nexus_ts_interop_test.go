package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-rpc/sdk-go/nexus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/nexusop"
)

// tsNexusExampleDir is the TypeScript Nexus caller example
// (docs/backends.md, "From another namespace: the Nexus operation").
const tsNexusExampleDir = "../examples/typescript-nexus"

// The names examples/typescript-nexus uses: its workflows' types (the
// exported functions of src/workflows.ts) and its worker's task queue.
const (
	tsCallerType        = "delegateClaim"
	tsCallerRefusalType = "delegateClaimRefusal"
	tsCallerQueue       = "callers-ts"
)

// lockedBuffer collects a child process's output from its own goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTSCallerWorker runs examples/typescript-nexus's worker
// (@temporalio/worker, node dist/worker.js) against e's server in namespace
// ns, waits until it says it runs, and stops it with SIGTERM when the test
// ends (it must then exit 0, having shut down cleanly).
func startTSCallerWorker(t *testing.T, e *env, dir, node, ns string) {
	t.Helper()
	cmd := exec.Command(node, filepath.Join("dist", "worker.js"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+e.srv.FrontendAddr(), "TEMPORAL_NAMESPACE="+ns)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	cmd.Stderr = &logs
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["worker"] == "running" {
				running <- m
				continue
			}
			_, _ = logs.Write(append(sc.Bytes(), '\n'))
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stopped := time.Now()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the TypeScript worker after SIGTERM: %v, want exit 0", err)
			} else {
				t.Logf("the TypeScript worker exited 0, %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
			}
		case <-time.After(45 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("the TypeScript worker did not exit within 45 s of SIGTERM (killed)")
		}
		if t.Failed() {
			t.Logf("the TypeScript worker's output:\n%s", logs.String())
		}
	})
	// Worker.create bundles the workflows with webpack first: seconds on
	// an idle machine, more on a busy one.
	select {
	case m := <-running:
		if m["namespace"] != ns || m["task_queue"] != tsCallerQueue {
			t.Fatalf("the TypeScript worker runs %v, want namespace %s, task queue %s", m, ns, tsCallerQueue)
		}
		t.Logf("the TypeScript worker runs after %s", time.Since(began).Round(time.Millisecond))
	case err := <-exited:
		exited <- err
		t.Fatalf("the TypeScript worker exited before it ran: %v\n%s", err, logs.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the TypeScript worker did not run within 3 minutes\n%s", logs.String())
	}
}

// TestInteropNexusTypeScriptCaller runs examples/typescript-nexus (a
// workflow written with @temporalio/workflow 1.24 that calls the Nexus
// operation start-delegation of service delegate through endpoint
// delegate, and its @temporalio/worker, a child process of node) in the
// namespace callers against the embedded server, the claims agent and a
// delegate worker that serves the Nexus service: answered as an operator
// does, the delegation records the TypeScript workflow as its starter and
// completes, and the workflow returns the Outcome; a bad contract reaches
// the workflow as a NexusOperationFailure whose cause is a non-retryable
// HandlerError BAD_REQUEST naming allowed_outputs, and starts nothing; the
// caller's cancel cancels the delegation and its remote task, and the
// workflow returns the Outcome canceled.
func TestInteropNexusTypeScriptCaller(t *testing.T) {
	dir, node := requireCompiledExample(t, tsNexusExampleDir, "@temporalio/worker", "@temporalio/workflow")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e, cc := nexusEnv(t, ctx)
	startTSCallerWorker(t, e, dir, node, nexusCallerNamespace)
	remote := e.remoteStates(t, ctx)
	start := func(t *testing.T, typ, id string, d contracts.Delegation) client.WorkflowRun {
		t.Helper()
		run, err := cc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tsCallerQueue}, typ, d)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	notStarted := func(t *testing.T, id string) {
		t.Helper()
		if _, err := e.c.DescribeWorkflowExecution(ctx, id, ""); err == nil {
			t.Errorf("a delegation %s was started for a bad contract", id)
		}
	}

	t.Run("answered", func(t *testing.T) {
		d := lostParcel("ts-nexus-answered", e.base)
		caller := start(t, tsCallerType, "ts-caller-answered", d)
		waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
		want := "nexus:" + nexusCallerNamespace + "/" + caller.GetID()
		waitListedBy(t, ctx, e, want, d.LocalWorkflowID)
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo of the parcel", AnsweredBy: "ops"}); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := caller.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Status != contracts.StatusCompleted || out.LocalWorkflowID != d.LocalWorkflowID || out.InputRounds != 1 ||
			len(out.Outputs) != 1 || out.Outputs[0].Kind != "claim_opened" {
			t.Errorf("the TypeScript caller's Outcome = %s %+v %+v, want completed with one claim_opened after one round", out.Status, out.Outputs, out.Error)
		}
	})

	t.Run("bad-contract", func(t *testing.T) {
		// As the workflow fails: the refusal, rethrown by the TypeScript
		// workflow, is its failure.
		d := lostParcel("ts-nexus-bad", e.base)
		d.AllowedOutputs = nil
		var out contracts.Outcome
		err := start(t, tsCallerType, "ts-caller-bad", d).Get(ctx, &out)
		var oe *temporal.NexusOperationError
		var he *nexus.HandlerError
		if !errors.As(err, &oe) || !errors.As(err, &he) {
			t.Fatalf("the TypeScript caller: %v, want its failure a Nexus operation error caused by a handler error", err)
		}
		if oe.Endpoint != nexusop.Endpoint || oe.Service != nexusop.Service || oe.Operation != nexusop.Operation {
			t.Errorf("the operation error names %s %s %s, want %s %s %s", oe.Endpoint, oe.Service, oe.Operation, nexusop.Endpoint, nexusop.Service, nexusop.Operation)
		}
		if he.Type != nexus.HandlerErrorTypeBadRequest || he.Retryable() || !strings.Contains(err.Error(), "invalid contract: allowed_outputs") {
			t.Errorf("handler error %s retryable=%v %q; want BAD_REQUEST, not retryable, naming allowed_outputs", he.Type, he.Retryable(), err)
		}
		notStarted(t, d.LocalWorkflowID)

		// As the TypeScript workflow sees it: its classes and fields.
		d.LocalWorkflowID = "ts-nexus-bad-seen"
		var seen struct {
			Error            string `json:"error"`
			Cause            string `json:"cause"`
			HandlerErrorType string `json:"handler_error_type"`
			Retryable        *bool  `json:"retryable"`
			CauseMessage     string `json:"cause_message"`
		}
		if err := start(t, tsCallerRefusalType, "ts-caller-bad-seen", d).Get(ctx, &seen); err != nil {
			t.Fatal(err)
		}
		if seen.Error != "NexusOperationFailure" || seen.Cause != "HandlerError" || seen.HandlerErrorType != "BAD_REQUEST" ||
			seen.Retryable == nil || *seen.Retryable || !strings.HasPrefix(seen.CauseMessage, "invalid contract: allowed_outputs: ") {
			t.Errorf("the TypeScript workflow saw %+v, want a NexusOperationFailure caused by a HandlerError BAD_REQUEST, not retryable, \"invalid contract: allowed_outputs: ...\"", seen)
		}
		notStarted(t, d.LocalWorkflowID)
	})

	t.Run("caller-canceled", func(t *testing.T) {
		d := lostParcel("ts-nexus-canceled", e.base)
		caller := start(t, tsCallerType, "ts-caller-canceled", d)
		cancelCallerOf(t, ctx, e, cc, caller, d, remote)
		// The default cancellationType, WAIT_CANCELLATION_COMPLETED: the
		// call returns the delegation's Outcome.
		var out contracts.Outcome
		if err := caller.Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled || out.LocalWorkflowID != d.LocalWorkflowID {
			t.Errorf("the TypeScript caller: %s %+v, %v; want the Outcome canceled", out.Status, out.Error, err)
		}
	})
}

// The TypeScript caller docs/backends.md shows ("From a TypeScript
// workflow") is examples/typescript-nexus's: each line of its block is a
// line of src/service.ts or src/workflows.ts, and the names service.ts
// declares are nexusop's.
func TestNexusDocQuotesTypeScriptCaller(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	service := read(filepath.Join(tsNexusExampleDir, "src", "service.ts"))
	workflows := read(filepath.Join(tsNexusExampleDir, "src", "workflows.ts"))
	for _, want := range []string{
		"export const ENDPOINT = '" + nexusop.Endpoint + "';",
		"nexus.service('" + nexusop.Service + "', {",
		"nexus.operation<Delegation, Outcome>({ name: '" + nexusop.Operation + "' })",
	} {
		if !strings.Contains(service, want) {
			t.Errorf("examples/typescript-nexus/src/service.ts lacks %q (nexusop's names)", want)
		}
	}
	for _, want := range []string{"export async function " + tsCallerType + "(", "export async function " + tsCallerRefusalType + "("} {
		if !strings.Contains(workflows, want) {
			t.Errorf("examples/typescript-nexus/src/workflows.ts lacks %q (the workflow types the e2e test starts)", want)
		}
	}
	if !strings.Contains(read(filepath.Join(tsNexusExampleDir, "src", "worker.ts")), "export const TASK_QUEUE = '"+tsCallerQueue+"';") {
		t.Errorf("examples/typescript-nexus/src/worker.ts: its task queue is not %s", tsCallerQueue)
	}

	_, body, ok := strings.Cut(read("../docs/backends.md"), "\n#### From a TypeScript workflow\n")
	if !ok {
		t.Fatal("docs/backends.md has no section \"From a TypeScript workflow\"")
	}
	_, block, ok := strings.Cut(body, "\n```ts\n")
	block, _, ok2 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/backends.md, From a TypeScript workflow: no ts block")
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(service+"\n"+workflows, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	n := 0
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			n++
			if !lines[l] {
				t.Errorf("docs/backends.md, From a TypeScript workflow: %q is not a line of examples/typescript-nexus/src/service.ts or workflows.ts", l)
			}
		}
	}
	if n < 10 {
		t.Errorf("docs/backends.md, From a TypeScript workflow: its block has %d lines, want the service and the caller", n)
	}
}
