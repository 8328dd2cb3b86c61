package workflows

import "go.temporal.io/sdk/workflow"

// bound is what ends a wait by the delegation's deadline at the latest.
type bound int

const (
	// byDeadline: the deadline timer (arm; started once per run, the first
	// time the delegation waits past what bounds its activities). A wait
	// that schedules a command of its own first arms before it, so that
	// the timer's command comes first.
	byDeadline bound = iota + 1
	// byOwnTimer: the caller holds a timer, or an activity whose timeouts
	// end, before the deadline: the deadline timer is not started for this
	// wait (a question answered before its first read, or a send that ends
	// in time, costs no timer). Each such caller says which.
	byOwnTimer
	// settling: a wait that no stop interrupts, because it is part of a
	// stop or a hand-over already under way: it ends in this workflow task
	// or by the caller's own timer.
	settling
)

// wait blocks until ready holds or, but while settling, the delegation
// must stop (interrupt: a revoke or the deadline), whichever comes first.
// The stop is the caller's to read (interrupt); the error is the
// workflow's cancellation (ctx done). It is the only place the Delegation
// workflow blocks (TestOneWaitPrimitive reads the package's source): every
// wait says how the deadline bounds it.
func (r *run) wait(ctx workflow.Context, b bound, ready func() bool) error {
	switch b {
	case settling:
		return workflow.Await(ctx, ready)
	case byDeadline:
		r.arm(ctx)
	}
	return workflow.Await(ctx, func() bool { return ready() || r.interrupt() != nil })
}
