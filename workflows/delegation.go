package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
)

// MessageID returns the deterministic messageId of round n of a delegation:
// a UUIDv5 (RFC 9562, SHA-1, URL namespace) of
// "delegate:<workflowID>/<firstRunID>/<n>". A resend of the same round
// carries the same id, so an agent that deduplicates sees one message (A2A
// 1.0 §3.3.1); a new delegation that reuses the local_workflow_id of an
// ended one gets new ids (its first run id differs), and continue-as-new
// keeps them (the first run id stays).
func MessageID(workflowID, firstRunID string, round int) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "delegate:%s/%s/%d", workflowID, firstRunID, round)).String()
}

// ErrTypeInvalidContract is the ApplicationError type of a workflow that
// was started with a contract that does not validate.
const ErrTypeInvalidContract = "invalid_contract"

// Delegation is the workflow. Its input is the contract, its result the
// Outcome. It resolves the card, sends the message with messageId
// MessageID(id, run, 0), follows the remote Task, asks an operator through Signal
// or Update "provide-input" when the Task is INPUT_REQUIRED or
// AUTH_REQUIRED, validates the artifacts of a COMPLETED Task, and cancels
// the remote Task on workflow cancellation or at the deadline.
//
// A run continues as new when Temporal suggests it (or past
// ContinueAsNewEvents history events) while following the task; it drains
// the signals still buffered, and hands its contracts.State and every intent not yet
// acted on to the next run as the workflow's second input (contracts.Carry); the
// next run goes on with the same remote task. Runs recorded before
// VersionCarryInput hand the contracts.State over in the memo (CarryMemoKey), and a
// run started from such a memo still reads it. A carried state that does
// not decode fails the workflow (ErrTypeCarriedState), never restarts it.
func Delegation(ctx workflow.Context, d contracts.Delegation, carried converter.RawValue) (contracts.Outcome, error) {
	info := workflow.GetInfo(ctx)
	r := &run{
		d: d,
		s: &contracts.State{
			LocalWorkflowID: d.LocalWorkflowID, Purpose: d.Purpose, Skill: d.Skill,
			AgentCardURL: d.AgentCardURL, Deadline: d.Deadline, StartedAt: workflow.Now(ctx),
			Transitions: []contracts.Transition{},
		},
		wfID: info.WorkflowExecution.ID, firstRunID: info.FirstRunID,
	}
	carry, err := carriedInput(carried, info)
	if err != nil {
		r.s.Failure = err.Error()
		return contracts.Outcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeCarriedState, nil)
	}
	if carry != nil && carry.State.LastSnapshot != nil {
		st := carry.State
		r.s, r.carried = &st, true
		r.s.ContinuedAsNew++
	}
	if err := workflow.SetQueryHandlerWithOptions(ctx, contracts.QueryState, func() (*contracts.State, error) { return r.s, nil },
		workflow.QueryHandlerOptions{Description: "The whole local state of the delegation as JSON."}); err != nil {
		return contracts.Outcome{}, err
	}
	r.v = workflow.GetVersion(ctx, ChangeFollowAgents, workflow.DefaultVersion, VersionLatest)
	// The deadline may have passed between the start and the first
	// workflow task (no worker yet): that is a deadline, not a bad contract.
	if err := d.Validate(d.Deadline.Add(-time.Nanosecond)); err != nil {
		r.s.Failure = "invalid contract: " + err.Error()
		return contracts.Outcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidContract, nil)
	}
	if err := r.registerInput(ctx); err != nil {
		return contracts.Outcome{}, err
	}
	if err := r.registerFaultHandlers(ctx); err != nil {
		return contracts.Outcome{}, err
	}
	r.listen(ctx)
	if carry != nil && r.carried {
		r.resume(ctx, carry)
	}
	out := r.main(ctx)
	if r.continueAsNew {
		r.flushSA(ctx)
		// Handlers may still be running (an update being accepted).
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		if r.v < VersionCarryInput {
			if err := workflow.UpsertMemo(ctx, map[string]any{CarryMemoKey: r.s}); err != nil {
				return contracts.Outcome{}, err
			}
			return contracts.Outcome{}, workflow.NewContinueAsNewError(ctx, contracts.WorkflowType, d)
		}
		c := contracts.Carry{State: *r.s, Revoked: r.revoked, Pending: r.pending, PendingVia: r.pendingVia,
			Resolution: r.resolution, Rediscover: r.rediscover, Reconcile: r.reconcileAsked || r.reconciling}
		trimCarry(&c)
		return contracts.Outcome{}, workflow.NewContinueAsNewError(ctx, contracts.WorkflowType, d, c)
	}
	if !contracts.TaskState(r.s.A2AState).Terminal() {
		r.setState(ctx, string(contracts.PhaseEnded))
	}
	r.flushSA(ctx)
	r.s.Outcome = &out
	r.s.Question = nil
	workflow.SetCurrentDetails(ctx, finishedDetails(out))
	return out, nil
}

// MaxCarryBytes bounds the encoded contracts.Carry (Temporal refuses a
// continue-as-new whose input is over 2 MiB and ends the workflow).
const MaxCarryBytes = 1 << 20

// trimCarry keeps the carried state under MaxCarryBytes: the records that
// grow with time (transitions, sends, answers' content, card changes,
// resolved unknown outcomes) keep their newest entries; the ids, the
// rounds, the question and the last snapshot always stay.
func trimCarry(c *contracts.Carry) {
	size := func() int { b, _ := json.Marshal(c); return len(b) }
	if size() <= MaxCarryBytes {
		return
	}
	st := &c.State
	keep := func(n, max int) int { return n - min(n, max) }
	st.Transitions = st.Transitions[keep(len(st.Transitions), 50):]
	st.Sends = st.Sends[keep(len(st.Sends), 50):]
	st.CardChanges = st.CardChanges[keep(len(st.CardChanges), 20):]
	st.UnknownHistory = st.UnknownHistory[keep(len(st.UnknownHistory), 20):]
	st.Authorizations = st.Authorizations[keep(len(st.Authorizations), 50):]
	for i := range st.Answers[:keep(len(st.Answers), 5)] {
		st.Answers[i].Text, st.Answers[i].Data = contracts.CutText(st.Answers[i].Text, 200), nil
	}
}

// ErrTypeCarriedState is the ApplicationError type of a run whose carried
// state (input or memo) does not decode: the delegation fails loudly
// rather than start again and resend round 0.
const ErrTypeCarriedState = "carried_state"

