package client

import (
	"context"
	"errors"
	"fmt"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

// Revoke withdraws the delegation's authorization (Signal "revoke"): the
// workflow sends nothing more, cancels the remote task and ends
// "authorization_denied" with reason (at most 1000 bytes kept). Errors:
// the Temporal error (for example, the delegation has ended).
func (h *Handle) Revoke(ctx context.Context, reason string) error {
	return h.c.SignalWorkflow(ctx, h.id, "", contracts.SignalRevoke, contracts.Revocation{Reason: reason})
}

// Resolve settles a send whose outcome is unknown (Update
// "resolve-unknown", docs/operations.md): resend (same messageId), adopt a
// task the agent created (read with GetTask first), or abandon. It returns
// the action the workflow took. Errors: an invalid resolution
// (Resolution.Validate), or the workflow's refusal (no unknown outcome is
// pending, ...).
func (h *Handle) Resolve(ctx context.Context, res contracts.Resolution) (string, error) {
	if err := res.Validate(); err != nil {
		return "", err
	}
	u, err := h.c.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: h.id, UpdateName: contracts.ResolveUnknown, Args: []any{res},
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return "", err
	}
	var action string
	err = u.Get(ctx, &action)
	return action, err
}

// ErrNotCardChanged is returned by Rediscover for a delegation that is not
// waiting on a card change.
var ErrNotCardChanged = errors.New("not waiting on a card change")

// Rediscover accepts the agent's changed card (Signal "rediscover"): the
// delegation negotiates it again and carries on. It is refused, with
// ErrNotCardChanged, unless the delegation waits in state "card-changed"
// (read with Query "state", so it needs a running worker).
func (h *Handle) Rediscover(ctx context.Context) error {
	s, err := h.State(ctx)
	if err != nil {
		return err
	}
	if s.A2AState != string(contracts.PhaseCardChanged) {
		return fmt.Errorf("%s: %w (state %q)", h.id, ErrNotCardChanged, s.A2AState)
	}
	return h.c.SignalWorkflow(ctx, h.id, "", contracts.SignalRediscover, nil)
}

// Reconcile asks the delegation to read its remote task once now (Signal
// "reconcile"); what it saw is added to State().Reconciliations.
func (h *Handle) Reconcile(ctx context.Context) error {
	return h.c.SignalWorkflow(ctx, h.id, "", contracts.SignalReconcile, nil)
}

// TaskUpdate relays a push notification the webhook authenticated
// (Signal "task-update", package push). The workflow takes it as a hint
// and reads the task before it acts. Errors: the Temporal error
// (serviceerror.NotFound when no such delegation is running).
func (h *Handle) TaskUpdate(ctx context.Context, u contracts.TaskUpdate) error {
	return h.c.SignalWorkflow(ctx, h.id, "", contracts.SignalTaskUpdate, u)
}
