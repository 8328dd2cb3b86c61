package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
)

var (
	errDenied    = errors.New("authorization denied")
	errRevoked   = errors.New("authorization revoked")
	errAbandoned = errors.New("abandoned after an unknown outcome")
)

// interrupt returns the reason the delegation must stop now, if any.
func (r *run) interrupt() error {
	switch {
	case r.revoked != nil:
		return errRevoked
	case r.deadlineHit:
		return errDeadline
	case r.deadlineTimer != nil && r.deadlineTimer.IsReady():
		r.deadlineHit = true
		return errDeadline
	}
	return nil
}

// arm starts the deadline timer (from VersionLean, when the delegation
// first waits; before it, the listener starts it at once). The timer is
// not canceled with the workflow: only its firing counts.
func (r *run) arm(ctx workflow.Context) {
	if r.v < VersionLean || r.deadlineTimer != nil || r.deadlineHit {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	r.deadlineTimer = workflow.NewTimer(dctx, max(r.d.Deadline.Sub(workflow.Now(ctx)), 0))
}

// registerFaultHandlers registers Update "resolve-unknown" (the Signals
// are read by listen); its payload is received raw and decoded strictly by
// the validator.
func (r *run) registerFaultHandlers(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contracts.ResolveUnknown,
		func(ctx workflow.Context, raw converter.RawValue) (string, error) {
			var res contracts.Resolution
			if err := decodePayload(raw, &res, true); err != nil {
				return "", err
			}
			r.resolution = &res
			return res.Action, nil
		},
		workflow.UpdateHandlerOptions{
			Description: `Resolve a send whose outcome is unknown; refused when none is pending. Payload {"action": "resend" | "adopt" | "abandon", "task_id": "..."}.`,
			Validator: func(ctx workflow.Context, raw converter.RawValue) error {
				var res contracts.Resolution
				if err := decodePayload(raw, &res, true); err != nil {
					return invalidInput(err)
				}
				if err := res.Validate(); err != nil {
					return invalidInput(err)
				}
				if r.s.Unknown == nil {
					return fmt.Errorf("no send with an unknown outcome is pending (state %q)", r.s.A2AState)
				}
				if r.resolution != nil {
					return errors.New("this unknown outcome was already resolved")
				}
				return nil
			},
		})
}

// authorize runs CheckAuthorization before an outbound message.
func (r *run) authorize(ctx workflow.Context, round int) error {
	in := activities.AuthorizationInput{LocalWorkflowID: r.d.LocalWorkflowID, AgentOrigin: r.s.Interface.CardOrigin,
		Skill: r.d.Skill, Purpose: r.d.Purpose, Deadline: r.d.Deadline, Round: round}
	var dec contracts.AuthorizationDecision
	if err := r.localActivity(ctx, authorizeOptions(), "CheckAuthorization", in, &dec); err != nil {
		return err
	}
	r.s.Authorizations = append(r.s.Authorizations, contracts.AuthorizationRecord{AuthorizationDecision: dec, Round: round, At: workflow.Now(ctx)})
	if !dec.Allowed {
		r.denial = dec.Reason
		return errDenied
	}
	return nil
}

// sendRound sends round n: authorization checked first, every time; a send
// whose outcome is unknown is resent (same messageId) under
// on_unknown_outcome "resend" at most 3 times, else an operator is asked
// through resolve-unknown.
func (r *run) sendRound(ctx workflow.Context, round int, text string, data json.RawMessage, credentialRef string) (contracts.TaskSnapshot, error) {
	msgID := MessageID(r.wfID, r.firstRunID, round)
	autoResends := 0
	for {
		var snap contracts.TaskSnapshot
		var err error
		if r.v >= VersionLean {
			snap, err = r.checkAndSend(ctx, round, text, data, credentialRef)
		} else {
			if err := r.authorize(ctx, round); err != nil {
				return contracts.TaskSnapshot{}, err
			}
			r.setState(ctx, string(contracts.PhaseSending))
			snap, err = r.send(ctx, round, text, data, credentialRef)
		}
		if err == nil {
			r.s.Sends = append(r.s.Sends, contracts.SendRecord{Round: round, MessageID: msgID, At: workflow.Now(ctx), Result: "sent", Attempts: snap.Attempt})
			return snap, nil
		}
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != string(contracts.CategoryUnknownOutcome) {
			return contracts.TaskSnapshot{}, err
		}
		r.s.Sends = append(r.s.Sends, contracts.SendRecord{Round: round, MessageID: msgID, At: workflow.Now(ctx), Result: "unknown_outcome"})
		r.arm(ctx)
		if r.d.OnUnknownOutcome == contracts.OnUnknownResend && autoResends < contracts.MaxAutoResends {
			autoResends++
			continue
		}
		snap, adopted, err := r.resolveUnknown(ctx, round, msgID, appErr.Message(), autoResends)
		if err != nil || adopted {
			return snap, err
		}
		// Resend: the loop sends again, authorization first.
	}
}