// carriedInput reads what the previous run handed over: the second input,
// or (runs recorded before it) the memo. nil when this is the first run.
func carriedInput(raw converter.RawValue, info *workflow.Info) (*contracts.Carry, error) {
	if p := raw.Payload(); p != nil && len(p.GetData()) > 0 {
		if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
			return nil, fmt.Errorf("carried state: payload encoding %q, want %s", enc, converter.MetadataEncodingJSON)
		}
		var c contracts.Carry
		if err := json.Unmarshal(p.GetData(), &c); err != nil {
			return nil, fmt.Errorf("carried state (workflow input 2) does not decode: %w", err)
		}
		switch {
		case c.State.LastSnapshot == nil:
			return nil, errors.New("carried state (workflow input 2): state.last_snapshot is missing")
		case c.State.LastSnapshot.State.Terminal():
			return nil, fmt.Errorf("carried state (workflow input 2): state.last_snapshot.state %q is terminal: a run never continues as new from an ended task", c.State.LastSnapshot.State)
		case c.State.InputRounds < 0:
			return nil, fmt.Errorf("carried state (workflow input 2): state.input_rounds %d is negative", c.State.InputRounds)
		case c.State.RemoteTaskID == "":
			return nil, errors.New("carried state (workflow input 2): state.remote_task_id is missing")
		}
		return &c, nil
	}
	if info.Memo == nil {
		return nil, nil
	}
	p, ok := info.Memo.GetFields()[CarryMemoKey]
	if !ok {
		return nil, nil
	}
	var st contracts.State
	if err := converter.GetDefaultDataConverter().FromPayload(p, &st); err != nil {
		return nil, fmt.Errorf("carried state (memo %s) does not decode: %w", CarryMemoKey, err)
	}
	return &contracts.Carry{State: st}, nil
}

// resume applies the intents a previous run carried over.
func (r *run) resume(ctx workflow.Context, c *contracts.Carry) {
	if c.Revoked != nil {
		r.applyRevoke(ctx, *c.Revoked)
	}
	r.pending, r.pendingVia = c.Pending, c.PendingVia
	r.resolution, r.rediscover = c.Resolution, c.Rediscover
	if c.Reconcile {
		r.onReconcile(ctx, converter.RawValue{})
	}
}

// CarryMemoKey is the memo field in which runs recorded before the
// carried input handed their contracts.State to the next run.
const CarryMemoKey = "delegate_state"

// ContinueAsNewEvents is the history length past which a delegation
// continues as new even before Temporal suggests it.
var ContinueAsNewEvents = 10000

// ChangeFollowAgents is the workflow.GetVersion change id of the rules
// that follow independent agents exactly: a republished question never
// opens a round, the task is read at the waiting cadence while an operator
// is asked, transient card and send failures are retried by the workflow
// (showing the last error) until the deadline, and a follow-up that fails
// is checked against the task's own state. Histories recorded before it
// replay with workflow.DefaultVersion.
const ChangeFollowAgents = "follow-independent-agents"

// Versions of ChangeFollowAgents.
const (
	// VersionFollowAgents: the rules above.
	VersionFollowAgents workflow.Version = 1
	// VersionCarryInput: continue-as-new hands the state over as the
	// workflow's second input (contracts.Carry), with the signals drained and the
	// intents not yet acted on; before it, in the memo.
	VersionCarryInput workflow.Version = 2
	// VersionSendInFlight: a send interrupted (cancel, deadline, revoke)
	// while in flight is not abandoned: it is awaited for SendSettle at
	// most, and the task it created is recorded (then canceled).
	VersionSendInFlight workflow.Version = 3
	// VersionQuestionInNextRun: a run that continues as new at a question
	// does so before observing it; the next run shows it.
	VersionQuestionInNextRun workflow.Version = 4
	// VersionLean: a delegation costs what the protocol needs. The card
	// check, the authorization and the send are one activity
	// (CheckAndSend: no local-activity markers, no upsert before it); the
	// deadline timer starts only when the delegation first waits (a send
	// is bounded by its own timeouts); a question is waited on with one
	// timer, the next read or the deadline, whichever comes first, and
	// the task is then read at the waiting cadence (PollTask).
	VersionLean workflow.Version = 5
	// VersionOneSpelling: A2AState spells a send whose outcome is unknown
	// "unknown-outcome", like every other value (before: "unknown_outcome",
	// contracts.FormerA2AStates).
	VersionOneSpelling workflow.Version = 6
	// VersionLatest is the version new delegations run.
	VersionLatest = VersionOneSpelling
)

// SendSettle bounds how long an interrupted delegation waits for a send in
// flight to finish, so that the task it created can be canceled.
const SendSettle = 45 * time.Second

type run struct {
	v              workflow.Version
	flush          workflow.Channel
	flushed        bool
	observations   int
	sig            signals
	reconcileAsked bool
	reconciling    bool
	reconciled     *contracts.TaskSnapshot
	saPending      []temporal.SearchAttributeUpdate
	watches        int
	carried        bool
	continueAsNew  bool
	resolution     *contracts.Resolution
	revoked        *string
	denial         string
	rediscover     bool
	changed        *contracts.CardChange
	untrusted      contracts.CardVerification
	d              contracts.Delegation
	s              *contracts.State
	wfID           string
	firstRunID     string
	deadlineHit    bool
	deadlineTimer  workflow.Future
	pending        *contracts.Answer
	pendingVia     string
}

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
			r.pending, r.pendingVia = &a, "update"
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
	q := r.s.Question
	if q == nil {
		return fmt.Errorf("no question is pending (remote state %q)", r.s.A2AState)
	}
	if r.pending != nil {
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

// main runs the delegation and returns its Outcome (or sets
// r.continueAsNew).
func (r *run) main(ctx workflow.Context) contracts.Outcome {
	if r.carried {
		return r.follow(ctx, *r.s.LastSnapshot)
	}
	r.setState(ctx, string(contracts.PhaseResolving))
	if r.v >= VersionLean {
		snap, err := r.sendRound(ctx, 0, r.d.Message.Text, r.d.Message.Data, "")
		var refused *refusedError
		if errors.As(err, &refused) {
			return r.outcome(refused.status, refused.info)
		}
		if err != nil {
			return r.failed(ctx, err)
		}
		return r.follow(ctx, snap)
	}
	card, err := r.resolve(ctx)
	if err != nil {
		return r.failed(ctx, err)
	}
	r.s.Agent = card.Agent
	r.s.Signature = card.Verification
	if !card.Trusted() {
		return r.outcome(contracts.StatusCardUntrusted, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: "nothing sent: a verified card signature is required; the card is " + card.Verification.Status + reasonSuffix(card.Verification.Reason)})
	}
	if !card.SkillFound {
		return r.outcome(contracts.StatusProtocolError, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: fmt.Sprintf("nothing sent: the card of %q offers no skill %q%s", card.Agent.Name, r.d.Skill, offered(card.Skills))})
	}
	if card.InterfaceError != "" {
		return r.outcome(contracts.StatusProtocolError, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: "nothing sent: " + card.InterfaceError})
	}
	r.adopt(ctx, card)

	if err := contracts.CheckInputModes(r.s.InputModes, contracts.MessageModes(r.d.Message.Text, r.d.Message.Data)); err != nil {
		return r.outcome(contracts.StatusProtocolError, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: "nothing sent: " + err.Error()})
	}
	snap, err := r.sendRound(ctx, 0, r.d.Message.Text, r.d.Message.Data, "")
	if err != nil {
		return r.failed(ctx, err)
	}
	return r.follow(ctx, snap)
}

