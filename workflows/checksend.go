package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// checkAndSend sends round n as one CheckAndSend activity: the card check,
// the authorization and the send. It is retried (a transient failure, with
// backoff, until the deadline; see retrying). A follow-up on a card that
// changed in a way that matters waits in "card-changed" for Signal
// "rediscover".
func (r *run) checkAndSend(ctx workflow.Context, round int, text string, data json.RawMessage, credentialRef string) (contracts.TaskSnapshot, error) {
	for {
		prev := r.s.A2AState
		r.setState(ctx, string(contracts.PhaseSending))
		opts := r.sendOptions()
		opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		t, attempts, err := retrying(ctx, r, "CheckAndSend", func() (sendTry, error) {
			t, err := r.trySend(ctx, opts, round, text, data, credentialRef)
			if err != nil && round > 0 && transient(err) && r.interrupt() == nil {
				// A follow-up refused with what looks transient may be
				// refused because the agent has ended the task.
				if ended, ok := r.readTerminal(ctx); ok {
					return t, &endedError{snap: ended, cause: errorText(err), unknown: deliveryUnknown(err)}
				}
			}
			return t, err
		}, func() (sendTry, error) {
			return r.trySend(ctx, r.handoverOptions(ctx, r.sendOptions()), round, text, data, credentialRef)
		})
		if err != nil {
			return contracts.TaskSnapshot{}, err
		}
		in, res := t.in, t.res
		if res.Sent {
			snap := res.Snapshot
			snap.Attempt = attempts
			if snap.PushConfigured {
				r.s.Push = true
			}
			return snap, nil
		}
		if a := res.Authorization; a != nil && !a.Allowed {
			return contracts.TaskSnapshot{}, denied(a.Reason)
		}
		if in.InUse == nil {
			return contracts.TaskSnapshot{}, r.refusal(res)
		}
		// A follow-up on a card that changed in a way that matters.
		if r.box.rediscoverAccepted() && !res.Card.Trusted() {
			return contracts.TaskSnapshot{}, r.untrustedAfterRediscover(res.Card)
		}
		if err := r.awaitRediscover(ctx, res.Card.Agent.CardDigest, res.Change); err != nil {
			return contracts.TaskSnapshot{}, err
		}
		r.setState(ctx, prev)
	}
}

// sendTry is one CheckAndSend attempt: its input, built from the state as
// it was then (a card adopted by an earlier attempt is the one in use), and
// its result.
type sendTry struct {
	in  contracts.CheckAndSendInput
	res contracts.CheckAndSendResult
}

// trySend makes one CheckAndSend attempt with opts and records what it
// checked (applyChecks).
func (r *run) trySend(ctx workflow.Context, opts workflow.ActivityOptions, round int, text string, data json.RawMessage, credentialRef string) (sendTry, error) {
	t := sendTry{in: r.checkSendInput(round, text, data, credentialRef)}
	err := r.checkSendActivity(ctx, opts, round, t.in, &t.res)
	r.applyChecks(ctx, t.in, t.res)
	return t, err
}

// checkSendInput is CheckAndSend's input for round n from the state now.
func (r *run) checkSendInput(round int, text string, data json.RawMessage, credentialRef string) contracts.CheckAndSendInput {
	in := contracts.CheckAndSendInput{
		Card:         contracts.ResolveCardInput{CardURL: r.d.AgentCardURL, Skill: r.d.Skill, RequireSignature: r.d.RequireSignedCard},
		AcceptChange: r.box.rediscoverAccepted(),
		Authorization: contracts.AuthorizationInput{LocalWorkflowID: r.d.LocalWorkflowID, Skill: r.d.Skill,
			Purpose: r.d.Purpose, Deadline: r.d.Deadline, Round: round},
		Send: contracts.SendInput{Limits: r.d.EffectiveLimits(), CredentialRef: credentialRef, Message: contracts.OutboundMessage{
			MessageID: MessageID(r.wfID, r.firstRunID, round), TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Text: text, Data: data,
		}},
	}
	if r.d.SendTimeout != "" {
		in.Send.Timeout, in.Send.Deadline = r.d.SendTimeoutOf(), r.d.Deadline
	}
	if r.s.Interface.URL != "" {
		in.InUse = &contracts.CardInUse{Interface: r.s.Interface, Signature: r.s.Signature}
	}
	return in
}

