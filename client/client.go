// Package client is the Go client for backend services that delegate work:
// start a delegation, answer the remote agent's question, cancel, read the
// local state and wait for the Outcome. It is a thin, typed layer over a
// Temporal client (go.temporal.io/sdk/client) and the Delegation workflow;
// the delegate CLI uses it too.
//
//	c, _ := sdkclient.Dial(sdkclient.Options{HostPort: "127.0.0.1:7233"})
//	h, err := client.Start(ctx, c, delegation)
//	...
//	out, err := h.Outcome(ctx) // blocks until the delegation ends
package client

import (
	"context"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// Handle is a started (or looked-up) delegation.
type Handle struct {
	c         sdkclient.Client
	namespace string
	id        string
	run       sdkclient.WorkflowRun
}

// Start validates the contract and starts the delegation; its Workflow ID
// is d.LocalWorkflowID. Errors: a *contracts.FieldError (joined) for a
// contract that does not validate (errors.Is(err, contracts.ErrInvalidContract)),
// workflows.ErrAlreadyRunning for an id whose delegation is running, or the
// Temporal error.
func Start(ctx context.Context, c sdkclient.Client, d contracts.Delegation) (*Handle, error) {
	run, err := workflows.Start(ctx, c, d)
	if err != nil {
		return nil, err
	}
	return &Handle{c: c, id: d.LocalWorkflowID, run: run}, nil
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

// Answer answers the remote agent's question (Update "provide-input"); a
// refused answer (empty, no question pending, credential_ref for a question
// that is not AUTH_REQUIRED, ...) is an error saying why. It returns the
// round the answer is for.
func (h *Handle) Answer(ctx context.Context, a contracts.Answer) (int, error) {
	res, err := workflows.Answer(ctx, h.c, h.id, a)
	return res.Round, err
}

// Cancel requests cancellation; the workflow cancels the remote task and
// ends "canceled" (or "cancel_unconfirmed").
func (h *Handle) Cancel(ctx context.Context, reason string) error {
	ns := h.namespace
	if ns == "" {
		ns = "default"
	}
	return workflows.Cancel(ctx, h.c, ns, h.id, reason)
}

// State returns the delegation's local state (Query "state"); it needs a
// running worker.
func (h *Handle) State(ctx context.Context) (contracts.State, error) {
	return workflows.QueryStateOf(ctx, h.c, h.id)
}

// Outcome waits for the delegation to end and returns its Outcome (the
// workflow's result, following continue-as-new).
func (h *Handle) Outcome(ctx context.Context) (contracts.Outcome, error) {
	run := h.run
	if run == nil {
		run = h.c.GetWorkflow(ctx, h.id, "")
	}
	var out contracts.Outcome
	err := run.Get(ctx, &out)
	return out, err
}