// follow follows the remote task from snap to the end.
func (r *run) follow(ctx workflow.Context, snap contracts.TaskSnapshot) contracts.Outcome {
	// askedAgain: a weakly identified question watched for StaleWindow
	// came back unchanged, so it is taken as asked again.
	askedAgain := false
	for {
		if snap.State.Interrupted() && !askedAgain && r.stale(snap) {
			// The agent republished the task as it stood when we answered
			// (a2a-js does so before it handles a follow-up): not a new
			// question. Keep watching for the next status. A status with
			// no message id and no timestamp cannot tell a republished
			// question from the same one asked again: it is watched for
			// StaleWindow at most, then taken as asked again.
			r.s.StaleReplies++
			s := snap
			r.s.LastSnapshot = &s
			within := 0
			if contracts.WeakStatusKey(snap.StatusKey) {
				within = int(StaleWindow / time.Second)
			}
			next, err := r.watchWithin(ctx, snap, within)
			if err != nil {
				return r.failed(ctx, err)
			}
			askedAgain = contracts.SameStatus(next, snap)
			snap = next
			continue
		}
		askedAgain = false
		if r.v >= VersionQuestionInNextRun && snap.State.Interrupted() && r.shouldContinueAsNew(ctx) {
			// An agent whose question keeps changing must not grow one
			// run's history without bound. The question is observed and
			// shown by the next run, so that the state never says
			// input-required while no question is pending.
			s := snap
			r.s.LastSnapshot = &s
			return contracts.Outcome{}
		}
		r.observe(ctx, snap)
		switch {
		case snap.State == contracts.TaskStateMessage:
			return r.outcome(contracts.StatusInvalidOutput, &contracts.ErrorInfo{Category: contracts.CategoryInvalidOutput,
				Message: "the agent replied with a Message and created no Task: there is no artifact to validate"})
		case snap.State.Terminal():
			return r.finish(snap)
		case snap.State.Interrupted():
			if r.v >= VersionCarryInput && r.v < VersionQuestionInNextRun && r.shouldContinueAsNew(ctx) {
				// An agent whose question keeps changing must not grow
				// one run's history without bound.
				return contracts.Outcome{}
			}
			a, via, moved, err := r.waitForAnswer(ctx, snap)
			if err != nil {
				return r.failed(ctx, err)
			}
			if moved != nil {
				snap = *moved
				continue
			}
			r.s.InputRounds++
			round := r.s.InputRounds
			r.s.Answers = append(r.s.Answers, contracts.AnswerRecord{Round: round, Text: a.Text, Data: a.Data, AnsweredBy: a.AnsweredBy,
				Via: via, At: workflow.Now(ctx), MessageID: MessageID(r.wfID, r.firstRunID, round),
				QuestionState: snap.State, QuestionKey: snap.StatusKey})
			r.s.Question = nil
			if r.v < VersionLean {
				if err := r.recheckCard(ctx); err != nil {
					return r.failed(ctx, err)
				}
			}
			text := a.Text
			if strings.TrimSpace(text) == "" && len(a.Data) == 0 {
				text = "Credentials provided."
			}
			next, err := r.sendRound(ctx, round, text, a.Data, a.CredentialRef)
			if err != nil && a.CredentialRef != "" && (errorType(err) == activities.ErrTypeCredentialRef || errorType(err) == activities.ErrTypeCredentialRefNotAllowed) {
				// Nothing was sent: the operator named a credential the
				// worker does not have, or one this agent's origin may not
				// receive. Ask again, saying so.
				r.s.InputRounds--
				reason := "credential_ref " + a.CredentialRef + " is not in the worker's credential store"
				if errorType(err) == activities.ErrTypeCredentialRefNotAllowed {
					reason = "credential_ref " + a.CredentialRef + " refused, nothing sent: " + contracts.Truncate(errorText(err), 500)
				}
				r.s.Answers[len(r.s.Answers)-1].Refused = reason
				r.observe(ctx, snap)
				continue
			}
			if err != nil {
				if ended, ok := r.endedMeanwhile(ctx, err); ok {
					// The follow-up failed because the agent had ended the
					// task: the agent's own state and reason stand.
					r.s.Answers[len(r.s.Answers)-1].Refused = "the follow-up failed (" + contracts.Truncate(errorText(err), 500) + ") and the task is " + string(ended.State) + ": the agent's own state stands"
					snap = ended
					continue
				}
				return r.failed(ctx, err)
			}
			snap = next
		default:
			if r.shouldContinueAsNew(ctx) {
				return contracts.Outcome{}
			}
			if err := r.interrupt(); err != nil && r.v >= VersionCarryInput {
				return r.failed(ctx, err)
			}
			next, err := r.watch(ctx, snap)
			if err != nil {
				return r.failed(ctx, err)
			}
			snap = next
		}
	}
}

// StaleWindow is how long a republished question whose status has no
// message id and no timestamp is watched before it is taken as asked
// again.
const StaleWindow = 15 * time.Second

// shouldContinueAsNew reports (and notes) that this run continues as new
// now: Temporal suggests it or the history is past ContinueAsNewEvents, and
// this run has watched at least once (so that a long chain still makes
// progress). From VersionCarryInput, the signals still buffered are
// applied first, and a revoke or the deadline among them is handled in
// this run instead.
func (r *run) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	if r.watches == 0 || !(info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > ContinueAsNewEvents) {
		return false
	}
	if r.v >= VersionCarryInput {
		// Let the listener handle what this workflow task delivered (a
		// revoke, the deadline), then take what is still buffered; a
		// cancel, a revoke or the deadline is handled in this run.
		r.settleListener(ctx)
		r.drainSignals(ctx)
		if r.interrupt() != nil || ctx.Err() != nil {
			return false
		}
	}
	r.continueAsNew = true
	return true
}

