package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// CheckAndSend runs, in one activity, the steps before a send and the
// send: ResolveCard (cached by the fetcher; change detection for a
// follow-up, A2A 1.0 §8.6), the input modes of a first message (A2A 1.0
// §4.4.5), CheckAuthorization, then SendMessage (A2A 1.0 §3.1.1) on the
// card's selected interface. A refusal is data (Refused, Authorization),
// with nothing sent. Errors are those of ResolveCard and SendMessage, with
// the same types; an error after the checks carries the contracts.CheckAndSendResult
// so far as its details, so that the workflow still knows the card used
// (a send whose outcome is unknown may have created a task on it).
func (a *Activities) CheckAndSend(ctx context.Context, in contracts.CheckAndSendInput) (contracts.CheckAndSendResult, error) {
	ctx = withDelegation(ctx, in.Send.Message.TaskID, contracts.Interface{}, in.Card.CardURL)
	stop := keepHeartbeating(ctx, 3*time.Second)
	defer stop()
	card, err := a.ResolveCard(ctx, in.Card)
	if err != nil {
		return contracts.CheckAndSendResult{}, err
	}
	res := contracts.CheckAndSendResult{Card: card}
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
		res.Change = in.InUse.WhatChanged(card, in.Card.Skill)
		if res.Change != "" && a.Observer != nil {
			a.Observer.CardVerification("changed")
		}
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
	// A first message to an agent that streams goes by
	// SendStreamingMessage: the task id is known from its first event.
	send.Stream = in.InUse == nil && card.Streaming && send.Message.TaskID == ""
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
func (a *Activities) registerPush(ctx context.Context, send contracts.SendInput, taskID string) bool {
	c, err := a.dial(ctx, send.Interface, send.CredentialRef, send.Limits)
	if err == nil {
		defer c.Close()
		wid := workflowID(ctx)
		origin := send.Interface.CardOrigin
		err = c.CreatePushConfig(ctx, taskID, a.Push.URL(wid, origin), a.Push.Token(wid, taskID, origin))
	}
	if err != nil {
		a.log(withDelegation(ctx, taskID, send.Interface, "")).Warn("push config refused; the task is read at the waiting cadence", "error", err)
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
