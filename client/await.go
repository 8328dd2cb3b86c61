package client

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"
)

// Await waits for run to end and decodes its result into valuePtr, as
// run.Get does (following continue-as-new), without waiting on one missed
// notification.
//
// run.Get long-polls GetWorkflowExecutionHistory for the close event. The
// Temporal server (1.32.2, service/history/events/notifier.go) hands each
// long poll its workflow's changes through a channel of one slot and
// drops a change when the slot is full: a workflow that changes several
// times within a few milliseconds (a delegation whose agent answers at
// once) can end while its earlier change still fills the slot, and the
// poll then waits out history.longPollExpirationInterval (20 s) before it
// asks again. One delegation in a few hundred took 20 s so (delegate
// bench, docs/performance.md). So Await also looks at the workflow's
// status (DescribeWorkflowExecution, no worker involved) after 50 ms (a
// workflow that ends at once, the case the drop is most likely in), then
// after a second more and at doubling intervals up to awaitCheckMax; once
// it ended, a fresh Get returns its result at once. (Doubling from 50 ms, a
// delegation of a second under load cost the server five looks, about
// 2 core-ms; now two.)
//
// Errors: run.Get's (the workflow's failure, ctx's error).
func Await(ctx context.Context, c sdkclient.Client, run sdkclient.WorkflowRun, valuePtr any) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run.Get(lctx, valuePtr) }()
	wait := awaitCheckFirst
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			if lctx.Err() == nil || ctx.Err() != nil {
				return err
			}
			// Cancelled below: the workflow has ended.
			return run.Get(ctx, valuePtr)
		case <-ctx.Done():
			<-done
			return ctx.Err()
		case <-timer.C:
			if ended(ctx, c, run.GetID()) {
				cancel()
				continue // the Get returns (cancelled, or with the result)
			}
			wait = nextCheck(wait)
			timer.Reset(wait)
		}
	}
}

// Cadence of Await's status checks.
const (
	awaitCheckFirst  = 50 * time.Millisecond
	awaitCheckSecond = time.Second
	awaitCheckMax    = 10 * time.Second
)

// nextCheck is the wait after wait between two of Await's status checks.
func nextCheck(wait time.Duration) time.Duration {
	return min(max(wait*2, awaitCheckSecond), awaitCheckMax)
}

// ended reports whether workflow id's latest run has ended (and did not
// continue as new); a failed look says no.
func ended(ctx context.Context, c sdkclient.Client, id string) bool {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false
	}
	switch desc.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
		return false
	}
	return true
}
