package workflows

import (
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// sendRound sends round n (checkAndSend: the card and the authorization
// checked first, every time); a send
// whose outcome is unknown is resent (same messageId) under
// on_unknown_outcome "resend" at most 3 times, else an operator is asked
// through resolve-unknown.
func (r *run) sendRound(ctx workflow.Context, round int, text string, data json.RawMessage, credentialRef string) (contracts.TaskSnapshot, error) {
	msgID := MessageID(r.wfID, r.firstRunID, round)
	autoResends := 0
	firstSent := workflow.Now(ctx)
	for {
		snap, err := r.checkAndSend(ctx, round, text, data, credentialRef)
		if err == nil {
			r.recordSend(ctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "sent", Attempts: snap.Attempt})
			return snap, nil
		}
		if errorType(err) != string(contracts.CategoryUnknownOutcome) {
			return contracts.TaskSnapshot{}, err
		}
		r.recordSend(ctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "unknown_outcome", Error: contracts.Truncate(errorText(err), 500)})
		r.arm(ctx)
		if r.s.RemoteTaskID == "" {
			// The send may have made a task whose id never came back:
			// look for it before anything is sent again.
			if snap, found, ferr := r.findSent(ctx, round, msgID, firstSent, credentialRef, false); ferr != nil || found {
				return snap, ferr
			}
		}
		if r.d.OnUnknownOutcome == contracts.OnUnknownResend && autoResends < contracts.MaxAutoResends {
			autoResends++
			continue
		}
		snap, adopted, err := r.resolveUnknown(ctx, round, msgID, errorText(err), autoResends)
		if err != nil || adopted {
			return snap, err
		}
		// Resend: the loop sends again, authorization first.
	}
}

// FindTaskPatience is how long the look for a task whose send's outcome is
// unknown keeps asking an agent that does not answer (findSent).
const FindTaskPatience = 5 * time.Minute

// findSent looks for the task that round's message (msgID, first sent at
// since) may have made, by the FindTask activity (A2A 1.0 ListTasks): a
// task found is adopted and recorded ("adopted: found by ListTasks"), so
// that no resend makes a second one. An agent that serves no ListTasks, or
// a look that fails, leaves the send's outcome unknown, handled by the
// contract's policy. err is a stop (deadline, cancel) only.
func (r *run) findSent(ctx workflow.Context, round int, msgID string, since time.Time, credentialRef string, stopping bool) (contracts.TaskSnapshot, bool, error) {
	in := contracts.FindTaskInput{Interface: r.s.Interface, MessageID: msgID,
		Card: contracts.ResolveCardInput{CardURL: r.d.AgentCardURL, Skill: r.d.Skill, RequireSignature: r.d.RequireSignedCard}, Since: since.Add(-time.Minute), CredentialRef: credentialRef, Limits: r.d.EffectiveLimits()}
	var res contracts.FindTaskResult
	// The look is a read: an agent that does not answer (down, restarting,
	// its network cut) is asked again, from 1 s doubling to 30 s, for up to
	// FindTaskPatience (never past the deadline), so that a send cut by an
	// agent's outage finds its task when the agent is back instead of
	// waiting for an operator. At a stop, three attempts in about 3 s: the
	// stop must not wait on an agent that is away.
	patience := min(FindTaskPatience, r.d.Deadline.Sub(workflow.Now(ctx)))
	opts := workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute, ScheduleToCloseTimeout: max(patience, 10*time.Second),
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}}
	var err error
	if stopping {
		// A stop is under way (ctx disconnected): the look runs to its end.
		opts.ScheduleToCloseTimeout = 0
		opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contracts.ActivityFindTask, in).Get(ctx, &res)
	} else if err = r.activity(ctx, opts, contracts.ActivityFindTask, in, &res); err != nil && (r.interrupt() != nil || temporal.IsCanceledError(err)) {
		return contracts.TaskSnapshot{}, false, err
	}
	if err != nil {
		res.Error = errorText(err)
	}
	if c := res.Card; c != nil && r.s.Interface.URL == "" && c.Agent.CardDigest != "" {
		// The send never said which card it used: the one FindTask read
		// is the delegation's now (as CheckAndSend's would have been), so
		// that the task found can be followed and canceled.
		r.s.Agent, r.s.Signature = c.Agent, c.Verification
		if c.Usable() {
			r.adopt(ctx, *c)
		}
	}
	note := "ListTasks found no task with this messageId"
	switch {
	case res.Found && res.Snapshot.TaskID != "":
		r.recordSend(ctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "adopted: found by ListTasks"})
		return res.Snapshot, true, nil
	case res.NotOffered:
		note = "the agent serves no ListTasks"
	case res.Error != "":
		note = "ListTasks failed: " + contracts.Truncate(res.Error, 300)
	}
	r.recordSend(ctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "not found: " + note})
	return contracts.TaskSnapshot{}, false, nil
}

