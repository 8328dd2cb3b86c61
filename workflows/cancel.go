package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// interrupt returns the stop the delegation must take now, if any: a
// revoke (the listener's), or the deadline (its timer fired).
func (r *run) interrupt() error {
	if reason, ok := r.box.isRevoked(); ok {
		return revoked(reason)
	}
	if r.deadlineTimer != nil && r.deadlineTimer.IsReady() {
		return deadline()
	}
	return nil
}

// arm starts the deadline timer when the delegation first waits past
// what bounds its activities (wait, byDeadline). The timer is not
// canceled with the workflow: only its firing counts.
func (r *run) arm(ctx workflow.Context) {
	if r.deadlineTimer != nil {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	r.deadlineTimer = workflow.NewTimer(dctx, max(r.d.Deadline.Sub(workflow.Now(ctx)), 0))
}

// afterCancel asks the agent to cancel (in a disconnected context, so it
// runs while the workflow is being canceled) and, when the agent does not
// confirm, keeps watching for at most LateResultWindow (and never past the
// deadline) to record late results. It returns whether the cancel was
// confirmed.
func (r *run) afterCancel(ctx workflow.Context, window time.Duration) bool {
	if contracts.TaskState(r.s.A2AState) == contracts.TaskStateCompleted && r.s.LastSnapshot != nil {
		// The task completed before the stop took effect (a send in
		// flight): the agent did the work; what it returned is kept as
		// late results, not turned into outputs.
		r.keepLate(r.s.LastSnapshot.Artifacts)
		return false
	}
	if r.s.RemoteTaskID == "" || contracts.TaskState(r.s.A2AState).Terminal() {
		return true
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var snap contracts.TaskSnapshot
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, cancelOptions()), contracts.ActivityCancelTask,
		contracts.CancelInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID}, &snap).Get(dctx, &snap)
	if err == nil {
		r.observe(dctx, snap)
		switch snap.State {
		case contracts.TaskStateCanceled:
			return true
		case contracts.TaskStateCompleted:
			// The agent had done the work (with a send abandoned at the
			// stop): what it made is kept as late results.
			r.keepLate(snap.Artifacts)
			return false
		}
	} else {
		r.s.CancelError = contracts.Truncate(errorText(err), 500)
	}
	if window <= 0 {
		return false
	}
	return r.watchLate(dctx, window)
}

// watchLate watches the task whose cancel the agent did not confirm, in
// the disconnected dctx, for window at most (never past the deadline),
// recording late results; it returns whether the task ended canceled.
func (r *run) watchLate(dctx workflow.Context, window time.Duration) bool {
	until := workflow.Now(dctx).Add(window)
	if r.d.Deadline.Before(until) {
		until = r.d.Deadline
	}
	wctx, wcancel := workflow.WithCancel(dctx)
	defer wcancel()
	timer := workflow.NewTimer(wctx, max(until.Sub(workflow.Now(dctx)), 0))
	for !contracts.TaskState(r.s.A2AState).Terminal() {
		in := contracts.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: contracts.TaskState(r.s.A2AState), Limits: r.d.EffectiveLimits()}
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, r.watchOptions(wctx)), contracts.ActivityWatchTask, in)
		// Part of the stop: only the window's timer ends it.
		_ = r.wait(wctx, settling, func() bool { return f.IsReady() || timer.IsReady() })
		var next contracts.TaskSnapshot
		if !f.IsReady() || f.Get(wctx, &next) != nil {
			break
		}
		r.observe(wctx, next)
		if next.State == contracts.TaskStateCompleted {
			r.keepLate(next.Artifacts)
		}
	}
	return contracts.TaskState(r.s.A2AState) == contracts.TaskStateCanceled
}

// LateResultWindow is how long, at most, the workflow keeps watching a
// remote task whose cancel the agent did not confirm, to record late
// results (never past the deadline).
const LateResultWindow = 10 * time.Minute
