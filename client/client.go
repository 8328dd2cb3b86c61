package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

// Handle is a started (or looked-up) delegation.
type Handle struct {
	c         sdkclient.Client
	namespace string
	id        string
	run       sdkclient.WorkflowRun
}

// Get returns a handle to an existing delegation.
func Get(c sdkclient.Client, localWorkflowID string) *Handle {
	return &Handle{c: c, id: localWorkflowID}
}

// WithNamespace sets the namespace Cancel uses (default "default").
func (h *Handle) WithNamespace(ns string) *Handle {
	h.namespace = ns
	return h
}

// ID is the delegation's local_workflow_id (its Workflow ID).
func (h *Handle) ID() string { return h.id }

// Answer answers the remote agent's question (Update "provide-input") and
// waits until the workflow accepted it; it returns the round the answer is
// for. Errors: the Answer's own (contracts.Answer.Validate), checked
// before anything is sent, or the workflow's refusal saying why (no
// question pending, credential_ref for a question that is not
// AUTH_REQUIRED, ...).
func (h *Handle) Answer(ctx context.Context, a contracts.Answer) (int, error) {
	if err := a.Validate(); err != nil {
		return 0, err
	}
	u, err := h.c.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: h.id, UpdateName: contracts.ProvideInput, Args: []any{a},
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return 0, err
	}
	var res contracts.ProvideInputResult
	err = u.Get(ctx, &res)
	return res.Round, err
}

// Cancel requests cancellation of the delegation: the workflow cancels the
// remote task and ends "canceled" (or "cancel_unconfirmed"). A reason is
// sent first as Signal "cancel-reason" (the workflow shows it in
// contracts.State.CancelReason and the Outcome's error message); the
// WorkflowExecutionCancelRequested event, never encrypted, does not hold
// it. Errors: a
// *contracts.FieldError for a reason that is not UTF-8 or is over
// contracts.MaxCancelReason bytes (nothing is sent), or the Temporal error.
func (h *Handle) Cancel(ctx context.Context, reason string) error {
	// Checked before anything is sent: a reason signalled for a cancel that
	// then fails would be taken by the next cancel.
	if !utf8.ValidString(reason) {
		return &contracts.FieldError{Field: "reason", Rule: "must be valid UTF-8"}
	}
	if len(reason) > contracts.MaxCancelReason {
		return &contracts.FieldError{Field: "reason", Rule: fmt.Sprintf("%d bytes is over the %d-byte limit", len(reason), contracts.MaxCancelReason)}
	}
	ns := h.namespace
	if ns == "" {
		ns = "default"
	}
	// The workflow cannot read a cancel request's reason; it reads this
	// signal when the cancel arrives (an empty one clears a stray earlier
	// reason). Sent through the client, so its data converter (encryption)
	// applies. A signal the server refuses (a run flooded to its signal
	// limit) does not stop the cancel.
	var noted error
	if err := h.c.SignalWorkflow(ctx, h.id, "", contracts.SignalCancelReason, contracts.Revocation{Reason: strings.TrimSpace(reason)}); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return err
		}
		noted = fmt.Errorf("%w: %w", ErrReasonNotRecorded, err)
	}
	_, err := h.c.WorkflowService().RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
		Namespace:         ns,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: h.id},
		Identity:          "delegate-cli",
		RequestId:         uuid.NewString(),
		// The reason itself travels in the Signal, whose payload the data
		// converter seals when encryption is on; this field never is.
		Reason: "delegate cancel (reason, if any: Signal cancel-reason)",
	})
	if err != nil {
		return err
	}
	return noted
}

// ErrReasonNotRecorded is returned (wrapped) by Cancel when the cancel was
// requested but its reason could not be sent.
var ErrReasonNotRecorded = errors.New("cancel requested; its reason was not recorded")

// State returns the delegation's local state (Query "state"); it needs a
// running worker.
func (h *Handle) State(ctx context.Context) (contracts.State, error) {
	v, err := h.c.QueryWorkflow(ctx, h.id, "", contracts.QueryState)
	if err != nil {
		return contracts.State{}, err
	}
	var s contracts.State
	err = v.Get(&s)
	return s, err
}

// Outcome waits for the delegation to end and returns its Outcome (the
// workflow's result, following continue-as-new; Await).
func (h *Handle) Outcome(ctx context.Context) (contracts.Outcome, error) {
	var out contracts.Outcome
	err := Await(ctx, h.c, h.Run(), &out)
	return out, err
}

// Run is the delegation's Temporal workflow run: the one Start started, or
// the latest run of the Workflow ID for a handle from Get. Its Get follows
// continue-as-new to the Outcome.
func (h *Handle) Run() sdkclient.WorkflowRun {
	if h.run == nil {
		h.run = h.c.GetWorkflow(context.Background(), h.id, "")
	}
	return h.run
}
