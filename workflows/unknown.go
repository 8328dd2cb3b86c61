package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// resolveUnknown asks an operator about an unknown outcome until the
// answer is resend (adopted false), a task that passes adoptTask (adopted
// true), or abandon (the abandoned stop); a refused adoption is asked again with
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
			return contracts.TaskSnapshot{}, false, abandoned(r.s.UnknownHistory[len(r.s.UnknownHistory)-1])
		}
		snap, err := r.adoptTask(ctx, res.TaskID)
		if err == nil {
			r.recordSend(ctx, contracts.SendRecord{Round: round, MessageID: msgID, Result: "adopted"})
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
	r.box.dropResolution()
	r.setState(ctx, string(contracts.PhaseUnknownOutcome))
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, unknownDetails(r.s, r.wfID))
	if err := r.wait(ctx, byDeadline, r.box.hasResolution); err != nil {
		return contracts.Resolution{}, err
	}
	if !r.box.hasResolution() {
		return contracts.Resolution{}, r.interrupt()
	}
	res := r.box.takeResolution()
	r.s.Unknown.Resolution = &res
	r.s.UnknownHistory = append(r.s.UnknownHistory, *r.s.Unknown)
	r.s.Unknown = nil
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
	in := contracts.GetTaskInput{Interface: r.s.Interface, TaskID: taskID, Limits: r.d.EffectiveLimits()}
	if err := r.activity(ctx, getTaskOptions(), contracts.ActivityGetTask, in, &snap); err != nil {
		if r.interrupt() != nil || temporal.IsCanceledError(err) {
			return contracts.TaskSnapshot{}, err
		}
		return contracts.TaskSnapshot{}, fmt.Errorf("GetTask %q: %s", taskID, errorText(err))
	}
	if r.s.ContextID != "" && snap.ContextID != r.s.ContextID {
		return contracts.TaskSnapshot{}, fmt.Errorf("task %q has contextId %q, the delegation's is %q", taskID, snap.ContextID, r.s.ContextID)
	}
	return snap, nil
}