// resolveUnknown asks an operator about an unknown outcome until the
// answer is resend (adopted false), a task that passes adoptTask (adopted
// true), or abandon (errAbandoned); a refused adoption is asked again with
// its reason.
func (r *run) resolveUnknown(ctx workflow.Context, round int, msgID, cause string, autoResends int) (contracts.TaskSnapshot, bool, error) {
	errText := cause
	for {
		res, err := r.askUnknown(ctx, round, msgID, errText, autoResends)
		if err != nil {
			return contracts.TaskSnapshot{}, false, err
		}
		switch res.Action {
		case contracts.ActionResend:
			return contracts.TaskSnapshot{}, false, nil
		case contracts.ActionAbandon:
			return contracts.TaskSnapshot{}, false, errAbandoned
		}
		snap, err := r.adoptTask(ctx, res.TaskID)
		if err == nil {
			r.s.Sends = append(r.s.Sends, contracts.SendRecord{Round: round, MessageID: msgID, At: workflow.Now(ctx), Result: "adopted"})
			return snap, true, nil
		}
		if r.interrupt() != nil || temporal.IsCanceledError(err) {
			return contracts.TaskSnapshot{}, false, err
		}
		errText = "adopt refused: " + err.Error() + " (after: " + cause + ")"
	}
}

// askUnknown waits for an operator's resolution.
func (r *run) askUnknown(ctx workflow.Context, round int, msgID, errText string, autoResends int) (contracts.Resolution, error) {
	r.s.Unknown = &contracts.UnknownOutcome{Round: round, MessageID: msgID, Since: workflow.Now(ctx), Error: contracts.Truncate(errText, 1000), AutoResends: autoResends}
	r.resolution = nil
	if r.v >= VersionOneSpelling {
		r.setState(ctx, string(contracts.PhaseUnknownOutcome))
	} else {
		r.setState(ctx, contracts.FormerA2AStates[string(contracts.PhaseUnknownOutcome)][0])
	}
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, unknownDetails(r.s, r.wfID))
	r.arm(ctx)
	if err := workflow.Await(ctx, func() bool { return r.resolution != nil || r.interrupt() != nil }); err != nil {
		return contracts.Resolution{}, err
	}
	if r.resolution == nil {
		return contracts.Resolution{}, r.interrupt()
	}
	res := *r.resolution
	r.s.Unknown.Resolution = &res
	r.s.UnknownHistory = append(r.s.UnknownHistory, *r.s.Unknown)
	r.s.Unknown, r.resolution = nil, nil
	return res, nil
}

// adoptTask checks a task named by an operator with GetTask before the
// delegation carries on with it: it must exist, be the delegation's task
// when one is known, and share its contextId when one is known.
func (r *run) adoptTask(ctx workflow.Context, taskID string) (contracts.TaskSnapshot, error) {
	if r.s.RemoteTaskID != "" && taskID != r.s.RemoteTaskID {
		return contracts.TaskSnapshot{}, fmt.Errorf("task %q is not this delegation's task %q", taskID, r.s.RemoteTaskID)
	}
	var snap contracts.TaskSnapshot
	in := activities.GetTaskInput{Interface: r.s.Interface, TaskID: taskID, Limits: r.d.EffectiveLimits()}
	if err := r.activity(ctx, getTaskOptions(), acts.GetTask, in, &snap); err != nil {
		if r.interrupt() != nil || temporal.IsCanceledError(err) {
			return contracts.TaskSnapshot{}, err
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return contracts.TaskSnapshot{}, fmt.Errorf("GetTask %q: %s", taskID, appErr.Message())
		}
		return contracts.TaskSnapshot{}, fmt.Errorf("GetTask %q: %v", taskID, err)
	}
	if r.s.ContextID != "" && snap.ContextID != r.s.ContextID {
		return contracts.TaskSnapshot{}, fmt.Errorf("task %q has contextId %q, the delegation's is %q", taskID, snap.ContextID, r.s.ContextID)
	}
	return snap, nil
}

