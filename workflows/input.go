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
			r.box.offerAnswer(a, "update")
			return contracts.ProvideInputResult{Round: r.s.Question.Round}, nil
		},
		workflow.UpdateHandlerOptions{
			Description: `Answer the remote agent's question; refused when empty or when no question is pending. Payload {"text": "...", "data": {...}, "answered_by": "name"}.`,
			Validator: func(ctx workflow.Context, raw converter.RawValue) error {
				var a contracts.Answer
				if err := decodePayload(raw, &a, true); err != nil {
					return invalidInput(err)
				}
				return invalidInput(r.checkAnswer(a))
			},
		})
}

// checkAnswer refuses an answer that cannot be sent now.
func (r *run) checkAnswer(a contracts.Answer) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if r.stopping || r.interrupt() != nil {
		// Taken now, it would be recorded nowhere and sent never: the
		// Update said "accepted" to an operator whose answer was lost.
		return errors.New("the delegation is stopping (canceled, revoked or past its deadline): the answer cannot be sent")
	}
	q := r.s.Question
	if q == nil {
		return fmt.Errorf("no question is pending (remote state %q)", r.s.A2AState)
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

// waitForAnswer shows the question and waits for an operator's answer,
// the deadline, or cancellation, while it follows the remote task at the
// waiting cadence: a task the agent ended (or moved on) meanwhile comes
// back as moved, and an answer not yet sent is then recorded as refused.
func (r *run) waitForAnswer(ctx workflow.Context, snap contracts.TaskSnapshot) (contracts.Answer, string, *contracts.TaskSnapshot, error) {
	r.s.Question = &contracts.Question{Round: r.s.InputRounds + 1, State: snap.State, Text: snap.StatusText, Data: snap.StatusData,
		Since: workflow.Now(ctx), Key: snap.StatusKey}
	r.box.dropAnswer()
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, questionDetails(r.d, r.s, r.wfID))
	var watch, wake workflow.Future
	wctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	pollIn := contracts.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: snap.State, SinceKey: snap.StatusKey, Limits: r.d.EffectiveLimits()}
	// One timer: the first read or the deadline, whichever comes first. An
	// answer before it costs no read and no activity. (AUTH_REQUIRED too
	// may be resolved out of band, A2A 1.0 §7.6.2: the reads see it.)
	if every := r.d.WaitingPoll(); r.deadlineTimer == nil && r.d.Deadline.Sub(workflow.Now(ctx)) <= every {
		r.arm(ctx)
	} else {
		wake = workflow.NewTimer(wctx, every)
	}
	r.box.dropReconciled()
	moved := func() bool { return (watch != nil && watch.IsReady()) || r.box.hasReconciled() }
	// pushDue: a push arrived and no read is running: read now, as when the
	// first read is due.
	pushDue := func() bool { return r.box.hasPush() && watch == nil }
	// full: the run's history is full of signals: hand the question over
	// to a new run.
	full := func() bool { return r.floodedWhileWaiting(ctx) }
	for {
		if watch != nil {
			r.box.dropPush() // a read is running: it will see the change
		}
		if err := workflow.Await(ctx, func() bool {
			return r.box.hasAnswer() || r.interrupt() != nil || moved() || (wake != nil && wake.IsReady()) || pushDue() || full()
		}); err != nil {
			return contracts.Answer{}, "", nil, err
		}
		if full() && !r.box.hasAnswer() && r.interrupt() == nil && !moved() {
			return contracts.Answer{}, "", nil, errHistoryFull
		}
		if ((wake != nil && wake.IsReady()) || pushDue()) && !r.box.hasAnswer() && r.interrupt() == nil && !moved() {
			r.box.dropPush()
			// The first read is due: from now on the task is read at the
			// waiting cadence, and the deadline has its own timer.
			wake = nil
			r.arm(ctx)
			in := pollIn
			in.ReadFirst = true
			watch = workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, r.waitingOptions(ctx)), contracts.ActivityPollTask, in)
			continue
		}
		if !r.box.hasAnswer() && r.interrupt() == nil && !r.box.hasReconciled() && watch != nil {
			// The waiting read gave up without a change (its retries
			// reached the deadline before the next interval): wait on
			// without it; the deadline is the listener's.
			if err := watch.Get(ctx, nil); errorType(err) == contracts.ErrTypeUnchanged || isTimeout(err) {
				watch = nil
				continue
			}
		}
		break
	}
	if r.box.hasAnswer() && !moved() {
		a, via := r.box.takeAnswer()
		return a, via, nil, nil
	}
	if !moved() {
		return contracts.Answer{}, "", nil, r.interrupt()
	}
	var next contracts.TaskSnapshot
	if r.box.hasReconciled() {
		next = r.box.takeReconciled()
	} else if err := watch.Get(ctx, &next); err != nil {
		return contracts.Answer{}, "", nil, err
	}
	r.watches++
	if r.box.hasAnswer() {
		// The task moved before the answer went out: it is not sent.
		a, via := r.box.takeAnswer()
		r.s.Answers = append(r.s.Answers, contracts.AnswerRecord{Round: r.s.Question.Round, Text: a.Text, Data: a.Data, AnsweredBy: a.AnsweredBy,
			Via: via, At: workflow.Now(ctx), QuestionState: snap.State, QuestionKey: snap.StatusKey,
			Refused: "not sent: the remote task moved to " + string(next.State) + " before the answer went out"})
	}
	r.s.Question = nil
	return contracts.Answer{}, "", &next, nil
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
