package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
)

// describing is a Temporal client whose DescribeWorkflowExecution reports
// status (every other method is the nil interface's: not called).
type describing struct {
	sdkclient.Client
	mu     sync.Mutex
	status enumspb.WorkflowExecutionStatus
	calls  int
}

func (d *describing) DescribeWorkflowExecution(ctx context.Context, id, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: d.status}}, nil
}

// pollingRun is a workflow run whose Get calls get answers from the
// queue: a nil answer is a long poll that never wakes (it returns only
// when its ctx ends), a value is the result.
type pollingRun struct {
	sdkclient.WorkflowRun
	mu      sync.Mutex
	answers []*string
	gets    int
}

func (r *pollingRun) GetID() string { return "d-1" }

func (r *pollingRun) Get(ctx context.Context, valuePtr any) error {
	r.mu.Lock()
	a := r.answers[min(r.gets, len(r.answers)-1)]
	r.gets++
	r.mu.Unlock()
	if a == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	*(valuePtr.(*string)) = *a
	return nil
}

// TestAwaitDoesNotWaitOnAMissedNotification: the workflow ended, but the
// long poll for its close event missed the notification (the server
// dropped it) and would wait out its 20 s; Await sees from the workflow's
// status that it ended and gets the result with a fresh request. (Before:
// Outcome was run.Get alone and waited with the poll.)
func TestAwaitDoesNotWaitOnAMissedNotification(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result := "the outcome"
	run := &pollingRun{answers: []*string{nil, &result}}
	c := &describing{status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED}
	var got string
	if err := Await(ctx, c, run, &got); err != nil {
		t.Fatalf("Await() error = %v (the missed notification was waited on)", err)
	}
	if got != result || run.gets != 2 {
		t.Fatalf("got %q after %d Get calls, want %q after 2", got, run.gets, result)
	}
}

// TestAwaitWaitsForARunningWorkflow: while the workflow runs (or continued
// as new), Await waits on the long poll and asks for nothing else but its
// status; the poll's result is the result.
func TestAwaitWaitsForARunningWorkflow(t *testing.T) {
	for _, status := range []enumspb.WorkflowExecutionStatus{enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW} {
		result := "later"
		gate := make(chan struct{})
		run := &gatedRun{gate: gate, result: result}
		c := &describing{status: status}
		go func() {
			// Open the gate once Await has looked at the status twice.
			for {
				c.mu.Lock()
				n := c.calls
				c.mu.Unlock()
				if n >= 2 {
					close(gate)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		var got string
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := Await(ctx, c, run, &got)
		cancel()
		if err != nil || got != result || run.gets != 1 {
			t.Fatalf("%s: Await() = %q, %v after %d Get calls; want %q after 1", status, got, err, run.gets, result)
		}
	}
}

// gatedRun's Get returns result once gate is closed.
type gatedRun struct {
	sdkclient.WorkflowRun
	gate   chan struct{}
	result string
	gets   int
}

func (r *gatedRun) GetID() string { return "d-2" }

func (r *gatedRun) Get(ctx context.Context, valuePtr any) error {
	r.gets++
	select {
	case <-r.gate:
		*(valuePtr.(*string)) = r.result
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestAwaitEndsWithItsContext: a caller's deadline ends the wait with its
// error.
func TestAwaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run := &pollingRun{answers: []*string{nil}}
	var got string
	if err := Await(ctx, &describing{status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}, run, &got); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await() error = %v, want context.Canceled", err)
	}
}

// Await's status checks: the first 50 ms in, where the missed notification
// is most likely (a workflow that ends at once), the next a second after,
// then doubling to 10 s. A delegation of a second under load (delegate
// bench at concurrency 50) is looked at twice, not five times (at 50, 150,
// 350, 750 and 1,550 ms: about 2 core-ms of the server's for each).
func TestAwaitChecksSeldomAfterTheFirst(t *testing.T) {
	var at []time.Duration
	elapsed := time.Duration(0)
	for wait := awaitCheckFirst; elapsed+wait <= 40*time.Second; wait = nextCheck(wait) {
		elapsed += wait
		at = append(at, elapsed)
	}
	want := []time.Duration{50 * time.Millisecond, 1050 * time.Millisecond, 3050 * time.Millisecond, 7050 * time.Millisecond, 15050 * time.Millisecond, 25050 * time.Millisecond, 35050 * time.Millisecond}
	if len(at) != len(want) {
		t.Fatalf("checks at %v, want %v", at, want)
	}
	for i := range at {
		if at[i] != want[i] {
			t.Fatalf("checks at %v, want %v", at, want)
		}
	}
}
