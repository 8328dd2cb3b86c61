package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

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
			r.box.putResolution(res)
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
				if r.box.hasResolution() {
					return errors.New("this unknown outcome was already resolved")
				}
				return nil
			},
		})
}

// signals are the delegation's signal channels.
type signals struct {
	input, rediscover, resolve, revoke, reconcile, taskUpdate workflow.ReceiveChannel
	// cancelReason is read only when the delegation is canceled
	// (readCancelReason).
	cancelReason workflow.ReceiveChannel
}

// listen runs the one goroutine of a delegation besides its main one: it
// receives every Signal (provide-input, rediscover, resolve-unknown,
// revoke, reconcile, task-update); the deadline is a timer of its own
// (arm), read by interrupt. One goroutine, not one per channel, keeps a
// cached waiting delegation small in the worker. Every payload is received
// raw (that never fails) and decoded by the handlers, so a payload of the
// wrong shape (or sealed with a key the worker lacks) is recorded and
// refused by name instead of stalling this goroutine, which owns the
// revoke.
func (r *run) listen(ctx workflow.Context) {
	sig := func(name, desc string) workflow.ReceiveChannel {
		return workflow.GetSignalChannelWithOptions(ctx, name, workflow.SignalChannelOptions{Description: desc})
	}
	r.sig = signals{
		input:        sig(contracts.ProvideInput, `Answer the remote agent's question: {"text": "...", "data": {...}, "answered_by": "name", "round": N (optional)}; for AUTH_REQUIRED {"credential_ref": "name"}.`),
		rediscover:   sig(contracts.SignalRediscover, "Accept the agent's new card after a change that stopped the delegation (state card-changed): it is negotiated again and used. Payload: none."),
		resolve:      sig(contracts.ResolveUnknown, `Resolve a send whose outcome is unknown: {"action": "resend" | "adopt" | "abandon", "task_id": "..." (for adopt)}.`),
		revoke:       sig(contracts.SignalRevoke, `Withdraw the delegation's authorization: nothing more is sent, the remote task is canceled, status authorization_denied. Payload {"reason": "..."}.`),
		reconcile:    sig(contracts.SignalReconcile, "Read the remote task once now (GetTask) and record what was seen. Payload: none."),
		taskUpdate:   sig(contracts.SignalTaskUpdate, `A push from the remote agent, relayed by delegate webhook: {"task_id": "...", "state": "...", "timestamp": "..."}. A hint: the task is read before anything is done.`),
		cancelReason: sig(contracts.SignalCancelReason, `The reason of a cancel requested next (delegate cancel --reason): {"reason": "..."}; shown in the state and the Outcome. It cancels nothing by itself.`),
	}
	r.flush = workflow.NewBufferedChannel(ctx, 1)
	workflow.Go(ctx, func(g workflow.Context) {
		// The deadline timer is started by arm, and read by interrupt.
		for {
			sel := workflow.NewSelector(g)
			on := func(c workflow.ReceiveChannel, handle func(workflow.Context, converter.RawValue)) {
				sel.AddReceive(c, func(c workflow.ReceiveChannel, _ bool) {
					handle(g, receiveRaw(g, c))
				})
			}
			on(r.sig.input, r.onInput)
			on(r.sig.rediscover, r.onRediscover)
			on(r.sig.resolve, r.onResolve)
			on(r.sig.revoke, r.onRevoke)
			on(r.sig.reconcile, r.onReconcile)
			on(r.sig.taskUpdate, r.onTaskUpdate)
			// Last, so that every signal delivered in the same workflow
			// task is handled first (see settleListener).
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
	_ = r.wait(ctx, settling, func() bool { return r.flushed })
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
	drain(r.sig.reconcile, func(workflow.Context, converter.RawValue) { r.box.askReconcile() })
	drain(r.sig.taskUpdate, r.onTaskUpdate)
}

// onTaskUpdate takes a push for the delegation's task: the next read is
// due now. A push for another task, or for a delegation that does not
// follow its task by push, is recorded and ignored.
func (r *run) onTaskUpdate(g workflow.Context, raw converter.RawValue) {
	var u contracts.TaskUpdate
	if err := decodePayload(raw, &u, true); err != nil {
		r.ignore(g, contracts.SignalTaskUpdate, err, raw)
		return
	}
	switch {
	case !r.s.Push:
		r.ignore(g, contracts.SignalTaskUpdate, errors.New("this delegation does not follow its task by push"), raw)
	case u.TaskID != r.s.RemoteTaskID:
		r.ignore(g, contracts.SignalTaskUpdate, fmt.Errorf("a push for task %q; this delegation follows %q", contracts.Truncate(u.TaskID, 200), r.s.RemoteTaskID), raw)
	default:
		r.box.offerPush()
		r.s.Pushes++
	}
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
	r.box.offerAnswer(a, "signal")
}

func (r *run) onRediscover(g workflow.Context, raw converter.RawValue) {
	if r.s.A2AState == string(contracts.PhaseCardChanged) {
		r.box.acceptRediscover()
		return
	}
	r.ignore(g, contracts.SignalRediscover, fmt.Errorf("no card change is pending (state %q)", r.s.A2AState), raw)
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
	r.box.offerResolution(res)
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
		var p contracts.Revocation
		if err := decodePayload(raw, &p, true); err != nil {
			r.ignore(g, contracts.SignalCancelReason, err, raw)
			continue
		}
		// The last reason sent stands; an empty one (a cancel given none)
		// clears an earlier stray one.
		r.s.CancelReason = contracts.Truncate(strings.TrimSpace(p.Reason), contracts.MaxCancelReason)
	}
}

// onRevoke applies a revoke whatever its payload: a payload that does not
// decode is recorded and the revoke stands.
func (r *run) onRevoke(g workflow.Context, raw converter.RawValue) {
	var p contracts.Revocation
	if err := decodePayload(raw, &p, false); err != nil {
		r.ignore(g, contracts.SignalRevoke, fmt.Errorf("payload not read (the revoke is applied): %w", err), raw)
		p.Reason = ""
	}
	r.applyRevoke(g, p.Reason)
}

func (r *run) applyRevoke(g workflow.Context, reason string) {
	if _, ok := r.box.isRevoked(); ok {
		return
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "revoked by an operator"
	}
	reason = contracts.Truncate(reason, 1000)
	r.box.revoke(reason)
	r.s.Authorizations = append(r.s.Authorizations, contracts.AuthorizationRecord{
		AuthorizationDecision: contracts.AuthorizationDecision{Allowed: false, Reason: "Signal revoke: " + reason, Policy: "signal"},
		Round:                 r.s.InputRounds, At: workflow.Now(g)})
}

// onReconcile starts a read beside the listener, never inside it: a slow
// agent must not hold the deadline or a revoke. Reads asked for while one
// runs are folded into it.
func (r *run) onReconcile(g workflow.Context, _ converter.RawValue) {
	if !r.box.startReconcile() {
		r.addReconciliation(contracts.Reconciliation{At: workflow.Now(g), Before: r.s.A2AState, Error: "a read is already running; this request was folded into it"})
		return
	}
	workflow.Go(g, func(rc workflow.Context) {
		defer r.box.endReconcile()
		r.reconcile(rc)
	})
}
