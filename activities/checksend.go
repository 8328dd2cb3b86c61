package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// CardInUse is what a delegation keeps of the card it uses, to tell a
// change of card that matters from one that does not (A2A 1.0 §8.6).
type CardInUse struct {
	Interface contracts.Interface        `json:"interface"`
	Signature contracts.CardVerification `json:"signature"`
}

// CardChange says what changed between the card in use and a new one in a
// way that matters to a delegation of skill, or "" when nothing it uses
// did: the skill is gone, the selected interface changed or none is
// usable, the signer changed, or the card is no longer trusted. Pure: the
// workflow calls it too.
func CardChange(inUse CardInUse, card ResolvedCard, skill string) string {
	var what []string
	if !card.SkillFound {
		what = append(what, fmt.Sprintf("skill %q is gone", skill))
	}
	if card.InterfaceError != "" {
		what = append(what, "no usable interface: "+card.InterfaceError)
	} else {
		old, nw := inUse.Interface, card.Interface
		if old.URL != nw.URL || old.Binding != nw.Binding || old.Version != nw.Version {
			what = append(what, fmt.Sprintf("interface changed from %s %s %s to %s %s %s", old.Binding, old.Version, old.URL, nw.Binding, nw.Version, nw.URL))
		}
	}
	if card.Verification.KeyID != inUse.Signature.KeyID || card.Verification.Status != inUse.Signature.Status {
		what = append(what, fmt.Sprintf("signer changed from %s to %s", inUse.Signature.Label(), card.Verification.Label()))
	}
	if !card.Trusted() {
		what = append(what, "the card is no longer trusted")
	}
	return strings.Join(what, "; ")
}

// Usable reports whether a card can be used for a send: trusted, offering
// the skill, with a usable interface.
func (r ResolvedCard) Usable() bool {
	return r.Trusted() && r.SkillFound && r.InterfaceError == ""
}

// CheckAndSendInput is one send with the checks that come before it.
type CheckAndSendInput struct {
	Card ResolveCardInput `json:"card"`
	// InUse is the card the delegation uses; nil for the first send.
	InUse *CardInUse `json:"in_use,omitempty"`
	// AcceptChange sends on a card that changed in a way that matters,
	// if it is usable (an operator sent rediscover).
	AcceptChange bool `json:"accept_change,omitempty"`
	// Authorization is checked before the send; its AgentOrigin is the
	// origin of the card used.
	Authorization AuthorizationInput `json:"authorization"`
	// Send is the message; its Interface is the card's selected one.
	Send SendInput `json:"send"`
}

// CheckAndSendResult says what was checked and whether the message went.
type CheckAndSendResult struct {
	// Card is the card as resolved now.
	Card ResolvedCard `json:"card"`
	// Change is CardChange against InUse ("" for the first send).
	Change string `json:"change,omitempty"`
	// Refused says why nothing was sent because of the card (the first
	// send: untrusted, no skill, no interface, input modes; a follow-up:
	// a change that matters, not accepted).
	Refused string `json:"refused,omitempty"`
	// Authorization is the decision, nil when the card was refused first.
	Authorization *contracts.AuthorizationDecision `json:"authorization,omitempty"`
	// Sent is true when SendMessage answered; Snapshot is its task.
	Sent     bool                   `json:"sent"`
	Snapshot contracts.TaskSnapshot `json:"snapshot"`
}

// CheckAndSend runs, in one activity, the steps before a send and the
// send: ResolveCard (cached by the fetcher; change detection for a
// follow-up, A2A 1.0 §8.6), the input modes of a first message (A2A 1.0
// §4.4.5), CheckAuthorization, then SendMessage (A2A 1.0 §3.1.1) on the
// card's selected interface. A refusal is data (Refused, Authorization),
// with nothing sent. Errors are those of ResolveCard and SendMessage, with
// the same types; an error after the checks carries the CheckAndSendResult
// so far as its details, so that the workflow still knows the card used
// (a send whose outcome is unknown may have created a task on it).
func (a *Activities) CheckAndSend(ctx context.Context, in CheckAndSendInput) (CheckAndSendResult, error) {
	stop := keepHeartbeating(ctx, 3*time.Second)
	defer stop()
	card, err := a.ResolveCard(ctx, in.Card)
	if err != nil {
		return CheckAndSendResult{}, err
	}
	res := CheckAndSendResult{Card: card}
	switch {
	case in.InUse == nil:
		if !card.Usable() {
			res.Refused = "card"
			return res, nil
		}
		if err := contracts.CheckInputModes(card.InputModes, contracts.MessageModes(in.Send.Message.Text, in.Send.Message.Data)); err != nil {
			res.Refused = err.Error()
			return res, nil
		}
	default:
		res.Change = CardChange(*in.InUse, card, in.Card.Skill)
		if res.Change != "" && !(in.AcceptChange && card.Usable()) {
			res.Refused = res.Change
			return res, nil
		}
	}
	auth := in.Authorization
	auth.AgentOrigin = card.Interface.CardOrigin
	dec, err := a.CheckAuthorization(ctx, auth)
	if err != nil {
		return res, err
	}
	res.Authorization = &dec
	if !dec.Allowed {
		return res, nil
	}
	send := in.Send
	send.Interface = card.Interface
	snap, err := a.SendMessage(ctx, send)
	if err != nil {
		return res, withDetails(err, res)
	}
	if in.InUse == nil && card.PushNotifications && a.Push != nil && snap.TaskID != "" && !snap.State.Terminal() {
		snap.PushConfigured = a.registerPush(ctx, send, snap.TaskID)
	}
	res.Sent, res.Snapshot = true, snap
	return res, nil
}

// registerPush asks the agent to push the task's changes to the webhook
// (CreateTaskPushNotificationConfig), with a token derived for this
// delegation and task (push.Token: never in history). A failure is
// logged, and the task is then read at the waiting cadence.
func (a *Activities) registerPush(ctx context.Context, send SendInput, taskID string) bool {
	c, err := a.dial(ctx, send.Interface, send.CredentialRef, send.Limits)
	if err == nil {
		defer c.Close()
		wid := workflowID(ctx)
		origin := send.Interface.CardOrigin
		err = c.CreatePushConfig(ctx, taskID, a.Push.URL(wid, origin), a.Push.Token(wid, taskID, origin))
	}
	if err != nil {
		a.logger().Warn("push config refused; the task is read at the waiting cadence", "workflow_id", workflowID(ctx), "task_id", taskID, "error", err)
		return false
	}
	return true
}

// withDetails adds details to an ApplicationError, keeping its message,
// type, retryability and category.
func withDetails(err error, details any) error {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(ae.Message(), ae.Type(), temporal.ApplicationErrorOptions{
		NonRetryable: ae.NonRetryable(), Category: ae.Category(), Details: []any{details},
	})
}
