// Package child starts a delegation from inside a Temporal workflow, as a
// child workflow of it: for a backend that is itself a workflow, in
// delegate's namespace (one in another namespace goes through Nexus,
// docs/backends.md "From a workflow"). It imports only package contracts
// and the Temporal SDK's workflow package, so a workflow that links it
// stays deterministic and carries neither the A2A stack nor the server.
//
//	out, err := child.ExecuteDelegation(ctx, d, child.Options{})
//
// The child is the Delegation workflow itself (contracts.WorkflowType),
// with the same checks as every other start: the workflow refuses a
// contract that does not validate (an ApplicationError of type
// invalid_contract). Answer it from the parent by Signal
// contracts.ProvideInput (workflow.SignalExternalWorkflow, or the future's
// SignalChildWorkflow); read its state by Query contracts.QueryState from
// an activity.
package child

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// Options adjusts how a delegation is started as a child. The zero value
// is what most parents want.
type Options struct {
	// TaskQueue is the task queue of delegate's workers;
	// contracts.TaskQueue ("delegate") when empty.
	TaskQueue string
	// ParentClosePolicy is what Temporal does to the delegation when the
	// parent closes first (completes, fails, is terminated or times out).
	// REQUEST_CANCEL when unspecified: the delegation is canceled, cancels
	// its remote task and ends canceled. Temporal's own default,
	// TERMINATE, would kill it with its remote task still working (the
	// orphan sweep cancels that later, docs/operations.md); ABANDON lets
	// it run on alone.
	ParentClosePolicy enumspb.ParentClosePolicy
}

// Search attributes a start sets (as package client's Start does), so that
// `delegate list` and the orphan sweep see a child delegation from the
// first moment.
var (
	searchA2AState   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState)
	searchA2AAgent   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AAgent)
	searchA2APurpose = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2APurpose)
	searchStarter    = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeDelegationStarter)
)

// StartDelegation starts d as a child workflow of the calling workflow:
// Workflow ID d.LocalWorkflowID, task queue and parent close policy from
// opts, and DelegationStarter "workflow:<namespace>/<parent workflow id>"
// (who started it, from the parent's own identity). A canceled ctx
// cancels the delegation, which cancels its remote task; the future then
// resolves to its Outcome (status canceled) once it has. The future's
// GetChildWorkflowExecution resolves when the child has started (or failed
// to: its id is in use by a running workflow).
func StartDelegation(ctx workflow.Context, d contracts.Delegation, opts Options) workflow.ChildWorkflowFuture {
	if opts.TaskQueue == "" {
		opts.TaskQueue = contracts.TaskQueue
	}
	if opts.ParentClosePolicy == enumspb.PARENT_CLOSE_POLICY_UNSPECIFIED {
		opts.ParentClosePolicy = enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL
	}
	info := workflow.GetInfo(ctx)
	attrs := []temporal.SearchAttributeUpdate{
		searchA2APurpose.ValueSet(contracts.Truncate(d.Purpose, contracts.MaxKeyword)),
		searchA2AAgent.ValueSet(contracts.Truncate(d.AgentCardURL, contracts.MaxKeyword)),
		searchA2AState.ValueSet(string(contracts.PhaseResolving)),
		// Cut to 197 bytes: with its "…", at most the 200 a starter may be.
		searchStarter.ValueSet(contracts.Truncate("workflow:"+info.Namespace+"/"+info.WorkflowExecution.ID, 197)),
	}
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            d.LocalWorkflowID,
		TaskQueue:             opts.TaskQueue,
		ParentClosePolicy:     opts.ParentClosePolicy,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// The parent's cancel is over when the delegation has canceled its
		// remote task and ended, not when the request is sent.
		WaitForCancellation:   true,
		TypedSearchAttributes: temporal.NewSearchAttributes(attrs...),
	})
	return workflow.ExecuteChildWorkflow(ctx, contracts.WorkflowType, d)
}

// ExecuteDelegation starts d as a child (StartDelegation) and waits for its
// Outcome, also when ctx is canceled meanwhile: the delegation is then
// canceled and its Outcome (status canceled, or cancel_unconfirmed) comes
// back once its remote task is. The error is the child's failure: a
// contract the workflow refused (ApplicationError type invalid_contract),
// an id in use (temporal.ChildWorkflowExecutionAlreadyStartedError), a
// termination or a timeout; a delegation that ran to any end is an Outcome
// and no error.
func ExecuteDelegation(ctx workflow.Context, d contracts.Delegation, opts Options) (contracts.Outcome, error) {
	f := StartDelegation(ctx, d, opts)
	// Read in a disconnected context: the parent's cancel is sent to the
	// child (ctx), and its Outcome is still waited for.
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var out contracts.Outcome
	err := f.Get(dctx, &out)
	return out, err
}
