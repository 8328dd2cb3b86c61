package bench

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// childWorkerEnv makes the test binary the waiting measurement's worker
// process: WorkerCommand is the test binary itself, and the bench appends
// "--address ADDR --debug-addr ... --poll-initial ...".
const childWorkerEnv = "DELEGATE_BENCH_CHILD_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(childWorkerEnv) == "1" {
		runChildWorker()
		return
	}
	os.Exit(m.Run())
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
	workflows.Register(w, &activities.Activities{PollInitial: 20 * time.Millisecond, PollMax: time.Second, Logger: quiet}, workflows.Options{})
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
				if !strings.Contains(w.Skipped, "context canceled") {
					t.Errorf("waiting measurement: %+v, want it skipped as canceled", w)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after the interrupt:\n%s", p.buf.String())
			}
		})
	}
}
