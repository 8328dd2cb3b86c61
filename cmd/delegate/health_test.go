package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/internal/testutil"
	"github.com/a2adelegate/delegate/internal/workeropts"
)

// The health endpoint follows the worker's polls: not started, starting
// (first poll in flight), polling, stale, stopped.
func TestPollHealthStates(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	h := newPollHealth()
	h.now = func() time.Time { return now }
	poll := h.wrap(nil).WithTags(map[string]string{"task_queue": contracts.TaskQueue})
	want := func(step string, code int, text string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, healthPath, nil))
		if rec.Code != code || !strings.Contains(rec.Body.String(), text) {
			t.Errorf("%s: %d %q; want %d with %q", step, rec.Code, rec.Body.String(), code, text)
		}
	}
	want("before the worker starts", 503, "worker not started")
	h.started.Store(now.UnixNano())
	now = t0.Add(time.Minute)
	want("first poll in flight", 200, "first poll in flight")
	now = t0.Add(pollMaxAge + time.Second)
	want("no poll completed", 503, "no poll of task queue \"delegate\" completed since the worker started 2m1s ago")
	// Other counters do not count as polls.
	poll.Counter("temporal_long_request").Inc(1)
	poll.Counter("temporal_activity_poll_no_task").Inc(1)
	want("other counters", 503, "no poll")
	poll.Counter("temporal_workflow_task_queue_poll_empty").Inc(1)
	now = now.Add(30 * time.Second)
	want("empty poll 30s ago", 200, "last poll completed 30s ago")
	now = now.Add(pollMaxAge)
	want("stale", 503, "the last poll of task queue \"delegate\" completed 2m30s ago")
	poll.Counter("temporal_workflow_task_queue_poll_succeed").Inc(1)
	want("a task polled", 200, "last poll completed 0s ago")
	h.started.Store(-1)
	want("stopped", 503, "worker stopped")

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, healthPath, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/vars", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("another path: %d, want 404", rec.Code)
	}
}

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		":8236":          "http://127.0.0.1:8236/healthz",
		"0.0.0.0:8236":   "http://127.0.0.1:8236/healthz",
		"[::]:8236":      "http://[::1]:8236/healthz",
		"10.0.0.7:8236":  "http://10.0.0.7:8236/healthz",
		"localhost:9000": "http://localhost:9000/healthz",
	} {
		if got, err := healthURL(addr); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	wantExit(t, exitUsage, []string{"--addr", "missing port"}, "health", "--addr", "nohost")
	wantExit(t, exitUsage, []string{"--address", "does not connect to a Temporal server"}, "health", "--addr", ":1", "--address", "127.0.0.1:7233")
}

// `delegate health` against a real worker on the embedded server: exit 1
// before the worker listens, 0 once it polls, and the SDK's poll counters
// reach the endpoint (a workflow task polled shows as a completed poll);
// exit 1 again once the worker stopped.
func TestWorkerHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Config{Memory: true, UIPort: -1, LogLevel: "fatal", SearchAttributes: contracts.SearchAttributeNames})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	t.Setenv("TEMPORAL_CONFIG_FILE", writeFile(t, "empty.toml", ""))
	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	wantExit(t, exitNotComplete, []string{"unhealthy", "connection refused"}, "health", "--addr", addr)

	wctx, wcancel := context.WithCancel(ctx)
	var wout testutil.LockedBuffer
	wdone := make(chan int, 1)
	go func() {
		wdone <- run(wctx, []string{"worker", "--address", srv.FrontendAddr(), "--health-addr", addr}, &wout, &wout)
	}()
	stopped := false
	defer func() {
		if !stopped {
			wcancel()
			<-wdone
		}
	}()
	until := func(what string, ok func(stdout string, code int) bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			stdout, stderr, code := cli(t, "health", "--addr", addr, "--timeout", "2s")
			if ok(stdout, code) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute; last: exit %d, %q %q; worker: %s", what, code, stdout, stderr, wout.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	until("healthy", func(out string, code int) bool {
		return code == exitOK && strings.Contains(out, "healthy: polling task queue \"delegate\"")
	})

	// A workflow task for the worker: its poll completes with a task.
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "health-probe", TaskQueue: contracts.TaskQueue, WorkflowRunTimeout: time.Minute}, "NoSuchWorkflow"); err != nil {
		t.Fatal(err)
	}
	until("a completed poll", func(out string, code int) bool { return code == exitOK && strings.Contains(out, "last poll completed") })

	wcancel()
	if code := <-wdone; code != exitOK {
		t.Errorf("worker: exit %d: %s", code, wout.String())
	}
	stopped = true
	wantExit(t, exitNotComplete, []string{"unhealthy"}, "health", "--addr", addr)
}

// A worker on a namespace that lacks a search attribute the workflow sets
// does not start (each delegation's workflow task would fail on the
// server's refusal of the upsert): exit 2, naming the attribute and the
// command that registers it.
func TestWorkerRefusesANamespaceWithoutItsSearchAttributes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := slices.DeleteFunc(slices.Clone(contracts.SearchAttributeNames), func(n string) bool { return n == contracts.SearchAttributeDelegationCodeVersion })
	srv, err := devserver.Start(ctx, devserver.Config{Memory: true, UIPort: -1, LogLevel: "fatal", SearchAttributes: names})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	t.Setenv("TEMPORAL_CONFIG_FILE", writeFile(t, "empty.toml", ""))
	wantExit(t, exitUsage, []string{`namespace "default" lacks the Keyword search attribute(s) DelegationCodeVersion`,
		"temporal operator search-attribute create --namespace default --name DelegationCodeVersion --type Keyword"},
		"worker", "--address", srv.FrontendAddr())
}

// The worker process delegate bench starts registers the bench's trivial
// workflow with the hidden --bench-trivial (so the bench counts its CPU
// apart from the server's); --help does not show the flag.
func TestWorkerBenchTrivial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Config{Memory: true, UIPort: -1, LogLevel: "fatal", SearchAttributes: contracts.SearchAttributeNames})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	t.Setenv("TEMPORAL_CONFIG_FILE", writeFile(t, "empty.toml", ""))
	if out, _, _ := cli(t, "worker", "--help"); strings.Contains(out, "bench-trivial") {
		t.Errorf("worker --help shows the hidden --bench-trivial:\n%s", out)
	}
	wctx, wcancel := context.WithCancel(ctx)
	var wout testutil.LockedBuffer
	wdone := make(chan int, 1)
	go func() {
		wdone <- run(wctx, []string{"worker", "--address", srv.FrontendAddr(), "--bench-trivial"}, &wout, &wout)
	}()
	defer func() { wcancel(); <-wdone }()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	run, err := c.ExecuteWorkflow(rctx, client.StartWorkflowOptions{ID: "bench-trivial-probe", TaskQueue: contracts.TaskQueue}, workeropts.TrivialWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(rctx, nil); err != nil {
		t.Fatalf("%s on delegate worker --bench-trivial: %v; worker: %s", workeropts.TrivialWorkflow, err, wout.String())
	}
}