// inFlight runs a send activity fn; get reads its result and the snapshot
// of the task it created. Nothing is upserted before it, and the deadline
// timer is started only when the send could outlast the deadline (retried
// by Temporal, or the deadline closer than one attempt): otherwise the
// send ends first. A stop (cancel, deadline, revoke) never waits for a
// send in flight: the send is abandoned at once (its activity canceled;
// it sees that at its next heartbeat and drops the call), and, when the
// send could have made a task whose id is not known (a first message),
// the task is looked for (FindTask: A2A 1.0 ListTasks by messageId) so
// that the stop that follows cancels it. One not found is recorded in
// contracts.State.SendInFlight with its messageId.
func (r *run) inFlight(ctx workflow.Context, opts workflow.ActivityOptions, round int, msgID string, fn, in any, get func(workflow.Context, workflow.Future) (contracts.TaskSnapshot, error)) error {
	left := r.d.Deadline.Sub(workflow.Now(ctx))
	b := byOwnTimer
	if opts.RetryPolicy == nil || opts.RetryPolicy.MaximumAttempts != 1 || left <= opts.StartToCloseTimeout+SendSettle {
		b = byDeadline
		r.arm(ctx) // before the send: the timer's command comes first
	} else {
		// Unarmed, the send must start early enough to end before the
		// deadline; one that waited in the queue longer times out with
		// nothing sent (then retrying arms the deadline).
		opts.ScheduleToStartTimeout = left - opts.StartToCloseTimeout
	}
	// Nothing is sent after a stop (a revoke or the deadline delivered with
	// an answer or a resolution, a deadline already passed): the listener
	// handles what this workflow task delivered first.
	r.settleListener(ctx)
	if err := r.interrupt(); err != nil {
		r.phase = phaseNotSent
		return err
	}
	if err := ctx.Err(); err != nil {
		r.phase = phaseNotSent
		return err
	}
	sent := workflow.Now(ctx)
	dctx, dcancel := workflow.NewDisconnectedContext(ctx)
	defer dcancel()
	actx, abandon := workflow.WithCancel(dctx)
	defer abandon()
	// An abandoned send is awaited until its activity has stopped (it sees
	// the cancel at its next heartbeat, within 3 s): a reply that came
	// meanwhile names the task, and only then is the task looked for.
	opts.WaitForCancellation = true
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(actx, opts), fn, in)
	werr := r.wait(ctx, b, f.IsReady)
	if werr == nil && f.IsReady() {
		_, err := get(ctx, f)
		return err
	}
	stop := werr
	if stop == nil {
		stop = r.interrupt()
	}
	if f.IsReady() {
		// It finished in the same workflow task as the stop.
		r.sentAtStop(dctx, round, msgID, f, get)
		return stop
	}
	// Interrupted with the send in flight: abandoned at once, and awaited
	// (bounded) until it has stopped.
	abandon()
	stopped := workflow.NewTimer(dctx, AbandonSettle)
	_ = r.wait(dctx, settling, func() bool { return f.IsReady() || stopped.IsReady() })
	if f.IsReady() {
		if snap, err := get(dctx, f); err == nil && r.madeATask(dctx, round, msgID, snap) {
			return stop
		}
	}
	r.recordSend(dctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "abandoned at the stop"})
	if r.s.RemoteTaskID != "" {
		// A follow-up: the task is known, the stop cancels it.
		return stop
	}
	if snap, found, _ := r.findSent(dctx, round, msgID, sent, "", true); found && snap.TaskID != "" && snap.State != contracts.TaskStateMessage {
		r.observe(dctx, snap)
		return stop
	}
	r.s.SendInFlight = msgID
	return stop
}

// sentAtStop records what a send that ended with the stop made: the task
// (the stop then cancels it), or that its outcome is unknown.
func (r *run) sentAtStop(dctx workflow.Context, round int, msgID string, f workflow.Future, get func(workflow.Context, workflow.Future) (contracts.TaskSnapshot, error)) {
	snap, err := get(dctx, f)
	switch {
	case err == nil && r.madeATask(dctx, round, msgID, snap):
	case err != nil && deliveryUnknown(err):
		r.s.SendInFlight = msgID
		r.recordSend(dctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "unknown_outcome (after the stop)"})
	}
}

// madeATask records a send that ended after the stop with a task ("sent
// after the stop"; the stop then cancels it) and reports whether it had
// one (not a Message reply).
func (r *run) madeATask(dctx workflow.Context, round int, msgID string, snap contracts.TaskSnapshot) bool {
	if snap.TaskID == "" || snap.State == contracts.TaskStateMessage {
		return false
	}
	r.recordSend(dctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "sent after the stop"})
	r.observe(dctx, snap)
	return true
}

