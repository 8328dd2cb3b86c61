package workflows

import (
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// follow follows the remote task from snap to the end.
func (r *run) follow(ctx workflow.Context, snap contracts.TaskSnapshot) contracts.Outcome {
	// askedAgain: a weakly identified question watched for StaleWindow
	// came back unchanged, so it is taken as asked again.
	askedAgain := false
	for {
		if snap.State.Interrupted() && !askedAgain && r.stale(snap) {
			next, err := r.skipRepublished(ctx, snap)
			if err != nil {
				return r.failed(ctx, err)
			}
			askedAgain = contracts.SameStatus(next, snap)
			snap = next
			continue
		}
		askedAgain = false
		next, out, done := r.step(ctx, snap)
		if done {
			return out
		}
		snap = next
	}
}

// skipRepublished watches past a question the last answer already
// answered (stale).
func (r *run) skipRepublished(ctx workflow.Context, snap contracts.TaskSnapshot) (contracts.TaskSnapshot, error) {
	// The agent republished the task as it stood when we answered (a2a-js
	// does so before it handles a follow-up): not a new question. Keep
	// watching for the next status. A status with no message id and no
	// timestamp cannot tell a republished question from the same one asked
	// again: it is watched for StaleWindow at most, then taken as asked
	// again.
	r.s.StaleReplies++
	r.keepSnapshot(snap)
	within := 0
	if contracts.WeakStatusKey(snap.StatusKey) {
		within = int(StaleWindow / time.Second)
	}
	next, _, err := r.watchWithin(ctx, snap, within)
	return next, err
}

// keepSnapshot makes snap the last snapshot without observing it (no
// transition, no search attribute): a republished question, or one the
// next run observes.
func (r *run) keepSnapshot(snap contracts.TaskSnapshot) {
	s := snap
	r.s.LastSnapshot = &s
}

// step observes snap and takes the delegation one step on from it: to the
// Outcome (done), to a new run (done, phaseHandingOver), or to the
// next snapshot.
func (r *run) step(ctx workflow.Context, snap contracts.TaskSnapshot) (next contracts.TaskSnapshot, out contracts.Outcome, done bool) {
	if snap.State.Interrupted() && r.shouldContinueAsNew(ctx) {
		// An agent whose question keeps changing must not grow one
		// run's history without bound. The question is observed and
		// shown by the next run, so that the state never says
		// input-required while no question is pending.
		r.keepSnapshot(snap)
		return snap, contracts.Outcome{}, true
	}
	r.observe(ctx, snap)
	switch {
	case snap.State == contracts.TaskStateMessage:
		return snap, r.outcome(contracts.StatusInvalidOutput, &contracts.ErrorInfo{Category: contracts.CategoryInvalidOutput,
			Message: "the agent replied with a Message and created no Task: there is no artifact to validate"}), true
	case snap.State.Terminal():
		return snap, r.finish(snap), true
	case snap.State.Interrupted():
		return r.round(ctx, snap)
	default:
		return r.watchOn(ctx, snap)
	}
}

// round is one input round on snap's question: ask, wait for the answer,
// send it, and go on from what the send returns.
func (r *run) round(ctx workflow.Context, snap contracts.TaskSnapshot) (next contracts.TaskSnapshot, out contracts.Outcome, done bool) {
	r.ask(ctx, snap)
	got, err := r.waitForAnswer(ctx, snap)
	switch {
	case err != nil:
		return snap, r.failed(ctx, err), true
	case got.full:
		if r.continueNow(ctx) {
			r.keepSnapshot(snap)
			r.closeQuestion()
			return snap, contracts.Outcome{}, true
		}
		return snap, contracts.Outcome{}, false // a stop arrived meanwhile: handled on the next turn
	case got.moved != nil:
		return *got.moved, contracts.Outcome{}, false
	}
	return r.answer(ctx, snap, got.answer, got.via)
}

// answer sends a, an operator's answer to snap's question, as the next
// round, and goes on from the task as the send left it.
func (r *run) answer(ctx workflow.Context, snap contracts.TaskSnapshot, a contracts.Answer, via string) (next contracts.TaskSnapshot, out contracts.Outcome, done bool) {
	r.s.InputRounds++
	round := r.s.InputRounds
	r.recordAnswer(contracts.AnswerRecord{Round: round, Text: a.Text, Data: a.Data, AnsweredBy: a.AnsweredBy,
		Via: via, At: workflow.Now(ctx), MessageID: MessageID(r.wfID, r.firstRunID, round),
		QuestionState: snap.State, QuestionKey: snap.StatusKey})
	r.closeQuestion()
	text := a.Text
	if strings.TrimSpace(text) == "" && len(a.Data) == 0 {
		text = "Credentials provided."
	}
	next, err := r.sendRound(ctx, round, text, a.Data, a.CredentialRef)
	switch {
	case err == nil:
		return next, contracts.Outcome{}, false
	case a.CredentialRef != "" && (errorType(err) == contracts.ErrTypeCredentialRef || errorType(err) == contracts.ErrTypeCredentialRefNotAllowed):
		r.credentialRefused(ctx, snap, a, err)
		return snap, contracts.Outcome{}, false
	}
	if ended, ok := r.endedMeanwhile(ctx, err); ok {
		r.answerEnded(ended, err)
		return ended, contracts.Outcome{}, false
	}
	r.answerStopped(err)
	return snap, r.failed(ctx, err), true
}

// credentialRefused takes back the round of an answer whose credential
// the worker refused, and asks snap's question again.
func (r *run) credentialRefused(ctx workflow.Context, snap contracts.TaskSnapshot, a contracts.Answer, err error) {
	// Nothing was sent: the operator named a credential the worker does
	// not have, or one this agent's origin may not receive. Ask again,
	// saying so.
	r.s.InputRounds--
	reason := "credential_ref " + a.CredentialRef + " is not in the worker's credential store"
	if errorType(err) == contracts.ErrTypeCredentialRefNotAllowed {
		reason = "credential_ref " + a.CredentialRef + " refused, nothing sent: " + contracts.Truncate(errorText(err), 500)
	}
	r.lastAnswer().Refused = reason
	r.observe(ctx, snap)
}

// answerEnded records that the last answer's follow-up failed because the
// agent had ended the task: the agent's own state and reason stand.
func (r *run) answerEnded(ended contracts.TaskSnapshot, err error) {
	why := contracts.Truncate(errorText(err), 500)
	last := r.lastAnswer()
	if deliveryUnknown(err) {
		// It may have reached the agent before it failed: the agent
		// may have taken the answer.
		last.Unconfirmed = "the follow-up failed without a reply (" + why + ") and the task is " + string(ended.State) + ": whether the agent took this answer is not known; the agent's own state stands"
	} else {
		last.Refused = "the follow-up failed (" + why + ") and the task is " + string(ended.State) + ": the agent's own state stands"
	}
}

// answerStopped records, when the delegation stopped with the last answer
// taken, whether it went (it was recorded as if it had).
func (r *run) answerStopped(err error) {
	last := r.lastAnswer()
	switch {
	case r.phase == phaseNotSent:
		last.Refused = "not sent: the delegation stopped before the answer went out (" + contracts.Truncate(errorText(err), 300) + ")"
	case r.s.SendInFlight == last.MessageID:
		last.Unconfirmed = "the delegation stopped while the answer was being sent: whether the agent took it is not known"
	}
}

// watchOn watches a task that works until it changes; a run whose history
// is full hands it over to a new run.
func (r *run) watchOn(ctx workflow.Context, snap contracts.TaskSnapshot) (next contracts.TaskSnapshot, out contracts.Outcome, done bool) {
	if r.shouldContinueAsNew(ctx) {
		return snap, contracts.Outcome{}, true
	}
	if err := r.interrupt(); err != nil {
		return snap, r.failed(ctx, err), true
	}
	next, full, err := r.watch(ctx, snap)
	switch {
	case err != nil:
		return snap, r.failed(ctx, err), true
	case full:
		// Signals filled the run while it watched: the next run
		// watches on.
		if r.continueNow(ctx) {
			r.keepSnapshot(snap)
			return snap, contracts.Outcome{}, true
		}
		return snap, contracts.Outcome{}, false
	}
	return next, contracts.Outcome{}, false
}

// StaleWindow is how long a republished question whose status has no
// message id and no timestamp is watched before it is taken as asked
// again.
const StaleWindow = 15 * time.Second

// watch runs WatchTask from snap until the task changes, or signals fill
// the run's history (full: the next run watches on).
func (r *run) watch(ctx workflow.Context, snap contracts.TaskSnapshot) (next contracts.TaskSnapshot, full bool, err error) {
	return r.watchWithin(ctx, snap, 0)
}

// watchWithin runs WatchTask from snap until the task changes or, when
// within > 0, for that many seconds at most (then never full).
func (r *run) watchWithin(ctx workflow.Context, snap contracts.TaskSnapshot, within int) (next contracts.TaskSnapshot, full bool, err error) {
	if r.s.Push && within == 0 && !snap.State.Interrupted() {
		return r.watchByPush(ctx, snap)
	}
	r.watches++
	in := contracts.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: snap.State, Limits: r.d.EffectiveLimits(), Stream: r.s.Streaming, Within: within}
	if snap.State.Interrupted() {
		in.SinceKey = snap.StatusKey
	}
	var flooded func() bool
	if within == 0 {
		flooded = func() bool { return r.floodedWhileWaiting(ctx) }
	}
	full, err = r.activityUnless(ctx, r.watchOptions(ctx), contracts.ActivityWatchTask, in, &next, flooded)
	return next, full, err
}

