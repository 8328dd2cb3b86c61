package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// activity runs one activity, interrupted by a stop or cancellation.
func (r *run) activity(ctx workflow.Context, opts workflow.ActivityOptions, fn any, in any, out any) error {
	_, err := r.activityUnless(ctx, opts, fn, in, out, nil)
	return err
}

// activityUnless runs one activity, interrupted by a stop, cancellation,
// or (when full is set) a history that is full: then it is canceled and
// full reported, for the next run to go on.
func (r *run) activityUnless(ctx workflow.Context, opts workflow.ActivityOptions, fn any, in any, out any, full func() bool) (bool, error) {
	r.flushSA(ctx)
	r.arm(ctx)
	actx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	defer cancel()
	f := workflow.ExecuteActivity(actx, fn, in)
	if err := r.wait(ctx, byDeadline, func() bool { return f.IsReady() || (full != nil && full()) }); err != nil {
		return false, err
	}
	if f.IsReady() {
		return false, f.Get(ctx, out)
	}
	if err := r.interrupt(); err != nil {
		return false, err
	}
	return true, nil
}

// backoff retries from 1 s, doubling up to maxInterval, without a limit
// on attempts (the activity's own timeout and the deadline bound it).
func backoff(maxInterval time.Duration) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: maxInterval}
}

// sendOptions: a worker that dies during a send is noticed by the
// heartbeat timeout; the retry resends with the same messageId.
func sendOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy:         backoff(30 * time.Second),
	}
}

// sendOptions are sendOptions() with room for the contract's send_timeout
// when it is longer than the default: the send, and 30 s for the card, the
// authorization and the settle reads around it.
func (r *run) sendOptions() workflow.ActivityOptions {
	opts := sendOptions()
	if t := r.d.SendTimeoutOf(); r.d.SendTimeout != "" && t+30*time.Second > opts.StartToCloseTimeout {
		opts.StartToCloseTimeout = t + 30*time.Second
	}
	return opts
}

func (r *run) watchOptions(ctx workflow.Context) workflow.ActivityOptions {
	left := r.d.Deadline.Sub(workflow.Now(ctx)) + time.Minute
	return workflow.ActivityOptions{
		StartToCloseTimeout: max(left, time.Minute),
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         backoff(30 * time.Second),
	}
}

func cancelOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	}
}

func getTaskOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5},
	}
}