// reconcile reads the remote task once and records what it saw.
func (r *run) reconcile(ctx workflow.Context) {
	rec := contracts.Reconciliation{At: workflow.Now(ctx), Before: r.s.A2AState}
	seen := r.observations
	if r.s.RemoteTaskID == "" {
		rec.Error = "no remote task yet"
		r.addReconciliation(rec)
		return
	}
	var snap contracts.TaskSnapshot
	actx := workflow.WithActivityOptions(ctx, getTaskOptions())
	err := workflow.ExecuteActivity(actx, acts.GetTask, activities.GetTaskInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Limits: r.d.EffectiveLimits()}).Get(ctx, &snap)
	if err != nil {
		var appErr *temporal.ApplicationError
		switch {
		case temporal.IsCanceledError(err) || ctx.Err() != nil:
			// The read was never scheduled: the delegation is stopping
			// and follows its remote task itself until it ends.
			rec.Error = "not read: a cancel of this delegation is in progress"
		case errors.As(err, &appErr):
			rec.Error = contracts.Truncate(appErr.Message(), 500)
		default:
			rec.Error = contracts.Truncate(err.Error(), 500)
		}
	} else {
		rec.Seen, rec.Changed = string(snap.State), string(snap.State) != r.s.A2AState
		switch {
		case r.v >= VersionCarryInput && r.observations != seen:
			// The delegation observed the task again while this read was
			// running: the read is older than what it knows.
			rec.Changed = false
			rec.Error = "superseded: the task was observed again while this read ran"
		case rec.Changed && r.s.Question != nil:
			// The task moved on while we waited for an operator (it was
			// canceled, completed or failed remotely): go on from there.
			r.reconciled = &snap
		}
	}
	r.addReconciliation(rec)
}

// maxReconciliations bounds contracts.State.Reconciliations (the oldest are
// dropped; ReconcileCount keeps counting).
const maxReconciliations = 20

func (r *run) addReconciliation(rec contracts.Reconciliation) {
	r.s.ReconcileCount++
	r.s.Reconciliations = append(r.s.Reconciliations, rec)
	if n := len(r.s.Reconciliations); n > maxReconciliations && r.v >= VersionCarryInput {
		r.s.Reconciliations = append([]contracts.Reconciliation(nil), r.s.Reconciliations[n-maxReconciliations:]...)
	}
}

// afterCancel asks the agent to cancel (in a disconnected context, so it
// runs while the workflow is being canceled) and, when the agent does not
// confirm, keeps watching for at most LateResultWindow (and never past the
// deadline) to record late results. It returns whether the cancel was
// confirmed.
func (r *run) afterCancel(ctx workflow.Context, window time.Duration) bool {
	if r.s.RemoteTaskID == "" || contracts.TaskState(r.s.A2AState).Terminal() {
		return true
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var snap contracts.TaskSnapshot
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, cancelOptions()), acts.CancelTask,
		activities.CancelInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID}, &snap).Get(dctx, &snap)
	if err == nil {
		r.observe(dctx, snap)
		if snap.State == contracts.TaskStateCanceled {
			return true
		}
	} else {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			r.s.CancelError = contracts.Truncate(appErr.Message(), 500)
		} else {
			r.s.CancelError = contracts.Truncate(err.Error(), 500)
		}
	}
	if window <= 0 {
		return false
	}
	until := workflow.Now(dctx).Add(window)
	if r.d.Deadline.Before(until) {
		until = r.d.Deadline
	}
	wctx, wcancel := workflow.WithCancel(dctx)
	defer wcancel()
	timer := workflow.NewTimer(wctx, max(until.Sub(workflow.Now(dctx)), 0))
	for !contracts.TaskState(r.s.A2AState).Terminal() {
		in := activities.WatchInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Since: contracts.TaskState(r.s.A2AState), Limits: r.d.EffectiveLimits()}
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, r.watchOptions(wctx)), acts.WatchTask, in)
		var next contracts.TaskSnapshot
		sel := workflow.NewSelector(wctx)
		done := false
		sel.AddFuture(f, func(f workflow.Future) {
			if f.Get(wctx, &next) != nil {
				done = true
				return
			}
			r.observe(wctx, next)
			if next.State == contracts.TaskStateCompleted {
				r.s.LateResults = append(r.s.LateResults, next.Artifacts...)
			}
		})
		sel.AddFuture(timer, func(workflow.Future) { done = true })
		sel.Select(wctx)
		if done {
			break
		}
	}
	return contracts.TaskState(r.s.A2AState) == contracts.TaskStateCanceled
}