// watch runs WatchTask from snap until the task changes.
func (r *run) watch(ctx workflow.Context, snap contracts.TaskSnapshot) (contracts.TaskSnapshot, error) {
	return r.watchWithin(ctx, snap, 0)
}

// watchWithin runs WatchTask from snap until the task changes or, when
// within > 0, for that many seconds at most.
func (r *run) watchWithin(ctx workflow.Context, snap contracts.TaskSnapshot, within int) (contracts.TaskSnapshot, error) {
	r.watches++
	var next contracts.TaskSnapshot
	in := activities.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: snap.State, Limits: r.d.EffectiveLimits(), Stream: r.s.Streaming, Within: within}
	if r.v >= VersionFollowAgents && snap.State.Interrupted() {
		in.SinceKey = snap.StatusKey
	}
	err := r.activity(ctx, r.watchOptions(ctx), acts.WatchTask, in, &next)
	return next, err
}

// stale reports whether an interrupted snapshot shows the question the
// last answer already answered (same task, state and status identity): a
// round opens only on a question asked after the last answer.
func (r *run) stale(snap contracts.TaskSnapshot) bool {
	if r.v < VersionFollowAgents || len(r.s.Answers) == 0 {
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
	if r.v < VersionFollowAgents || r.interrupt() != nil || temporal.IsCanceledError(err) || ctx.Err() != nil || r.s.RemoteTaskID == "" {
		return contracts.TaskSnapshot{}, false
	}
	if errors.Is(err, errDenied) || errors.Is(err, errRevoked) || errors.Is(err, errCardChanged) || errors.Is(err, errUntrusted) || errors.Is(err, errAbandoned) {
		return contracts.TaskSnapshot{}, false
	}
	return r.readTerminal(ctx)
}

// endedError: a follow-up was not taken and the task had ended, as snap
// shows; cause is why the follow-up failed.
type endedError struct {
	snap  contracts.TaskSnapshot
	cause string
}

func (e *endedError) Error() string {
	return "the remote task had ended (" + string(e.snap.State) + "): " + e.cause
}

// readTerminal reads the task once; ok when the agent has ended it.
func (r *run) readTerminal(ctx workflow.Context) (contracts.TaskSnapshot, bool) {
	var snap contracts.TaskSnapshot
	in := activities.GetTaskInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Limits: r.d.EffectiveLimits()}
	if r.activity(ctx, getTaskOptions(), acts.GetTask, in, &snap) != nil || !snap.State.Terminal() {
		return contracts.TaskSnapshot{}, false
	}
	return snap, true
}

// errorText is the message of an activity error (its ApplicationError
// message when it has one).
func errorText(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// resolve runs ResolveCard; a transient failure (agent unreachable, 5xx)
// is retried with backoff until the deadline.
func (r *run) resolve(ctx workflow.Context) (activities.ResolvedCard, error) {
	var card activities.ResolvedCard
	opts := resolveOptions()
	if r.v >= VersionFollowAgents {
		opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	}
	in := activities.ResolveCardInput{CardURL: r.d.AgentCardURL, Skill: r.d.Skill, RequireSignature: r.d.RequireSignedCard}
	_, err := r.retrying(ctx, "ResolveCard", func() error {
		return r.localActivity(ctx, opts, "ResolveCard", in, &card)
	}, func() error {
		return r.activity(ctx, r.handoverOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second}), "ResolveCard", in, &card)
	})
	return card, err
}

