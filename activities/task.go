package activities

import (
	"context"

	"github.com/a2adelegate/delegate/contracts"
)

// GetTask reads the task once (A2A 1.0 §3.1.3): for adopting a task after
// an unknown outcome, and for reconciliation. Errors: "transient",
// "authorization", "protocol" (TaskNotFound).
func (a *Activities) GetTask(ctx context.Context, in contracts.GetTaskInput) (contracts.TaskSnapshot, error) {
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