func unknownDetails(s *contracts.State, wfID string) string {
	u := s.Unknown
	var b strings.Builder
	fmt.Fprintf(&b, "## Unknown outcome (round %d)\n\n", u.Round)
	fmt.Fprintf(&b, "The message `%s` was written to the agent, but no answer came (since %s); it may or may not have been processed.\n\n", u.MessageID, u.Since.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Error: %s\n\n", contracts.InertMarkdown(u.Error))
	fmt.Fprintf(&b, "**Choose** with Signal or Update `%s`:\n\n", contracts.ResolveUnknown)
	b.WriteString("- `{\"action\": \"resend\"}`: send again with the same messageId (an agent that deduplicates sees one message);\n")
	b.WriteString("- `{\"action\": \"adopt\", \"task_id\": \"...\"}`: carry on with a task the agent created (checked with GetTask first);\n")
	b.WriteString("- `{\"action\": \"abandon\"}`: end with status `unknown_outcome`.\n\n")
	fmt.Fprintf(&b, "CLI: `delegate resolve %s --action resend`.\n", wfID)
	return b.String()
}

func authorizeOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
	}
}

func getTaskOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5},
	}
}

// signals are the delegation's signal channels.
type signals struct {
	input, rediscover, resolve, revoke, reconcile workflow.ReceiveChannel
	// cancelReason is read only when the delegation is canceled
	// (readCancelReason).
	cancelReason workflow.ReceiveChannel
}

// listen runs the one goroutine of a delegation besides its main one: it
// receives every Signal (provide-input, rediscover, resolve-unknown,
// revoke, reconcile) and notes the deadline. One goroutine, not one per
// channel, keeps a cached waiting delegation small in the worker. Every
// payload is received raw (that never fails) and decoded by the handlers,
// so a payload of the wrong shape is recorded and ignored instead of
// stalling this goroutine, which owns the deadline and the revoke.
func (r *run) listen(ctx workflow.Context) {
	sig := func(name, desc string) workflow.ReceiveChannel {
		return workflow.GetSignalChannelWithOptions(ctx, name, workflow.SignalChannelOptions{Description: desc})
	}
	r.sig = signals{
		input:        sig(contracts.ProvideInput, `Answer the remote agent's question: {"text": "...", "data": {...}, "answered_by": "name"}; for AUTH_REQUIRED {"credential_ref": "name"}.`),
		rediscover:   sig(contracts.SignalRediscover, "Accept the agent's new card after a change that stopped the delegation (state card-changed): it is negotiated again and used. Payload: none."),
		resolve:      sig(contracts.ResolveUnknown, `Resolve a send whose outcome is unknown: {"action": "resend" | "adopt" | "abandon", "task_id": "..." (for adopt)}.`),
		revoke:       sig(contracts.SignalRevoke, `Withdraw the delegation's authorization: nothing more is sent, the remote task is canceled, status authorization_denied. Payload {"reason": "..."}.`),
		reconcile:    sig(contracts.SignalReconcile, "Read the remote task once now (GetTask) and record what was seen. Payload: none."),
		cancelReason: sig(contracts.SignalCancelReason, `The reason of a cancel requested next (delegate cancel --reason): {"reason": "..."}; shown in the state and the Outcome. It cancels nothing by itself.`),
	}
	r.flush = workflow.NewBufferedChannel(ctx, 1)
	workflow.Go(ctx, func(g workflow.Context) {
		// From VersionLean the deadline timer is started by arm.
		var deadline workflow.Future
		timerDone := r.v >= VersionLean
		if !timerDone {
			deadline = workflow.NewTimer(g, max(r.d.Deadline.Sub(workflow.Now(g)), 0))
		}
		for {
			sel := workflow.NewSelector(g)
			on := func(c workflow.ReceiveChannel, handle func(workflow.Context, converter.RawValue)) {
				sel.AddReceive(c, func(c workflow.ReceiveChannel, _ bool) { handle(g, receiveRaw(g, c)) })
			}
			on(r.sig.input, r.onInput)
			on(r.sig.rediscover, r.onRediscover)
			on(r.sig.resolve, r.onResolve)
			on(r.sig.revoke, r.onRevoke)
			on(r.sig.reconcile, r.onReconcile)
			if !timerDone {
				sel.AddFuture(deadline, func(f workflow.Future) {
					timerDone = true
					if f.Get(g, nil) == nil {
						r.deadlineHit = true
					}
				})
			}
			// Last, so that every signal and the deadline delivered in the
			// same workflow task are handled first (see settleListener).
			sel.AddReceive(r.flush, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(g, nil)
				r.flushed = true
			})
			sel.Select(g)
		}
	})
}