// retrying runs call, and again after each transient failure (an
// ApplicationError of category "transient", or a timeout) with backoff
// from 1 s doubling to 30 s, until it succeeds, fails otherwise, or the
// delegation is interrupted (deadline, revoke, cancel). Meanwhile
// contracts.State.Retrying and the current details show the last error. After
// WorkflowRetries attempts (about two minutes) it hands over to handover,
// one activity that Temporal retries (every 5 minutes at most) until the
// deadline, so that an agent down for days adds a bounded number of
// events to history. It returns the number of attempts the workflow made.
// Before VersionFollowAgents, call runs once (its activity's own retry
// policy retried it).
func (r *run) retrying(ctx workflow.Context, op string, call, handover func() error) (int, error) {
	if r.v < VersionFollowAgents {
		return 1, call()
	}
	wait := time.Second
	for attempt := 1; ; attempt++ {
		var err error
		if attempt > WorkflowRetries && handover != nil && r.v >= VersionCarryInput {
			r.arm(ctx)
			r.s.Retrying.HandedOver = true
			r.details(ctx)
			r.flushSA(ctx)
			err = handover()
			if err != nil && transient(err) && r.interrupt() == nil && ctx.Err() == nil {
				// Temporal retried until its schedule-to-close (the
				// deadline): wait for the deadline itself; a transient
				// failure never ends a delegation otherwise.
				if werr := workflow.Await(ctx, func() bool { return r.interrupt() != nil }); werr != nil {
					return attempt, werr
				}
				return attempt, r.interrupt()
			}
		} else {
			err = call()
		}
		if err == nil || !r.transient(err) || r.interrupt() != nil || ctx.Err() != nil || (r.s.Retrying != nil && r.s.Retrying.HandedOver) {
			if r.s.Retrying != nil {
				r.s.Retrying = nil
				r.details(ctx)
			}
			return attempt, err
		}
		now := workflow.Now(ctx)
		if r.s.Retrying == nil || r.s.Retrying.Op != op {
			r.s.Retrying = &contracts.Retrying{Op: op, Since: now}
		}
		r.s.Retrying.Attempts, r.s.Retrying.LastError, r.s.Retrying.Next = attempt, contracts.Truncate(errorText(err), 1000), now.Add(wait)
		r.details(ctx)
		r.flushSA(ctx)
		r.arm(ctx)
		timer := workflow.NewTimer(ctx, wait)
		if err := workflow.Await(ctx, func() bool { return timer.IsReady() || r.interrupt() != nil }); err != nil {
			return attempt, err
		}
		if !timer.IsReady() {
			return attempt, r.interrupt()
		}
		wait = min(wait*2, 30*time.Second)
	}
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

// transient reports whether an activity error may go away by itself.
func transient(err error) bool {
	return errorType(err) == string(contracts.CategoryTransient) || isTimeout(err)
}

// transient is transient(err), and from VersionLean also an activity the
// worker that took it does not know (an older worker during a rolling
// deploy: another worker will).
func (r *run) transient(err error) bool {
	return transient(err) || (r.v >= VersionLean && errorType(err) == "ActivityNotRegisteredError")
}

// adopt makes a resolved card the one the delegation uses.
func (r *run) adopt(ctx workflow.Context, card activities.ResolvedCard) {
	r.s.Agent = card.Agent
	r.s.Signature = card.Verification
	r.s.Interface = card.Interface
	r.s.InputModes = card.InputModes
	r.s.Streaming = card.Streaming
	r.s.Protocol = contracts.ProtocolInfo{Version: card.Interface.Version, Binding: card.Interface.Binding, URL: card.Interface.URL}
	r.setSA(SearchA2AAgent.ValueSet(contracts.Truncate(card.Agent.Name, contracts.MaxKeyword)))
}

// cardChange says what changed between the card in use and a new one in a
// way that matters to this delegation, or "" when nothing selected did
// (A2A 1.0 §8.6: a card may change under a running task).
func (r *run) cardChange(card activities.ResolvedCard) string {
	return activities.CardChange(activities.CardInUse{Interface: r.s.Interface, Signature: r.s.Signature}, card, r.d.Skill)
}

// recheckCard resolves the card again before a follow-up (cheap with the
// fetcher's cache). A change that touches nothing selected is recorded;
// one that matters stops the delegation in state "card-changed" until an
// operator sends Signal "rediscover" (the new card is then negotiated
// again and used), the deadline (status card_changed) or cancellation.
func (r *run) recheckCard(ctx workflow.Context) error {
	for {
		card, err := r.resolve(ctx)
		if err != nil {
			return err
		}
		what := r.cardChange(card)
		if card.Agent.CardDigest != r.s.Agent.CardDigest || what != "" {
			r.s.CardChanges = append(r.s.CardChanges, contracts.CardChange{At: workflow.Now(ctx), OldDigest: r.s.Agent.CardDigest,
				NewDigest: card.Agent.CardDigest, Matters: what != "", What: what, Accepted: r.rediscover})
		}
		if what == "" || r.rediscover {
			if what == "" || (card.SkillFound && card.InterfaceError == "" && card.Trusted()) {
				r.adopt(ctx, card)
				r.rediscover = false
				return nil
			}
			if r.rediscover && !card.Trusted() {
				return r.untrustedAfterRediscover(card)
			}
		}
		prev := r.s.A2AState
		if err := r.awaitRediscover(ctx, card.Agent.CardDigest, what); err != nil {
			return err
		}
		r.setState(ctx, prev)
	}
}

// untrustedAfterRediscover: a required signature fails on the card the
// operator accepted; that ends the delegation, nothing sent.
func (r *run) untrustedAfterRediscover(card activities.ResolvedCard) error {
	r.s.Signature = card.Verification
	r.s.Agent.Signature = card.Agent.Signature
	r.untrusted = card.Verification
	return errUntrusted
}

// awaitRediscover stops the delegation in "card-changed" (the card changed
// to newDigest in a way that matters: what) until an operator sends Signal
// "rediscover" (nil), the deadline (errCardChanged) or another stop. The
// caller restores its state after.
func (r *run) awaitRediscover(ctx workflow.Context, newDigest, what string) error {
	r.rediscover = false
	r.changed = &contracts.CardChange{OldDigest: r.s.Agent.CardDigest, NewDigest: newDigest, What: what}
	r.setState(ctx, string(contracts.PhaseCardChanged))
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, cardChangedDetails(r.s, r.changed, r.wfID))
	r.arm(ctx)
	if err := workflow.Await(ctx, func() bool { return r.rediscover || r.interrupt() != nil }); err != nil {
		return err
	}
	if !r.rediscover {
		if errors.Is(r.interrupt(), errDeadline) {
			return errCardChanged
		}
		return r.interrupt()
	}
	return nil
}

