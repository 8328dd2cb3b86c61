package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/workeropts"
	"github.com/a2adelegate/delegate/workflows"
)

// childWorkerEnv makes the test binary the bench's worker process (of the
// measurements, then of the waiting one): WorkerCommand is the test
// binary itself, and the bench appends "--address ADDR --debug-addr ...
// --poll-initial ..." (and --bench-trivial for the measurements).
const childWorkerEnv = "BENCH_TEST_CHILD_WORKER"

// parentEnv makes the test binary a parent that starts one child the way
// the bench does (child), prints its pid, and waits to be killed.
const parentEnv = "BENCH_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(childWorkerEnv) == "1" {
		runChildWorker()
		return
	}
	if os.Getenv(parentEnv) == "1" {
		cmd := exec.Command("sleep", "300")
		child(cmd)
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		fmt.Println(cmd.Process.Pid, strings.Join(cmd.Env, " "))
		_ = cmd.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The processes the bench starts get neither delegate's nor Temporal's
// variables (they would change what is measured) and die with the bench,
// even one killed with SIGKILL: a killed bench left its claims agent
// running.
func TestChildProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal: Linux only")
	}
	t.Setenv(parentEnv, "1")
	t.Setenv("TEMPORAL_NAMESPACE", "elsewhere")
	t.Setenv("DELEGATE_POLICY", "/tmp/policy.json")
	parent := exec.Command(os.Args[0])
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pidText, env, _ := strings.Cut(strings.TrimSpace(line), " ")
	if strings.Contains(env, "TEMPORAL_NAMESPACE") || strings.Contains(env, "DELEGATE_POLICY") {
		t.Errorf("the child's environment has the bench's connection settings: %s", env)
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatalf("pid %q: %v", pidText, err)
	}
	_ = parent.Process.Kill() // SIGKILL: no handler runs
	_ = parent.Wait()
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still running 10 s after its parent was killed", pid)
		}
	}
}

func runChildWorker() {
	i := slices.Index(os.Args, "--address")
	if i < 0 || i+1 >= len(os.Args) {
		os.Exit(2)
	}
	quiet := slog.New(slog.DiscardHandler)
	c, err := client.Dial(client.Options{HostPort: os.Args[i+1], Namespace: "default", Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		os.Exit(3)
	}
	w := worker.New(c, contracts.TaskQueue, worker.Options{})
	workflows.RegisterWorkflows(w, workflows.Options{})
	activities.Register(w, &activities.Activities{PollInitial: 20 * time.Millisecond, PollMax: time.Second, Logger: quiet})
	if slices.Contains(os.Args, "--bench-trivial") { // the measurements' worker, as `delegate worker --bench-trivial`
		workeropts.RegisterTrivial(w)
	}
	_ = w.Run(worker.InterruptCh())
	os.Exit(0)
}

// progress hands each line the bench says to a test, and closes reached
// once a line contains want.
type progress struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	want    string
	reached chan struct{}
	once    sync.Once
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	if strings.Contains(p.buf.String(), p.want) {
		p.once.Do(func() { close(p.reached) })
	}
	return len(b), nil
}

// An interrupted bench (SIGTERM or SIGINT cancel its context) stops at
// once in every step of the waiting measurement: before, the parking went
// on retrying every start for seconds and each wait ran to its deadline
// (up to 10 minutes), so a TERM'd scale run had to be killed.
func TestWaitingStopsWhenInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server, a worker process and parks delegations")
	}
	t.Setenv(childWorkerEnv, "1")
	for _, step := range []string{"answers with 10 waiting", "parking"} {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &progress{want: step, reached: make(chan struct{})}
			type result struct {
				res *Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := Run(ctx, Config{N: 2, Concurrency: 1, Latency: 1, Waiting: 100000, Only: "embedded",
					WorkerCommand: []string{os.Args[0]}, Progress: p})
				done <- result{res, err}
			}()
			select {
			case <-p.reached:
			case r := <-done:
				t.Fatalf("the bench ended before %q: %v\n%s", step, r.err, p.buf.String())
			case <-time.After(5 * time.Minute):
				t.Fatalf("no %q within 5 minutes:\n%s", step, p.buf.String())
			}
			cancel()
			// The bench's own waits are 30 s to 10 minutes; interrupted, it
			// ends well within the shortest of them.
			select {
			case r := <-done:
				w := r.res.Servers["embedded"].Waiting
				if w.Skipped != "interrupted" {
					t.Errorf("waiting measurement: %+v, want it skipped as canceled", w)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after the interrupt:\n%s", p.buf.String())
			}
		})
	}
}
