package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// registerInput registers Update "provide-input" (the Signal is read by
// listen). Its payload is received raw and decoded strictly by the
// validator, so a payload of the wrong shape is refused with the field and
// the rule, never half-read.
func (r *run) registerInput(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contracts.ProvideInput,
		func(ctx workflow.Context, raw converter.RawValue) (contracts.ProvideInputResult, error) {
			var a contracts.Answer
			if err := decodePayload(raw, &a, true); err != nil {
				return contracts.ProvideInputResult{}, err
			}
			if a.CredentialRef != "" {
				// The worker's store is read by an activity: a ref it does
				// not hold, or one bound to other origins, is refused by
				// the Update itself, never "accepted" and dropped later.
				if err := r.checkCredential(ctx, a.CredentialRef); err != nil {
					return contracts.ProvideInputResult{}, err
				}
				if err := r.checkAnswer(a); err != nil {
					// The question moved while the ref was checked.
					return contracts.ProvideInputResult{}, invalidInput(err)
				}
			}
			r.box.offerAnswer(a, "update")
			return contracts.ProvideInputResult{Round: r.s.Question.Round}, nil
		},
		workflow.UpdateHandlerOptions{
			Description: `Answer the remote agent's question; refused when empty or when no question is pending. Payload {"text": "...", "data": {...}, "answered_by": "name", "round": N}; round (optional) is the question round answered, refused when another is pending.`,
			Validator: func(ctx workflow.Context, raw converter.RawValue) error {
				var a contracts.Answer
				if err := decodePayload(raw, &a, true); err != nil {
					return invalidInput(err)
				}
				return invalidInput(r.checkAnswer(a))
			},
		})
}

// checkCredential runs the CheckCredential activity for ref against the
// interface in use; a refused ref is an invalid_input error naming it and
// why (the Update fails with it).
func (r *run) checkCredential(ctx workflow.Context, ref string) error {
	var res contracts.CheckCredentialResult
	opts := workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contracts.ActivityCheckCredential,
		contracts.CheckCredentialInput{Ref: ref, Interface: r.s.Interface}).Get(ctx, &res); err != nil {
		return fmt.Errorf("credential_ref %s could not be checked: %s", ref, errorText(err))
	}
	if res.Refused != "" {
		return invalidInput(&contracts.FieldError{Field: "credential_ref", Rule: res.Refused})
	}
	return nil
}

// checkAnswer refuses an answer that cannot be sent now.
func (r *run) checkAnswer(a contracts.Answer) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if r.phase == phaseStopping || r.phase == phaseNotSent || r.interrupt() != nil {
		// Taken now, it would be recorded nowhere and sent never: the
		// Update said "accepted" to an operator whose answer was lost.
		return errors.New("the delegation is stopping (canceled, revoked or past its deadline): the answer cannot be sent")
	}
	q := r.s.Question
	if q == nil {
		return fmt.Errorf("no question is pending (remote state %q)", r.s.A2AState)
	}
	if a.Round != 0 && a.Round != q.Round {
		return &contracts.FieldError{Field: "round", Rule: fmt.Sprintf("the answer is for question round %d, but round %d is pending: read the question (Query %q) and answer it", a.Round, q.Round, contracts.QueryState)}
	}
	if r.box.hasAnswer() {
		return errors.New("an answer for this question was already given")
	}
	if q.State == contracts.TaskStateAuthRequired && a.CredentialRef == "" {
		return &contracts.FieldError{Field: "credential_ref", Rule: "the agent asks for authentication (AUTH_REQUIRED): name a credential of the worker's credential store; secrets never travel through a signal or an update"}
	}
	if q.State != contracts.TaskStateAuthRequired && a.CredentialRef != "" {
		return &contracts.FieldError{Field: "credential_ref", Rule: "only answers AUTH_REQUIRED"}
	}
	return contracts.CheckInputModes(r.s.InputModes, contracts.MessageModes(a.Text, a.Data))
}