var (
	errCardChanged = errors.New("card changed")
	errUntrusted   = errors.New("card untrusted")
)

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// send sends round n with the same taskId and contextId as before; a
// send that failed before anything was taken (transient) is sent again
// with the same messageId, with backoff, until the deadline.
func (r *run) send(ctx workflow.Context, round int, text string, data json.RawMessage, credentialRef string) (contracts.TaskSnapshot, error) {
	in := activities.SendInput{Interface: r.s.Interface, Limits: r.d.EffectiveLimits(), CredentialRef: credentialRef, Message: contracts.OutboundMessage{
		MessageID: MessageID(r.wfID, r.firstRunID, round), TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Text: text, Data: data,
	}}
	var snap contracts.TaskSnapshot
	opts := sendOptions()
	if r.v >= VersionFollowAgents {
		opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	}
	attempts, err := r.retrying(ctx, "SendMessage", func() error {
		err := r.sendActivity(ctx, opts, round, in, &snap)
		if err != nil && round > 0 && r.v >= VersionFollowAgents && transient(err) && r.interrupt() == nil {
			// A follow-up refused with what looks transient may be refused
			// because the agent has ended the task: read it before trying
			// again.
			if ended, ok := r.readTerminal(ctx); ok {
				return &endedError{snap: ended, cause: errorText(err)}
			}
		}
		return err
	}, func() error {
		return r.sendActivity(ctx, r.handoverOptions(ctx, sendOptions()), round, in, &snap)
	})
	if r.v >= VersionFollowAgents && err == nil {
		snap.Attempt = attempts
	}
	return snap, err
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

// details sets the current details shown in the Temporal UI for the
// state the delegation is in (a pending question shows its own).
func (r *run) details(ctx workflow.Context) {
	if r.s.Question != nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · remote state `%s` · deadline %s", contracts.InertMarkdown(r.d.Purpose), r.s.A2AState, r.d.Deadline.UTC().Format(time.RFC3339))
	if contracts.TaskState(r.s.A2AState) == contracts.TaskStateUnknown && r.s.LastSnapshot != nil {
		fmt.Fprintf(&b, "\n\nThe agent sent a task state this client cannot read: `%s` (shown as is; the task is still followed).",
			contracts.InertMarkdown(contracts.Truncate(r.s.LastSnapshot.RawState, 200)))
	}
	ignoredNote(&b, r.s)
	if rt := r.s.Retrying; rt != nil {
		fmt.Fprintf(&b, "\n\n**contracts.Retrying %s** (attempt %d since %s, next at %s): %s", rt.Op, rt.Attempts,
			rt.Since.UTC().Format(time.RFC3339), rt.Next.UTC().Format(time.RFC3339), contracts.InertMarkdown(contracts.Truncate(rt.LastError, 500)))
		if rt.HandedOver {
			b.WriteString("\n\nTemporal now retries it every 5 minutes at most until the deadline; the pending activity shows each attempt's failure.")
		}
	}
	workflow.SetCurrentDetails(ctx, b.String())
}

// waitForAnswer shows the question and waits for an operator's answer,
// the deadline, or cancellation, while it follows the remote task at the
// waiting cadence: a task the agent ended (or moved on) meanwhile comes
// back as moved, and an answer not yet sent is then recorded as refused.
func (r *run) waitForAnswer(ctx workflow.Context, snap contracts.TaskSnapshot) (contracts.Answer, string, *contracts.TaskSnapshot, error) {
	r.s.Question = &contracts.Question{Round: r.s.InputRounds + 1, State: snap.State, Text: snap.StatusText, Data: snap.StatusData,
		Since: workflow.Now(ctx), Key: snap.StatusKey}
	r.pending = nil
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, questionDetails(r.d, r.s, r.wfID))
	var watch, wake workflow.Future
	wctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	pollIn := activities.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: snap.State, SinceKey: snap.StatusKey, Limits: r.d.EffectiveLimits()}
	switch {
	case r.v >= VersionLean:
		// One timer: the first read or the deadline, whichever comes
		// first. An answer before it costs no read and no activity.
		if every := r.d.WaitingPoll(); r.deadlineTimer == nil && r.d.Deadline.Sub(workflow.Now(ctx)) <= every {
			r.arm(ctx)
		} else {
			wake = workflow.NewTimer(wctx, every)
		}
	case r.v >= VersionFollowAgents:
		in := activities.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: snap.State, SinceKey: snap.StatusKey, Limits: r.d.EffectiveLimits()}
		watch = workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, r.waitingOptions(ctx)), acts.PollTask, in)
	case snap.State == contracts.TaskStateAuthRequired:
		// AUTH_REQUIRED may be resolved out of band (A2A 1.0 §7.6.2): the
		// task is watched while the operator is asked.
		in := activities.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: snap.State, Limits: r.d.EffectiveLimits(), Stream: r.s.Streaming}
		watch = workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, r.watchOptions(ctx)), acts.WatchTask, in)
	}
	r.reconciled = nil
	moved := func() bool { return (watch != nil && watch.IsReady()) || r.reconciled != nil }
	for {
		if err := workflow.Await(ctx, func() bool {
			return r.pending != nil || r.interrupt() != nil || moved() || (wake != nil && wake.IsReady())
		}); err != nil {
			return contracts.Answer{}, "", nil, err
		}
		if wake != nil && wake.IsReady() && r.pending == nil && r.interrupt() == nil && !moved() {
			// The first read is due: from now on the task is read at the
			// waiting cadence, and the deadline has its own timer.
			wake = nil
			r.arm(ctx)
			in := pollIn
			in.ReadFirst = true
			watch = workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, r.waitingOptions(ctx)), acts.PollTask, in)
			continue
		}
		if r.pending == nil && r.interrupt() == nil && r.reconciled == nil && watch != nil && r.v >= VersionFollowAgents {
			// The waiting read gave up without a change (its retries
			// reached the deadline before the next interval): wait on
			// without it; the deadline is the listener's.
			if err := watch.Get(ctx, nil); errorType(err) == activities.ErrTypeUnchanged || isTimeout(err) {
				watch = nil
				continue
			}
		}
		break
	}
	if r.pending != nil && (r.v < VersionFollowAgents || !moved()) {
		a, via := *r.pending, r.pendingVia
		r.pending = nil
		return a, via, nil, nil
	}
	if !moved() {
		return contracts.Answer{}, "", nil, r.interrupt()
	}
	var next contracts.TaskSnapshot
	if r.reconciled != nil {
		next = *r.reconciled
		r.reconciled = nil
	} else if err := watch.Get(ctx, &next); err != nil {
		return contracts.Answer{}, "", nil, err
	}
	if r.v >= VersionCarryInput {
		r.watches++
	}
	if r.pending != nil {
		// The task moved before the answer went out: it is not sent.
		a := *r.pending
		r.s.Answers = append(r.s.Answers, contracts.AnswerRecord{Round: r.s.Question.Round, Text: a.Text, Data: a.Data, AnsweredBy: a.AnsweredBy,
			Via: r.pendingVia, At: workflow.Now(ctx), QuestionState: snap.State, QuestionKey: snap.StatusKey,
			Refused: "not sent: the remote task moved to " + string(next.State) + " before the answer went out"})
		r.pending = nil
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

var errDeadline = errors.New("deadline reached")

// LateResultWindow is how long, at most, the workflow keeps watching a
// remote task whose cancel the agent did not confirm, to record late
// results (never past the deadline).
var LateResultWindow = 10 * time.Minute

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

// activity runs one activity, interrupted by the deadline or cancellation.
func (r *run) activity(ctx workflow.Context, opts workflow.ActivityOptions, fn any, in any, out any) error {
	r.flushSA(ctx)
	r.arm(ctx)
	actx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	defer cancel()
	f := workflow.ExecuteActivity(actx, fn, in)
	if err := workflow.Await(ctx, func() bool { return f.IsReady() || r.interrupt() != nil }); err != nil {
		return err
	}
	if !f.IsReady() {
		return r.interrupt()
	}
	return f.Get(ctx, out)
}

// sendActivity runs SendMessage. From VersionSendInFlight, a send that is
// in flight when the delegation is interrupted (cancel, deadline, revoke)
// is not abandoned: it runs on in a disconnected context, is awaited for
// SendSettle at most, and the task it created is recorded, so that the
// stop that follows cancels it. A send that does not finish in time is
// recorded in contracts.State.SendInFlight with its messageId.
func (r *run) sendActivity(ctx workflow.Context, opts workflow.ActivityOptions, round int, in activities.SendInput, out *contracts.TaskSnapshot) error {
	if r.v < VersionSendInFlight {
		return r.activity(ctx, opts, acts.SendMessage, in, out)
	}
	return r.inFlight(ctx, opts, round, in.Message.MessageID, acts.SendMessage, in, func(c workflow.Context, f workflow.Future) (contracts.TaskSnapshot, error) {
		err := f.Get(c, out)
		return *out, err
	})
}

// inFlight runs a send activity fn as sendActivity describes; get reads
// its result and the snapshot of the task it created. From VersionLean,
// nothing is upserted before it, and the deadline timer is started only
// when the send could outlast the deadline (retried by Temporal, or the
// deadline closer than one attempt): otherwise the send ends first.
func (r *run) inFlight(ctx workflow.Context, opts workflow.ActivityOptions, round int, msgID string, fn, in any, get func(workflow.Context, workflow.Future) (contracts.TaskSnapshot, error)) error {
	if r.v < VersionLean {
		r.flushSA(ctx)
	} else {
		left := r.d.Deadline.Sub(workflow.Now(ctx))
		if opts.RetryPolicy == nil || opts.RetryPolicy.MaximumAttempts != 1 || left <= opts.StartToCloseTimeout+SendSettle {
			r.arm(ctx)
		} else {
			// Unarmed, the send must start early enough to end before
			// the deadline; one that waited in the queue longer times
			// out with nothing sent (then retrying arms the deadline).
			opts.ScheduleToStartTimeout = left - opts.StartToCloseTimeout
		}
		// Nothing is sent after a stop (a revoke or the deadline delivered
		// with an answer or a resolution, a deadline already passed): the
		// listener handles what this workflow task delivered first.
		r.settleListener(ctx)
		if err := r.interrupt(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	dctx, dcancel := workflow.NewDisconnectedContext(ctx)
	defer dcancel()
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, opts), fn, in)
	werr := workflow.Await(ctx, func() bool { return f.IsReady() || r.interrupt() != nil })
	if werr == nil && f.IsReady() {
		_, err := get(ctx, f)
		return err
	}
	stop := werr
	if stop == nil {
		stop = r.interrupt()
	}
	// Interrupted with the send in flight: let it finish (bounded).
	timer := workflow.NewTimer(dctx, SendSettle)
	_ = workflow.Await(dctx, func() bool { return f.IsReady() || timer.IsReady() })
	if !f.IsReady() {
		r.s.SendInFlight = msgID
		return stop
	}
	if snap, err := get(dctx, f); err == nil && snap.TaskID != "" && snap.State != contracts.TaskStateMessage {
		r.s.Sends = append(r.s.Sends, contracts.SendRecord{Round: round, MessageID: msgID, At: workflow.Now(dctx), Result: "sent after the stop"})
		r.observe(dctx, snap)
	}
	return stop
}

// localActivity runs a short activity inside the workflow task (a local
// activity: one marker event, no extra round trip), interrupted by the
// deadline or cancellation. name is the registered activity name.
func (r *run) localActivity(ctx workflow.Context, opts workflow.LocalActivityOptions, name string, in any, out any) error {
	r.arm(ctx)
	lctx, cancel := workflow.WithCancel(workflow.WithLocalActivityOptions(ctx, opts))
	defer cancel()
	f := workflow.ExecuteLocalActivity(lctx, name, in)
	if err := workflow.Await(ctx, func() bool { return f.IsReady() || r.interrupt() != nil }); err != nil {
		return err
	}
	if !f.IsReady() {
		return r.interrupt()
	}
	return f.Get(ctx, out)
}

// failed turns an error into the Outcome, canceling the remote task where
// the delegation stops while the task may still run.
func (r *run) failed(ctx workflow.Context, err error) contracts.Outcome {
	switch {
	case errors.Is(err, errDeadline):
		msg := "deadline " + r.d.Deadline.UTC().Format(time.RFC3339) + " reached in state " + r.s.A2AState
		if rt := r.s.Retrying; rt != nil {
			msg += fmt.Sprintf(" while retrying %s (%d attempts; last error: %s)", rt.Op, rt.Attempts, rt.LastError)
		}
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusDeadlineExceeded, &contracts.ErrorInfo{Category: contracts.CategoryDeadline, Message: msg})
	case errors.Is(err, errCardChanged):
		c := r.changed
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusCardChanged, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: fmt.Sprintf("the agent card changed (%s); old digest %s, new digest %s; no operator sent %q before the deadline", c.What, c.OldDigest, c.NewDigest, contracts.SignalRediscover)})
	case errors.Is(err, errUntrusted):
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusCardUntrusted, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: "nothing sent after the card changed: a verified card signature is required; the new card is " + r.untrusted.Status + reasonSuffix(r.untrusted.Reason)})
	case errors.Is(err, errDenied), errors.Is(err, errRevoked):
		msg := "nothing sent after this: "
		if errors.Is(err, errRevoked) {
			msg += "revoked: " + *r.revoked
		} else {
			msg += "the policy denies it: " + r.denial
		}
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusAuthorizationDenied, &contracts.ErrorInfo{Category: contracts.CategoryAuthorization, Message: msg})
	case errors.Is(err, errAbandoned):
		last := r.s.UnknownHistory[len(r.s.UnknownHistory)-1]
		return r.outcome(contracts.StatusUnknownOutcome, &contracts.ErrorInfo{Category: contracts.CategoryUnknownOutcome,
			Message: fmt.Sprintf("abandoned by an operator after the unknown outcome of round %d (messageId %s): %s", last.Round, last.MessageID, last.Error)})
	case temporal.IsCanceledError(err) || ctx.Err() != nil:
		r.readCancelReason(ctx)
		state := r.s.A2AState
		why := ""
		if r.s.CancelReason != "" {
			why = " (reason: " + r.s.CancelReason + ")"
		}
		if r.afterCancel(ctx, LateResultWindow) {
			return r.outcome(contracts.StatusCanceled, &contracts.ErrorInfo{Category: contracts.CategoryCanceled,
				Message: "the delegation was canceled locally in state " + state + why})
		}
		msg := fmt.Sprintf("canceled locally in state %s%s; the agent did not confirm (last remote state %s)", state, why, r.s.A2AState)
		if r.s.CancelError != "" {
			msg += ": " + r.s.CancelError
		}
		if len(r.s.LateResults) > 0 {
			msg += fmt.Sprintf("; %d late result(s) recorded, not turned into outputs", len(r.s.LateResults))
		}
		return r.outcome(contracts.StatusCancelUnconfirmed, &contracts.ErrorInfo{Category: contracts.CategoryCanceled, Message: msg})
	}
	var appErr *temporal.ApplicationError
	cat, msg := contracts.CategoryProtocol, err.Error()
	if errors.As(err, &appErr) {
		cat, msg = contracts.Category(appErr.Type()), appErr.Message()
	}
	status := contracts.StatusProtocolError
	switch cat {
	case contracts.CategoryAuthorization:
		status = contracts.StatusAuthorizationDenied
	case contracts.CategoryUnknownOutcome:
		status = contracts.StatusUnknownOutcome
	}
	// The delegation stops here; a remote task it leaves behind is canceled
	// (best effort), as for a denial or a deadline.
	r.afterCancel(ctx, 0)
	return r.outcome(status, &contracts.ErrorInfo{Category: cat, Message: msg})
}