// watchByPush follows a task whose agent pushes its changes: nothing is
// read until a push for the task arrives (Signal "task-update", a hint
// only) or the waiting cadence passes, whichever comes first; then the
// task is read once (GetTask), and only what it shows counts. A forged or
// replayed push costs one read. A reconcile that sees the task changed
// moves it on at once, and a run flooded by pushes continues as new.
func (r *run) watchByPush(ctx workflow.Context, snap contracts.TaskSnapshot) (next contracts.TaskSnapshot, full bool, err error) {
	r.flushSA(ctx) // list and reconcile --state see where it stands
	r.box.dropReconciled()
	for {
		r.watches++
		r.arm(ctx) // before the cadence's timer: the deadline's is the run's first
		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(tctx, r.d.WaitingPoll())
		flooded := func() bool { return r.floodedWhileWaiting(ctx) }
		err := r.wait(ctx, byDeadline, func() bool {
			return r.box.hasPush() || timer.IsReady() || flooded() || r.box.hasReconciled()
		})
		fired := timer.IsReady() // before cancel(), which settles the timer
		if !fired {
			cancel()
		}
		if err != nil {
			return snap, false, err
		}
		if err := r.interrupt(); err != nil {
			return snap, false, err
		}
		if r.box.hasReconciled() {
			// A reconcile read the task and saw it changed.
			return r.box.takeReconciled(), false, nil
		}
		if flooded() {
			return snap, true, nil
		}
		r.box.dropPush()
		var read contracts.TaskSnapshot
		in := contracts.GetTaskInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Limits: r.d.EffectiveLimits()}
		if err := r.activity(ctx, getTaskOptions(), contracts.ActivityGetTask, in, &read); err != nil {
			return snap, false, err
		}
		if read.State != snap.State || read.StatusKey != snap.StatusKey {
			return read, false, nil
		}
	}
}

