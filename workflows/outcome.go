package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// failed turns an error into the Outcome: a stop into its own, a
// cancellation into canceled, anything else by its category; the remote
// task is canceled where the delegation stops while the task may still
// run.
func (r *run) failed(ctx workflow.Context, err error) contracts.Outcome {
	r.phase = phaseStopping
	if s := asStop(err); s != nil {
		info := s.info
		if s.kind == stopDeadline {
			info.Message = r.deadlineMessage() // before the cancel moves the state on
		}
		if s.kind != stopAbandoned && s.kind != stopRefused {
			r.afterCancel(ctx, 0)
		}
		return r.outcome(s.status, &info)
	}
	if temporal.IsCanceledError(err) || ctx.Err() != nil {
		return r.canceled(ctx)
	}
	return r.otherFailure(ctx, err)
}

// deadlineMessage says where the deadline found the delegation.
func (r *run) deadlineMessage() string {
	msg := "deadline " + r.d.Deadline.UTC().Format(time.RFC3339) + " reached in state " + r.s.A2AState
	if rt := r.s.Retrying; rt != nil {
		msg += fmt.Sprintf(" while retrying %s (%d attempts; last error: %s)", rt.Op, rt.Attempts, rt.LastError)
	}
	return msg
}

// canceled is the Outcome of a delegation canceled locally: the agent is
// asked to cancel its task, and late results are watched for.
func (r *run) canceled(ctx workflow.Context) contracts.Outcome {
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
	if contracts.TaskState(r.s.A2AState) == contracts.TaskStateCompleted {
		// Nothing to cancel: the agent had finished (a send in flight at
		// the stop made the task, and it was done when it was found).
		msg = fmt.Sprintf("canceled locally%s, but the remote task had already completed: nothing was canceled at the agent", why)
	}
	if r.s.CancelError != "" {
		msg += ": " + r.s.CancelError
	}
	if len(r.s.LateResults) > 0 {
		msg += fmt.Sprintf("; %d late result(s) recorded, not turned into outputs", len(r.s.LateResults))
	}
	return r.outcome(contracts.StatusCancelUnconfirmed, &contracts.ErrorInfo{Category: contracts.CategoryCanceled, Message: msg})
}

// otherFailure is the Outcome of any other error: its type is its
// category (protocol_error when it has none).
func (r *run) otherFailure(ctx workflow.Context, err error) contracts.Outcome {
	cat, msg := contracts.CategoryProtocol, errorText(err)
	if t := errorType(err); t != "" {
		cat = contracts.Category(t)
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
	switch {
	case e != nil && r.s.SendInFlight != "":
		e.Message += fmt.Sprintf("; a send (messageId %s) in flight at the stop was abandoned or ended without a reply, and no task of it was found: its outcome is unknown", r.s.SendInFlight)
	}
	return contracts.Outcome{
		LocalWorkflowID: r.d.LocalWorkflowID, Status: status,
		RemoteTaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID,
		Agent: r.s.Agent, Protocol: r.s.Protocol,
		Outputs: []contracts.Output{}, RejectedArtifacts: []contracts.RejectedArtifact{},
		InputRounds: r.s.InputRounds, Error: e, LateResults: r.s.LateResults,
	}
}