// answered is how a wait for an answer ended: an operator's answer (and
// how it came, "signal" or "update"); or, when the task moved on before an
// answer went out, the task as it is now; or full: signals filled the
// run's history, and the question goes to a new run.
type answered struct {
	answer contracts.Answer
	via    string
	moved  *contracts.TaskSnapshot
	full   bool
}

// ask shows snap's question (State.Question, the UI's current details)
// and opens it to answers: one given to an earlier question is forgotten.
func (r *run) ask(ctx workflow.Context, snap contracts.TaskSnapshot) {
	r.s.Question = &contracts.Question{Round: r.s.InputRounds + 1, State: snap.State, Text: snap.StatusText, Data: snap.StatusData,
		Since: workflow.Now(ctx), Key: snap.StatusKey}
	r.box.dropAnswerOfAnotherQuestion()
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, questionDetails(r.d, r.s, r.wfID))
}

// waitForAnswer waits for an operator's answer to the question asked
// (ask), the deadline, or cancellation, while it follows the remote task at
// the waiting cadence: a task the agent ended (or moved on) meanwhile
// comes back as moved, and an answer not yet sent is then recorded as
// refused. The timer and the read it started end with it.
func (r *run) waitForAnswer(ctx workflow.Context, snap contracts.TaskSnapshot) (answered, error) {
	wctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	w := r.startWaiting(ctx, wctx, snap)
	why, err := r.awaitWake(ctx, w)
	switch {
	case err != nil:
		return answered{}, err
	case why == wakeAnswer:
		a, via := r.box.takeAnswer()
		return answered{answer: a, via: via}, nil
	case why == wakeStop:
		return answered{}, r.interrupt()
	case why == wakeFull:
		return answered{full: true}, nil
	}
	return r.moveOn(ctx, snap, w)
}

// waiting is one wait for an answer: the timer of the first read, then the
// read that runs at the waiting cadence (PollTask), both started in ctx,
// which ends with the wait.
type waiting struct {
	ctx         workflow.Context
	poll        contracts.WatchInput
	wake, watch workflow.Future
	// gaveUp: the ended read gave up without a change (read once).
	gaveUp *bool
}

// startWaiting starts the wait for an answer to snap's question, in wctx.
func (r *run) startWaiting(ctx, wctx workflow.Context, snap contracts.TaskSnapshot) *waiting {
	w := &waiting{ctx: wctx, poll: contracts.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID,
		Since: snap.State, SinceKey: snap.StatusKey, Limits: r.d.EffectiveLimits()}}
	// One timer: the first read or the deadline, whichever comes first. An
	// answer before it costs no read and no activity. (AUTH_REQUIRED too
	// may be resolved out of band, A2A 1.0 §7.6.2: the reads see it.)
	if every := r.d.WaitingPoll(); r.deadlineTimer == nil && r.d.Deadline.Sub(workflow.Now(ctx)) <= every {
		r.arm(ctx)
	} else {
		w.wake = workflow.NewTimer(wctx, every)
	}
	r.box.dropReconciled()
	return w
}

// wake is what wakes a wait for an answer. woken decides it in this
// order, the first that holds winning.
type wake int

const (
	wakeNone wake = iota
	// wakeMoved: the task moved on: a reconcile read saw it changed, or
	// the waiting read ended with a change (or failed).
	wakeMoved
	// wakeAnswer: an operator's answer waits to be taken (it goes even
	// with a stop delivered at the same time: the send refuses it then,
	// and records it as not sent).
	wakeAnswer
	// wakeStop: a revoke or the deadline.
	wakeStop
	// wakeReadGaveUp: the waiting read ended without a change (its retries
	// reached the deadline before the next interval): the wait goes on
	// without it; the deadline is the listener's.
	wakeReadGaveUp
	// wakeFull: signals filled the run's history: the question is handed
	// over to a new run.
	wakeFull
	// wakeReadDue: the first read is due, or a push came with no read
	// running: the read starts, and the wait goes on.
	wakeReadDue
)

