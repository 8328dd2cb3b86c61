package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/internal/testcerts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// workerProc is one `delegate worker` process.
type workerProc struct {
	cmd *exec.Cmd
	log *os.File
}

// TestPostgresProductionPath runs delegate as it runs in production: a
// Temporal server on PostgreSQL whose frontend takes mutual TLS only, and
// two separate `delegate worker` processes connected to it by mTLS. Against
// it: the lost-parcel delegation through one input round; 50 instant
// delegations while one worker is killed with SIGKILL mid-flight, every one
// completing exactly once (the agent's task and message counts); and the
// visibility query A2AState = "input-required" answered by PostgreSQL.
func TestPostgresProductionPath(t *testing.T) {
	base := testutil.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()

	bin := filepath.Join(dir, "delegate")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/a2adelegate/delegate/cmd/delegate").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs, err := testcerts.Make(dir)
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSuffix(base, "/temporal") + fmt.Sprintf("/prod_%d", time.Now().UnixNano())
	srv, err := devserver.Start(ctx, devserver.Config{Postgres: url, UIPort: -1, LogLevel: "fatal",
		SearchAttributes: contracts.SearchAttributeNames, TLS: &devserver.TLS{
			CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, RequireClientAuth: true,
			ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey,
		}})
	if err != nil {
		t.Fatalf("Temporal on PostgreSQL with mTLS: %v", err)
	}
	defer srv.Stop()
	opts, err := srv.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	agentURL := "http://" + ln.Addr().String()
	agent := claimsagent.New(claimsagent.Config{BaseURL: agentURL, WorkDelay: 300 * time.Millisecond})
	go func() { _ = agent.Serve(ctx, ln) }()

	startWorker := func(name string) *workerProc {
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "worker", "--address", srv.FrontendAddr(), "--namespace", srv.Namespace(),
			"--tls-cert-path", certs.ClientCert, "--tls-key-path", certs.ClientKey, "--tls-ca-path", certs.CA,
			"--tls-server-name", "localhost", "--poll-initial", "100ms", "--poll-max", "1s")
		cmd.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE="+testutil.EmptyFile(t))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w := &workerProc{cmd: cmd, log: logf}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			_ = logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("--- %s log (tail) ---\n%s", name, tail(string(b), 3000))
			}
		})
		return w
	}
	workerA := startWorker("worker-a")
	startWorker("worker-b")

	// The lost-parcel delegation through one input round, found waiting
	// by PostgreSQL's visibility store.
	lp := lostParcel("pg-lost-parcel", agentURL)
	run, err := startRun(ctx, c, lp)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "visibility A2AState = input-required", 2*time.Minute, func() (bool, string) {
		resp, err := c.ListWorkflow(ctx, listRequest(srv.Namespace(), `A2AState = "input-required"`))
		if err != nil {
			return false, err.Error()
		}
		for _, ex := range resp.Executions {
			if ex.Execution.WorkflowId == lp.LocalWorkflowID {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d executions", len(resp.Executions))
	})
	if _, err := dclient.Get(c, lp.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached", AnsweredBy: "pg"}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted || out.InputRounds != 1 {
		t.Fatalf("lost-parcel outcome = %+v, %v; want completed after one round", out, err)
	}

	// 50 instant delegations; worker A is killed while they run.
	const n = 50
	runs := make([]client.WorkflowRun, n)
	for i := range n {
		d := lostParcel(fmt.Sprintf("pg-instant-%d", i), agentURL)
		d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"instant"}`)
		if runs[i], err = startRun(ctx, c, d); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "some delegations sent", time.Minute, func() (bool, string) {
		return agent.TaskCount() >= 10, fmt.Sprintf("%d tasks", agent.TaskCount())
	})
	if err := workerA.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	statuses := make([]string, n)
	for i := range n {
		wg.Go(func() {
			var o contracts.Outcome
			if err := runs[i].Get(ctx, &o); err != nil {
				statuses[i] = err.Error()
				return
			}
			statuses[i] = string(o.Status)
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != string(contracts.StatusCompleted) {
			t.Errorf("pg-instant-%d: %s, want completed", i, s)
		}
	}
	// Exactly once: one remote task per delegation (and the lost parcel's),
	// whatever was resent after the kill.
	if got, want := agent.TaskCount(), n+1; got != want {
		t.Errorf("agent tasks = %d, want %d: a delegation was lost or duplicated", got, want)
	}
	if got, want := agent.MessageCount(), n+2; got != want {
		t.Errorf("agent messages = %d, want %d (one per delegation, plus the answer)", got, want)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