// settleListener lets the listener handle everything delivered to it in
// this workflow task (signals are handed to its waiting selector, not
// buffered in the channels), then returns: a decision that must not miss
// a revoke or the deadline (continue-as-new) is taken after it.
func (r *run) settleListener(ctx workflow.Context) {
	r.flushed = false
	r.flush.SendAsync(true)
	_ = workflow.Await(ctx, func() bool { return r.flushed })
}

// drainSignals applies every signal still buffered, without blocking
// (before a continue-as-new, so that none is lost); reconcile requests
// are noted and carried, not read.
func (r *run) drainSignals(ctx workflow.Context) {
	drain := func(c workflow.ReceiveChannel, handle func(workflow.Context, converter.RawValue)) {
		for {
			var raw converter.RawValue
			if !c.ReceiveAsync(&raw) {
				return
			}
			handle(ctx, raw)
		}
	}
	drain(r.sig.input, r.onInput)
	drain(r.sig.rediscover, r.onRediscover)
	drain(r.sig.resolve, r.onResolve)
	drain(r.sig.revoke, r.onRevoke)
	drain(r.sig.reconcile, func(workflow.Context, converter.RawValue) { r.reconcileAsked = true })
}

func (r *run) onInput(g workflow.Context, raw converter.RawValue) {
	var a contracts.Answer
	if err := decodePayload(raw, &a, true); err != nil {
		r.ignore(g, contracts.ProvideInput, err, raw)
		return
	}
	if err := r.checkAnswer(a); err != nil {
		r.s.IgnoredAnswers++
		r.ignore(g, contracts.ProvideInput, err, raw)
		return
	}
	r.pending, r.pendingVia = &a, "signal"
}

func (r *run) onRediscover(g workflow.Context, raw converter.RawValue) {
	if r.s.A2AState == string(contracts.PhaseCardChanged) {
		r.rediscover = true
		return
	}
	if r.v >= VersionCarryInput {
		r.ignore(g, contracts.SignalRediscover, fmt.Errorf("no card change is pending (state %q)", r.s.A2AState), raw)
	}
}

func (r *run) onResolve(g workflow.Context, raw converter.RawValue) {
	var res contracts.Resolution
	err := decodePayload(raw, &res, true)
	if err == nil {
		err = res.Validate()
	}
	if err == nil && r.s.Unknown == nil {
		err = fmt.Errorf("no send with an unknown outcome is pending (state %q)", r.s.A2AState)
	}
	if err != nil {
		r.ignore(g, contracts.ResolveUnknown, err, raw)
		return
	}
	if r.resolution == nil {
		r.resolution = &res
	}
}

// readCancelReason takes the reason of the cancel being handled from
// Signal "cancel-reason" (sent before the cancel request, so already
// delivered): the last readable one wins; an unreadable one is recorded
// under ignored_signals. Reads only what is buffered: no command.
func (r *run) readCancelReason(g workflow.Context) {
	if r.sig.cancelReason == nil {
		return
	}
	for {
		var raw converter.RawValue
		if !r.sig.cancelReason.ReceiveAsync(&raw) {
			return
		}
		var p struct {
			Reason string `json:"reason"`
		}
		if err := decodePayload(raw, &p, true); err != nil {
			r.ignore(g, contracts.SignalCancelReason, err, raw)
			continue
		}
		if reason := strings.TrimSpace(p.Reason); reason != "" {
			r.s.CancelReason = contracts.Truncate(reason, 1000)
		}
	}
}

// onRevoke applies a revoke whatever its payload: a payload that does not
// decode is recorded and the revoke stands.
func (r *run) onRevoke(g workflow.Context, raw converter.RawValue) {
	var p struct {
		Reason string `json:"reason"`
	}
	if err := decodePayload(raw, &p, false); err != nil {
		r.ignore(g, contracts.SignalRevoke, fmt.Errorf("payload not read (the revoke is applied): %w", err), raw)
		p.Reason = ""
	}
	r.applyRevoke(g, p.Reason)
}

