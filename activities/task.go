package activities

import (
	"context"
	"errors"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// GetTask reads the task once (A2A 1.0 §3.1.3): for adopting a task after
// an unknown outcome, and for reconciliation. Errors: "transient",
// "authorization", "protocol" (TaskNotFound).
func (a *Activities) GetTask(ctx context.Context, in contracts.GetTaskInput) (contracts.TaskSnapshot, error) {
	ctx = withDelegation(ctx, in.TaskID, in.Interface, "")
	c, err := a.dial(ctx, in.Interface, "", in.Limits)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "GetTask", err, in.Limits)
	}
	defer c.Close()
	snap, err := c.GetTask(ctx, in.TaskID, in.ContextID)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "GetTask", err, in.Limits)
	}
	return bound(snap, in.Limits), nil
}

// CancelTask asks the agent to cancel the task (A2A 1.0 §3.1.5) and returns
// the task as reported. Errors: "protocol" (TaskNotCancelable,
// TaskNotFound), "authorization", "transient".
func (a *Activities) CancelTask(ctx context.Context, in contracts.CancelInput) (contracts.TaskSnapshot, error) {
	ctx = withDelegation(ctx, in.TaskID, in.Interface, "")
	c, err := a.dial(ctx, in.Interface, "", contracts.Limits{})
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "CancelTask", err, contracts.Limits{})
	}
	defer c.Close()
	snap, err := c.CancelTask(ctx, in.TaskID, in.ContextID)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "CancelTask", err, contracts.Limits{})
	}
	return snap, nil
}

// FindTask looks for the task that the message in.MessageID, whose send's
// outcome is unknown, may have created (a2aclient.FindTaskByMessage: A2A
// 1.0 ListTasks, §3.1.4). What it finds, and that the agent serves no
// ListTasks, are results; a failure to look is a result too (Error), so
// that the workflow goes on with its policy. Errors: "transient" only
// (retried): the agent did not answer the card's fetch or ListTasks.
func (a *Activities) FindTask(ctx context.Context, in contracts.FindTaskInput) (contracts.FindTaskResult, error) {
	var res contracts.FindTaskResult
	ctx = withDelegation(ctx, "", in.Interface, in.Card.CardURL)
	if in.Interface.URL == "" {
		card, err := a.ResolveCard(ctx, in.Card)
		if err != nil {
			if ae := (*temporal.ApplicationError)(nil); errors.As(err, &ae) && ae.Type() == string(contracts.CategoryTransient) {
				// The agent's host did not answer: the look is tried
				// again, as a ListTasks that did not get through is.
				return contracts.FindTaskResult{}, err
			}
			return contracts.FindTaskResult{Error: contracts.CutText("resolving the card: "+err.Error(), 500)}, nil
		}
		if !card.Usable() {
			return contracts.FindTaskResult{Card: &card, Error: "the card is not usable"}, nil
		}
		res.Card, in.Interface = &card, card.Interface
	}
	c, err := a.dial(ctx, in.Interface, in.CredentialRef, in.Limits)
	if err != nil {
		res.Error = contracts.CutText(err.Error(), 500)
		return res, nil
	}
	defer c.Close()
	snap, found, err := c.FindTaskByMessage(ctx, in.MessageID, in.Since)
	var ce *a2aclient.CallError
	switch {
	case err == nil:
		res.Found = found
		if found {
			res.Snapshot = bound(snap, in.Limits)
		}
		return res, nil
	case errors.Is(err, a2aclient.ErrListNotOffered):
		res.NotOffered = true
		return res, nil
	case errors.As(err, &ce) && ce.Retryable():
		return contracts.FindTaskResult{}, a.callFail(ctx, "FindTask", err, in.Limits)
	}
	res.Error = contracts.CutText(err.Error(), in.Limits.WithDefaults().MaxTextChars)
	return res, nil
}

// CheckCredential checks that in.Ref names a credential of the worker's
// store bound to the origin of in.Interface (a2aclient.Credentials.ForRef),
// for the Update provide-input to refuse a bad ref at once. The answer is
// never a secret: "" or why the ref is refused. Errors: none (a refusal is
// a result).
func (a *Activities) CheckCredential(ctx context.Context, in contracts.CheckCredentialInput) (contracts.CheckCredentialResult, error) {
	origin, err := cards.InterfaceOrigin(in.Interface)
	if err == nil {
		_, err = a.Credentials.ForRef(in.Ref, origin)
	}
	switch {
	case err == nil:
		return contracts.CheckCredentialResult{}, nil
	case errors.Is(err, a2aclient.ErrRefUnknown):
		return contracts.CheckCredentialResult{Refused: "credential_ref " + in.Ref + " is not in the worker's credential store"}, nil
	}
	return contracts.CheckCredentialResult{Refused: "credential_ref " + in.Ref + " may not be sent to this agent: " + contracts.CutText(err.Error(), 500)}, nil
}
