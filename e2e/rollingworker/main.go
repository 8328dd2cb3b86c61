// Command rollingworker is the worker of the rolling-deploy test
// (e2e/rolling_test.go): the Delegation workflow and its activities on
// task queue "delegate", as `delegate worker` registers them, built twice
// by the test: as this release, and with build tag rollingnext as
// "release N+1" (one optional field more in contracts.State and
// contracts.Carry). Every worker of the test runs the same
// workflows.Options, from its flags.
//
// A worker that completes a workflow task continuing a delegation as new
// polls no more (its gate, below), and says so on stdout: the first task
// of the next run is left to the next worker the test starts, of the
// other build. The test then kills it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

func main() {
	addr := flag.String("address", "", "Temporal frontend host:port")
	ns := flag.String("namespace", "default", "namespace")
	identity := flag.String("identity", "", "worker identity (recorded in each workflow task it takes)")
	waiting := flag.Int("waiting-history-events", 0, "workflows.Options.WaitingHistoryEvents")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g := newGate()
	c, err := client.Dial(client.Options{HostPort: *addr, Namespace: *ns, Identity: *identity, Logger: sdklog.NewStructuredLogger(logger),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(g.intercept)}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(3)
	}
	w := worker.New(c, contracts.TaskQueue, worker.Options{})
	workflows.RegisterWorkflows(w, workflows.Options{WaitingHistoryEvents: *waiting})
	activities.Register(w, &activities.Activities{PollInitial: 50 * time.Millisecond, PollMax: 500 * time.Millisecond, Temporal: c, Logger: logger})
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(3)
	}
	fmt.Println("polling as", *identity)
	<-worker.InterruptCh()
	w.Stop()
}

// gate stops every poll of this worker once it completes a workflow task
// that continues a workflow as new: before that task's completion is
// sent, new polls are held and the polls in flight are canceled (and have
// returned), so that none is waiting at the server when the next run's
// first task is made.
type gate struct {
	mu       sync.Mutex
	closed   bool
	reopened chan struct{}
	inflight map[*int]context.CancelFunc
	polls    sync.WaitGroup
}

func newGate() *gate { return &gate{inflight: map[*int]context.CancelFunc{}} }

func (g *gate) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch {
	case isPoll(method):
		return g.poll(ctx, method, req, reply, cc, invoker, opts...)
	case strings.HasSuffix(method, "/RespondWorkflowTaskCompleted") && continuesAsNew(req):
		g.close()
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			// The task was not taken (new events came meanwhile): the
			// worker goes on.
			g.open()
			return err
		}
		fmt.Println("handed over: polling no more")
		return nil
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func isPoll(method string) bool {
	for _, p := range []string{"/PollWorkflowTaskQueue", "/PollActivityTaskQueue", "/PollNexusTaskQueue"} {
		if strings.HasSuffix(method, p) {
			return true
		}
	}
	return false
}

func continuesAsNew(req any) bool {
	r, ok := req.(*workflowservice.RespondWorkflowTaskCompletedRequest)
	if !ok {
		return false
	}
	for _, c := range r.GetCommands() {
		if c.GetCommandType() == enumspb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION {
			return true
		}
	}
	return false
}

func (g *gate) poll(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	for {
		g.mu.Lock()
		if !g.closed {
			pctx, cancel := context.WithCancel(ctx)
			key := new(int)
			g.inflight[key] = cancel
			g.polls.Add(1)
			g.mu.Unlock()
			err := invoker(pctx, method, req, reply, cc, opts...)
			g.mu.Lock()
			delete(g.inflight, key)
			g.mu.Unlock()
			cancel()
			g.polls.Done()
			return err
		}
		wait := g.reopened
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait:
		}
	}
}

// close stops new polls, cancels those in flight and waits for them.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.reopened = make(chan struct{})
	for _, cancel := range g.inflight {
		cancel()
	}
	g.mu.Unlock()
	g.polls.Wait()
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.reopened)
	}
}