func (r *run) applyRevoke(g workflow.Context, reason string) {
	if r.revoked != nil {
		return
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "revoked by an operator"
	}
	reason = contracts.Truncate(reason, 1000)
	r.revoked = &reason
	r.s.Authorizations = append(r.s.Authorizations, contracts.AuthorizationRecord{
		AuthorizationDecision: contracts.AuthorizationDecision{Allowed: false, Reason: "Signal revoke: " + reason, Policy: "signal"},
		Round:                 r.s.InputRounds, At: workflow.Now(g)})
}

// onReconcile starts a read beside the listener, never inside it: a slow
// agent must not hold the deadline or a revoke. Reads asked for while one
// runs are folded into it.
func (r *run) onReconcile(g workflow.Context, _ converter.RawValue) {
	if r.v < VersionCarryInput {
		// Histories recorded before VersionCarryInput read inside the
		// listener.
		r.reconcile(g)
		return
	}
	if r.reconciling {
		r.addReconciliation(contracts.Reconciliation{At: workflow.Now(g), Before: r.s.A2AState, Error: "a read is already running; this request was folded into it"})
		return
	}
	r.reconciling = true
	workflow.Go(g, func(rc workflow.Context) {
		defer func() { r.reconciling = false }()
		r.reconcile(rc)
	})
}

// maxIgnoredSignals bounds contracts.State.IgnoredSignals (the oldest are dropped;
// IgnoredSignalCount keeps counting).
const maxIgnoredSignals = 20

// receiveRaw receives one signal without decoding it (a converter.RawValue
// never fails to decode, so the SDK never drops it and blocks).
func receiveRaw(ctx workflow.Context, c workflow.ReceiveChannel) converter.RawValue {
	var raw converter.RawValue
	c.Receive(ctx, &raw)
	return raw
}

// decodePayload decodes a JSON object payload strictly into v
// (contracts.DecodeObject); required: a missing payload is an error.
func decodePayload(raw converter.RawValue, v any, required bool) error {
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 {
		if required {
			return &contracts.FieldError{Field: "(payload)", Rule: "required: a JSON object"}
		}
		return nil
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return &contracts.FieldError{Field: "(payload)", Rule: fmt.Sprintf("encoding %q: want %s", contracts.Truncate(enc, 64), converter.MetadataEncodingJSON)}
	}
	if !required && strings.TrimSpace(string(p.GetData())) == "null" {
		return nil
	}
	if err := contracts.DecodeObject(p.GetData(), v); err != nil {
		var fe *contracts.FieldError
		if errors.As(err, &fe) && fe.Field == "(document)" {
			return &contracts.FieldError{Field: "(payload)", Rule: "must be a JSON object, such as " + payloadExample(v)}
		}
		return err
	}
	return nil
}

// payloadExample is what a person should type for v.
func payloadExample(v any) string {
	switch v.(type) {
	case *contracts.Answer:
		return `{"text": "...", "answered_by": "your name"}`
	case *contracts.Resolution:
		return `{"action": "resend"}`
	}
	return `{"reason": "..."}`
}

// invalidInput is the error an Update's validator returns for a payload
// that does not decode or validate: not retryable (the same payload would
// be refused again), type ErrTypeInvalidInput.
func invalidInput(err error) error {
	if err == nil {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidInput, nil)
}

// ErrTypeInvalidInput is the ApplicationError type of an Update refused by
// its validator.
const ErrTypeInvalidInput = "invalid_input"

// ignore records a signal payload that was not applied, and shows it.
func (r *run) ignore(ctx workflow.Context, signal string, err error, raw converter.RawValue) {
	var data []byte
	if p := raw.Payload(); p != nil {
		data = p.GetData()
	}
	rec := contracts.IgnoredSignal{Name: signal, Reason: contracts.Truncate(err.Error(), 500), Size: len(data), Time: workflow.Now(ctx)}
	if len(data) > 0 {
		rec.Excerpt = contracts.Truncate(strings.ToValidUTF8(string(data), "\uFFFD"), 200)
	}
	r.s.IgnoredSignalCount++
	r.s.IgnoredSignals = append(r.s.IgnoredSignals, rec)
	if n := len(r.s.IgnoredSignals); n > maxIgnoredSignals {
		r.s.IgnoredSignals = append([]contracts.IgnoredSignal(nil), r.s.IgnoredSignals[n-maxIgnoredSignals:]...)
	}
	if r.s.Question != nil {
		workflow.SetCurrentDetails(ctx, questionDetails(r.d, r.s, r.wfID))
	} else {
		r.details(ctx)
	}
}