// woken decides what wakes w now (wakeNone: nothing yet).
func (r *run) woken(ctx workflow.Context, w *waiting) wake {
	readEnded := w.watch != nil && w.watch.IsReady()
	switch {
	case r.box.hasReconciled(), readEnded && !r.readGaveUp(ctx, w):
		return wakeMoved
	case r.box.hasAnswer():
		return wakeAnswer
	case r.interrupt() != nil:
		return wakeStop
	case readEnded:
		return wakeReadGaveUp
	case r.floodedWhileWaiting(ctx):
		return wakeFull
	case (w.wake != nil && w.wake.IsReady()) || (r.box.hasPush() && w.watch == nil):
		return wakeReadDue
	}
	return wakeNone
}

// awaitWake waits until something ends w (woken): it starts the read when
// it is due, and waits on without a read that gave up. The first read's
// timer, or the deadline's when that comes first, bounds the wait until
// the read starts (startWaiting); then the deadline's (startReading).
func (r *run) awaitWake(ctx workflow.Context, w *waiting) (wake, error) {
	for {
		if w.watch != nil {
			r.box.dropPush() // a read is running: it will see the change
		}
		why := wakeNone
		if err := r.wait(ctx, byOwnTimer, func() bool { why = r.woken(ctx, w); return why != wakeNone }); err != nil {
			return wakeNone, err
		}
		switch why {
		case wakeReadDue:
			r.startReading(ctx, w)
		case wakeReadGaveUp:
			w.watch, w.gaveUp = nil, nil
		default:
			return why, nil
		}
	}
}

// startReading starts the read of w: the first read is due (or a push came
// first), so from now on the task is read at the waiting cadence, and the
// deadline has its own timer.
func (r *run) startReading(ctx workflow.Context, w *waiting) {
	r.box.dropPush()
	w.wake = nil
	r.arm(ctx)
	in := w.poll
	in.ReadFirst = true
	w.watch = workflow.ExecuteActivity(workflow.WithActivityOptions(w.ctx, r.waitingOptions(ctx)), contracts.ActivityPollTask, in)
}

// readGaveUp reports whether the ended read of w gave up without a change.
func (r *run) readGaveUp(ctx workflow.Context, w *waiting) bool {
	if w.gaveUp == nil {
		err := w.watch.Get(ctx, nil)
		gave := errorType(err) == contracts.ErrTypeUnchanged || isTimeout(err)
		w.gaveUp = &gave
	}
	return *w.gaveUp
}

// moveOn takes the task as it moved on during w; an answer given meanwhile
// to the question of snap is then recorded as not sent.
func (r *run) moveOn(ctx workflow.Context, snap contracts.TaskSnapshot, w *waiting) (answered, error) {
	var next contracts.TaskSnapshot
	if r.box.hasReconciled() {
		next = r.box.takeReconciled()
	} else if err := w.watch.Get(ctx, &next); err != nil {
		return answered{}, err
	}
	r.watches++
	if r.box.hasAnswer() {
		// The task moved before the answer went out: it is not sent.
		a, via := r.box.takeAnswer()
		r.recordAnswer(contracts.AnswerRecord{Round: r.s.Question.Round, Text: a.Text, Data: a.Data, AnsweredBy: a.AnsweredBy,
			Via: via, At: workflow.Now(ctx), QuestionState: snap.State, QuestionKey: snap.StatusKey,
			Refused: "not sent: the remote task moved to " + string(next.State) + " before the answer went out"})
	}
	r.closeQuestion()
	return answered{moved: &next}, nil
}

// waitingOptions run PollTask at the contract's waiting cadence: each
// attempt reads the task once (the first reads nothing), and Temporal
// retries an unchanged task after the interval, with no backoff, until
// the deadline.
func (r *run) waitingOptions(ctx workflow.Context) workflow.ActivityOptions {
	every := r.d.WaitingPoll()
	left := r.d.Deadline.Sub(workflow.Now(ctx)) + time.Minute
	return workflow.ActivityOptions{
		ScheduleToCloseTimeout: max(left, time.Minute),
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: every, BackoffCoefficient: 1, MaximumInterval: every},
	}
}
