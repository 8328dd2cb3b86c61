package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// failed turns an error into the Outcome, canceling the remote task where
// the delegation stops while the task may still run.
func (r *run) failed(ctx workflow.Context, err error) contracts.Outcome {
	r.stopping = true
	var denied *deniedError
	var changed *cardChangedError
	var untrusted *untrustedError
	switch {
	case errors.Is(err, errDeadline):
		msg := r.deadlineMessage()
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusDeadlineExceeded, &contracts.ErrorInfo{Category: contracts.CategoryDeadline, Message: msg})
	case errors.As(err, &changed):
		c := changed.change
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusCardChanged, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: fmt.Sprintf("the agent card changed (%s); old digest %s, new digest %s; no operator sent %q before the deadline", c.What, c.OldDigest, c.NewDigest, contracts.SignalRediscover)})
	case errors.As(err, &untrusted):
		v := untrusted.verification
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusCardUntrusted, &contracts.ErrorInfo{Category: contracts.CategoryCard,
			Message: "nothing sent after the card changed: a verified card signature is required; the new card is " + v.Status + reasonSuffix(v.Reason)})
	case errors.As(err, &denied):
		msg := "nothing sent after this: "
		if denied.revoked {
			msg += "revoked: " + denied.reason
		} else {
			msg += "the policy denies it: " + denied.reason
		}
		r.afterCancel(ctx, 0)
		return r.outcome(contracts.StatusAuthorizationDenied, &contracts.ErrorInfo{Category: contracts.CategoryAuthorization, Message: msg})
	case errors.Is(err, errAbandoned):
		last := r.s.UnknownHistory[len(r.s.UnknownHistory)-1]
		return r.outcome(contracts.StatusUnknownOutcome, &contracts.ErrorInfo{Category: contracts.CategoryUnknownOutcome,
			Message: fmt.Sprintf("abandoned by an operator after the unknown outcome of round %d (messageId %s): %s", last.Round, last.MessageID, last.Error)})
	case temporal.IsCanceledError(err) || ctx.Err() != nil:
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
