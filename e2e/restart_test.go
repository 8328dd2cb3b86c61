package e2e

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/workflows"
)

// TestRestartOnSameDBCarriesOn stops the embedded server (and its worker)
// while a delegation waits for input, starts a new one on the same SQLite
// file, and finishes the delegation there.
func TestRestartOnSameDBCarriesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := filepath.Join(t.TempDir(), "temporal.db")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	agent := claimsagent.New(claimsagent.Config{BaseURL: base})
	go func() { _ = agent.Serve(ctx, ln) }()

	port := 0
	up := func() (*devserver.Server, client.Client, worker.Worker) {
		srv, err := devserver.Start(ctx, devserver.Config{DBPath: db, Port: port, UIPort: -1, SearchAttributes: contracts.SearchAttributeNames, LogLevel: "fatal"})
		if err != nil {
			t.Fatalf("devserver.Start(%s) error = %v", db, err)
		}
		_, p, _ := net.SplitHostPort(srv.FrontendAddr())
		port, _ = strconv.Atoi(p)
		c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()})
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, contracts.TaskQueue, worker.Options{})
		workflows.RegisterWorkflows(w, workflows.Options{})
		activities.Register(w, &activities.Activities{PollInitial: 50 * time.Millisecond, PollMax: 500 * time.Millisecond})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return srv, c, w
	}

	srv, c, w := up()
	d := lostParcel("restart-1", base)
	if _, err := startRun(ctx, c, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "input-required", 60*time.Second, func() (bool, string) {
		s, err := dclient.Get(c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.Question != nil, s.A2AState
	})
	w.Stop()
	c.Close()
	srv.Stop()

	t0 := time.Now()
	srv, c, w = up()
	t.Logf("restart took %s", time.Since(t0))
	defer srv.Stop()
	defer c.Close()
	defer w.Stop()
	if _, err := dclient.Get(c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo", AnsweredBy: "e2e"}); err != nil {
		t.Fatalf("Answer() after restart error = %v", err)
	}
	t.Logf("answer accepted after %s", time.Since(t0))
	var out contracts.Outcome
	defer func() { t.Logf("completed after %s", time.Since(t0)) }()
	if err := c.GetWorkflow(ctx, d.LocalWorkflowID, "").Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 || out.InputRounds != 1 {
		t.Fatalf("outcome after restart = %+v", out)
	}
	if agent.TaskCount() != 1 {
		t.Errorf("agent task count = %d, want 1", agent.TaskCount())
	}
}