// finish turns a terminal remote task into the Outcome.
func (r *run) finish(snap contracts.TaskSnapshot) contracts.Outcome {
	reason := contracts.Truncate(snap.StatusText, 2000)
	switch snap.State {
	case contracts.TaskStateCompleted:
		outputs, rejected := contracts.ValidateArtifacts(r.d, snap.Artifacts)
		o := r.outcome(contracts.StatusCompleted, nil)
		o.Outputs, o.RejectedArtifacts = outputs, rejected
		switch {
		case len(rejected) > 0 && len(outputs) > 0 && r.d.OnInvalidArtifact == contracts.OnInvalidDrop:
			// on_invalid_artifact "drop": the valid outputs stand; the
			// rejections are listed.
		case len(rejected) > 0:
			o.Status = contracts.StatusInvalidOutput
			o.Error = &contracts.ErrorInfo{Category: contracts.CategoryInvalidOutput,
				Message: fmt.Sprintf("%d of %d artifacts failed the contract", len(rejected), len(snap.Artifacts))}
		case len(outputs) == 0:
			o.Status = contracts.StatusInvalidOutput
			o.Error = &contracts.ErrorInfo{Category: contracts.CategoryInvalidOutput, Message: "the remote task completed with no artifact"}
		}
		return o
	case contracts.TaskStateRejected:
		return r.outcome(contracts.StatusRejected, &contracts.ErrorInfo{Category: contracts.CategoryRemoteBusiness, Message: "the remote agent rejected the task: " + reason})
	case contracts.TaskStateCanceled:
		return r.outcome(contracts.StatusCanceled, &contracts.ErrorInfo{Category: contracts.CategoryRemoteBusiness, Message: "the remote agent canceled the task: " + reason})
	default:
		return r.outcome(contracts.StatusFailed, &contracts.ErrorInfo{Category: contracts.CategoryRemoteBusiness, Message: "the remote task failed: " + reason})
	}
}