// AbandonSettle bounds how long a stop waits for an abandoned send's
// activity to stop (it sees the cancel at its next heartbeat, every 3 s).
const AbandonSettle = 15 * time.Second

// SendSettle is the margin before the deadline within which a send arms
// the deadline timer before it starts (a send that could end after the
// deadline).
const SendSettle = 45 * time.Second

// retrying runs call, and again after each transient failure (an
// ApplicationError of category "transient", or a timeout) with backoff
// from 1 s doubling to 30 s, until it succeeds, fails otherwise, or the
// delegation is interrupted (deadline, revoke, cancel). Meanwhile
// contracts.State.Retrying and the current details show the last error. After
// WorkflowRetries attempts (about two minutes) it hands over to handover,
// one activity that Temporal retries (every 5 minutes at most) until the
// deadline, so that an agent down for days adds a bounded number of
// events to history. It returns the last attempt's result and the number
// of attempts the workflow made.
func retrying[T any](ctx workflow.Context, r *run, op string, call, handover func() (T, error)) (T, int, error) {
	wait := time.Second
	for attempt := 1; ; attempt++ {
		var t T
		var err error
		if attempt > WorkflowRetries && handover != nil {
			r.handOver(ctx)
			t, err = handover()
			if waited, herr := r.afterHandOver(ctx, err); waited {
				return t, attempt, herr
			}
		} else {
			t, err = call()
		}
		if err == nil || !r.transient(err) || r.interrupt() != nil || ctx.Err() != nil || (r.s.Retrying != nil && r.s.Retrying.HandedOver) {
			if r.s.Retrying != nil {
				r.s.Retrying = nil
				r.details(ctx)
			}
			return t, attempt, err
		}
		now := workflow.Now(ctx)
		if r.s.Retrying == nil || r.s.Retrying.Op != op {
			r.s.Retrying = &contracts.Retrying{Op: op, Since: now}
		}
		r.s.Retrying.Attempts, r.s.Retrying.LastError, r.s.Retrying.Next = attempt, contracts.Truncate(errorText(err), 1000), now.Add(wait)
		r.details(ctx)
		r.flushSA(ctx)
		r.arm(ctx) // before the backoff's timer: the deadline's is the run's first
		timer := workflow.NewTimer(ctx, wait)
		if err := r.wait(ctx, byDeadline, timer.IsReady); err != nil {
			return t, attempt, err
		}
		if !timer.IsReady() {
			return t, attempt, r.interrupt()
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// handOver notes that the workflow's own retries are spent: the next
// attempt is one activity that Temporal retries until the deadline.
func (r *run) handOver(ctx workflow.Context) {
	r.arm(ctx)
	r.s.Retrying.HandedOver = true
	r.details(ctx)
	r.flushSA(ctx)
}

// afterHandOver takes err, how the handed-over activity ended. waited: it
// failed transiently all the same, the deadline (or another stop) was
// waited for, and the error returned is that stop.
func (r *run) afterHandOver(ctx workflow.Context, err error) (waited bool, _ error) {
	if err == nil || !transient(err) || r.interrupt() != nil || ctx.Err() != nil {
		return false, err
	}
	// Temporal retried until its schedule-to-close (the deadline): wait for
	// the deadline itself; a transient failure never ends a delegation
	// otherwise.
	if werr := r.wait(ctx, byDeadline, func() bool { return false }); werr != nil {
		return true, werr
	}
	return true, r.interrupt()
}

// WorkflowRetries is how many attempts retrying makes itself before it
// hands over to Temporal's retries.
const WorkflowRetries = 8

// handoverOptions: one activity retried by Temporal (30 s doubling to 5
// minutes) until the deadline; each attempt bounded as opts.
func (r *run) handoverOptions(ctx workflow.Context, opts workflow.ActivityOptions) workflow.ActivityOptions {
	opts.ScheduleToCloseTimeout = max(r.d.Deadline.Sub(workflow.Now(ctx)), time.Second)
	opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: 30 * time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute}
	return opts
}

// isTimeout reports an activity timeout.
func isTimeout(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te)
}

// deliveryUnknown: a send that failed this way may have reached the agent
// (it timed out, or its outcome is unknown), unlike one the agent refused.
func deliveryUnknown(err error) bool {
	var ee *endedError
	if errors.As(err, &ee) {
		return ee.unknown
	}
	return isTimeout(err) || errorType(err) == string(contracts.CategoryUnknownOutcome)
}

// transient reports whether an activity error may go away by itself.
func transient(err error) bool {
	return errorType(err) == string(contracts.CategoryTransient) || isTimeout(err)
}

// transient is transient(err), and also an activity the worker that took
// it does not know (an older worker during a rolling deploy: another
// worker will).
func (r *run) transient(err error) bool {
	return transient(err) || errorType(err) == "ActivityNotRegisteredError"
}