// stale reports whether an interrupted snapshot shows the question the
// last answer already answered (same task, state and status identity): a
// round opens only on a question asked after the last answer.
func (r *run) stale(snap contracts.TaskSnapshot) bool {
	if len(r.s.Answers) == 0 {
		return false
	}
	last := r.s.Answers[len(r.s.Answers)-1]
	if last.Refused != "" || last.QuestionKey == "" {
		return false
	}
	return snap.State == last.QuestionState && snap.StatusKey == last.QuestionKey &&
		(snap.TaskID == "" || snap.TaskID == r.s.RemoteTaskID)
}

// endedMeanwhile: a follow-up failed for a reason other than the deadline,
// a revoke or cancellation; the task is read once, and when the agent has
// ended it, that snapshot is returned.
func (r *run) endedMeanwhile(ctx workflow.Context, err error) (contracts.TaskSnapshot, bool) {
	var ee *endedError
	if errors.As(err, &ee) {
		return ee.snap, true
	}
	if r.interrupt() != nil || temporal.IsCanceledError(err) || ctx.Err() != nil || r.s.RemoteTaskID == "" {
		return contracts.TaskSnapshot{}, false
	}
	if asStop(err) != nil {
		return contracts.TaskSnapshot{}, false
	}
	return r.readTerminal(ctx)
}

// readTerminal reads the task once; ok when the agent has ended it.
func (r *run) readTerminal(ctx workflow.Context) (contracts.TaskSnapshot, bool) {
	var snap contracts.TaskSnapshot
	in := contracts.GetTaskInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Limits: r.d.EffectiveLimits()}
	if r.activity(ctx, getTaskOptions(), contracts.ActivityGetTask, in, &snap) != nil || !snap.State.Terminal() {
		return contracts.TaskSnapshot{}, false
	}
	return snap, true
}

// observe records a remote snapshot: ids, state, transition.
func (r *run) observe(ctx workflow.Context, snap contracts.TaskSnapshot) {
	r.observations++
	s := snap
	r.s.LastSnapshot = &s
	if snap.TaskID != "" && r.s.RemoteTaskID == "" {
		r.s.RemoteTaskID = snap.TaskID
		r.setSA(SearchA2ARemoteTaskID.ValueSet(contracts.Truncate(snap.TaskID, contracts.MaxKeyword)))
	}
	if snap.ContextID != "" && r.s.ContextID == "" {
		r.s.ContextID = snap.ContextID
	}
	r.setState(ctx, string(snap.State))
}

func (r *run) setState(ctx workflow.Context, state string) {
	if state == r.s.A2AState {
		return
	}
	r.s.A2AState = state
	r.s.Transitions = append(r.s.Transitions, contracts.Transition{State: state, At: workflow.Now(ctx)})
	r.setSA(SearchA2AState.ValueSet(contracts.Truncate(state, contracts.MaxKeyword)))
	r.details(ctx)
}

// setSA notes a search attribute change; flushSA writes the changes noted
// since the last flush as one UpsertWorkflowSearchAttributes event, before
// the workflow blocks (so history grows per state change, not per field).
func (r *run) setSA(u temporal.SearchAttributeUpdate) {
	r.saPending = append(r.saPending, u)
}

func (r *run) flushSA(ctx workflow.Context) {
	if len(r.saPending) == 0 {
		return
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, r.saPending...)
	r.saPending = nil
}