func (r *run) outcome(status contracts.Status, e *contracts.ErrorInfo) contracts.Outcome {
	if e != nil && r.s.SendInFlight != "" {
		e.Message += fmt.Sprintf("; a send (messageId %s) was still in flight %s after the stop: its outcome is unknown", r.s.SendInFlight, SendSettle)
	}
	return contracts.Outcome{
		LocalWorkflowID: r.d.LocalWorkflowID, Status: status,
		RemoteTaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID,
		Agent: r.s.Agent, Protocol: r.s.Protocol,
		Outputs: []contracts.Output{}, RejectedArtifacts: []contracts.RejectedArtifact{},
		InputRounds: r.s.InputRounds, Error: e, LateResults: r.s.LateResults,
	}
}

func resolveOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	}
}

// sendOptions: a worker that dies during a send is noticed by the
// heartbeat timeout; the retry resends with the same messageId.
func sendOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	}
}

func (r *run) watchOptions(ctx workflow.Context) workflow.ActivityOptions {
	left := r.d.Deadline.Sub(workflow.Now(ctx)) + time.Minute
	return workflow.ActivityOptions{
		StartToCloseTimeout: max(left, time.Minute),
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	}
}

func cancelOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	}
}

func questionDetails(d contracts.Delegation, s *contracts.State, wfID string) string {
	q := s.Question
	var b strings.Builder
	fmt.Fprintf(&b, "## Waiting for input (round %d)\n\n", q.Round)
	fmt.Fprintf(&b, "**%s** asks, since %s (remote state `%s`):\n\n", contracts.InertMarkdown(s.Agent.Name), q.Since.UTC().Format(time.RFC3339), q.State)
	for _, line := range strings.Split(contracts.Truncate(q.Text, 2000), "\n") {
		fmt.Fprintf(&b, "> %s\n", contracts.InertMarkdown(line))
	}
	fmt.Fprintf(&b, "\nPurpose: %s · deadline %s\n\n", contracts.InertMarkdown(d.Purpose), d.Deadline.UTC().Format(time.RFC3339))
	b.WriteString("**How to answer:** send Signal or Update `provide-input` with\n\n")
	b.WriteString("```json\n{\"text\": \"...\", \"answered_by\": \"your name\"}\n```\n\n")
	fmt.Fprintf(&b, "or run `delegate answer %s --text \"...\" --by \"your name\"`.\n", wfID)
	ignoredNote(&b, s)
	return b.String()
}

// ignoredNote shows the last signal payload that was not applied.
func ignoredNote(b *strings.Builder, s *contracts.State) {
	if n := len(s.IgnoredSignals); n > 0 {
		last := s.IgnoredSignals[n-1]
		fmt.Fprintf(b, "\n\n**Not applied:** Signal `%s` at %s (%d ignored in all): %s. Payload: %s",
			last.Name, last.Time.UTC().Format(time.RFC3339), s.IgnoredSignalCount, contracts.InertMarkdown(last.Reason), contracts.InertMarkdown(contracts.Truncate(last.Excerpt, 100)))
	}
}

func cardChangedDetails(s *contracts.State, c *contracts.CardChange, wfID string) string {
	var b strings.Builder
	b.WriteString("## The agent card changed\n\n")
	fmt.Fprintf(&b, "%s\n\nOld digest `%s`, new digest `%s`.\n\n", contracts.InertMarkdown(c.What), c.OldDigest, c.NewDigest)
	fmt.Fprintf(&b, "The follow-up is held. To accept the new card, send Signal `%s` (no payload), or run `delegate rediscover %s`. ", contracts.SignalRediscover, wfID)
	fmt.Fprintf(&b, "Otherwise the delegation ends `card_changed` at its deadline; cancel it with `delegate cancel %s`.\n", wfID)
	return b.String()
}

func finishedDetails(o contracts.Outcome) string {
	s := fmt.Sprintf("**Finished: `%s`** · %d output(s), %d rejected artifact(s), %d input round(s)",
		o.Status, len(o.Outputs), len(o.RejectedArtifacts), o.InputRounds)
	if o.Error != nil {
		s += fmt.Sprintf(" · error category `%s`", o.Error.Category)
	}
	return s
}

// acts is used only for its method values: the activity names.
var acts *activities.Activities

// errorType is the ApplicationError type of err, or "".
func errorType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}