// applyChecks records what a CheckAndSend checked: the card (adopted
// when usable; a change of card is recorded) and the authorization.
func (r *run) applyChecks(ctx workflow.Context, in contracts.CheckAndSendInput, res contracts.CheckAndSendResult) {
	card := res.Card
	if card.Agent.CardDigest == "" {
		return // the card was not resolved
	}
	if in.InUse == nil {
		r.s.Agent, r.s.Signature = card.Agent, card.Verification
		if card.Usable() {
			r.adopt(ctx, card)
		}
	} else {
		if card.Agent.CardDigest != r.s.Agent.CardDigest || res.Change != "" {
			r.s.CardChanges = append(r.s.CardChanges, contracts.CardChange{At: workflow.Now(ctx), OldDigest: r.s.Agent.CardDigest,
				NewDigest: card.Agent.CardDigest, Matters: res.Change != "", What: res.Change, Accepted: in.AcceptChange})
		}
		if res.Refused == "" {
			r.adopt(ctx, card)
			r.box.dropRediscover()
		}
	}
	if a := res.Authorization; a != nil {
		// One record per round and decision: a retried send checks again,
		// and only a different decision is recorded again.
		n := len(r.s.Authorizations)
		if n == 0 || r.s.Authorizations[n-1].Round != in.Authorization.Round || r.s.Authorizations[n-1].AuthorizationDecision != *a {
			r.s.Authorizations = append(r.s.Authorizations, contracts.AuthorizationRecord{AuthorizationDecision: *a, Round: in.Authorization.Round, At: workflow.Now(ctx)})
		}
	}
}

// refusal is the outcome of a first send refused because of the card.
// offered lists the skills a card offers, for a refusal naming the one
// it does not.
func offered(skills []string) string {
	if len(skills) == 0 {
		return "; it offers none"
	}
	q := make([]string, len(skills))
	for i, s := range skills {
		q[i] = strconv.Quote(s)
	}
	return "; it offers " + strings.Join(q, ", ")
}

func (r *run) refusal(res contracts.CheckAndSendResult) error {
	c := res.Card
	switch {
	case !c.Trusted():
		return refused(contracts.StatusCardUntrusted, "nothing sent: a verified card signature is required; the card is "+c.Verification.Status+reasonSuffix(c.Verification.Reason))
	case !c.SkillFound:
		return refused(contracts.StatusProtocolError, fmt.Sprintf("nothing sent: the card of %q offers no skill %q%s%s", c.Agent.Name, r.d.Skill, offered(c.Skills), extendedSuffix(c)))
	case c.InterfaceError != "":
		return refused(contracts.StatusProtocolError, "nothing sent: "+c.InterfaceError)
	}
	return refused(contracts.StatusProtocolError, "nothing sent: "+res.Refused)
}

// checkSendActivity runs CheckAndSend as sendActivity runs SendMessage. A
// failed one's details (the checks made before the send) are read into
// out.
func (r *run) checkSendActivity(ctx workflow.Context, opts workflow.ActivityOptions, round int, in contracts.CheckAndSendInput, out *contracts.CheckAndSendResult) error {
	return r.inFlight(ctx, opts, round, in.Send.Message.MessageID, contracts.ActivityCheckAndSend, in, func(c workflow.Context, f workflow.Future) (contracts.TaskSnapshot, error) {
		err := f.Get(c, out)
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && ae.HasDetails() {
			_ = ae.Details(out)
		}
		if err != nil || !out.Sent {
			return contracts.TaskSnapshot{}, err
		}
		return out.Snapshot, nil
	})
}

// extendedSuffix says why the authenticated extended card a card declares
// was not used, when it was not (its skills are then unknown).
func extendedSuffix(c contracts.ResolvedCard) string {
	if c.ExtendedCardError == "" {
		return ""
	}
	return "; its authenticated extended card was not used: " + c.ExtendedCardError
}
