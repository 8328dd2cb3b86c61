// Package nexusop is delegate's Nexus service: a workflow in any
// namespace delegates through a Nexus endpoint, with no client of
// delegate's namespace and no child workflow (package child is for
// workflows in delegate's own namespace; docs/backends.md "From a
// workflow").
//
// Service "delegate" has one operation, "start-delegation": asynchronous,
// backed by the Delegation workflow (contracts.WorkflowType) in the
// worker's namespace; its input is the contract (contracts.Delegation),
// its result the Outcome. Canceling the operation cancels the delegation,
// which cancels its remote task. `delegate worker` registers the service
// on task queue "delegate"; an endpoint (Endpoint, `delegate dev` creates
// it) routes to it. A caller, in its workflow:
//
//	c := workflow.NewNexusClient(nexusop.Endpoint, nexusop.Service)
//	f := c.ExecuteOperation(ctx, nexusop.Operation, d, workflow.NexusOperationOptions{})
//	var out contracts.Outcome
//	err := f.Get(ctx, &out)
package nexusop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nexus-rpc/sdk-go/nexus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/temporalnexus"
	"go.temporal.io/sdk/worker"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

const (
	// Service is the Nexus service's name.
	Service = "delegate"
	// Operation is the name of its one operation.
	Operation = "start-delegation"
	// Endpoint is the name of the endpoint `delegate dev` creates (target:
	// its namespace, task queue delegate), and the one the docs create on a
	// cluster.
	Endpoint = "delegate"
)

// StartDelegation is a typed reference to the operation, for a caller's
// workflow.NexusClient.ExecuteOperation.
var StartDelegation = nexus.NewOperationReference[contracts.Delegation, contracts.Outcome](Operation)

// The Keyword search attributes a start sets, as package client's Start.
var (
	searchA2AState   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState)
	searchA2AAgent   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AAgent)
	searchA2APurpose = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2APurpose)
	searchStarter    = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeDelegationStarter)
)

// NewService is the Nexus service with its operation.
func NewService() (*nexus.Service, error) {
	s := nexus.NewService(Service)
	op, err := temporalnexus.NewWorkflowRunOperationWithOptions(temporalnexus.WorkflowRunOperationOptions[contracts.Delegation, contracts.Outcome]{
		Name:    Operation,
		Handler: start,
	})
	if err != nil {
		return nil, err
	}
	if err := s.Register(op); err != nil {
		return nil, err
	}
	return s, nil
}

// Register registers the service on w (a worker of task queue delegate,
// which runs the Delegation workflow).
func Register(w worker.Worker) error {
	s, err := NewService()
	if err != nil {
		return err
	}
	w.RegisterNexusService(s)
	return nil
}

// start starts the Delegation workflow for d, as package client's Start
// does: the contract validated first (a bad one is a non-retryable
// BAD_REQUEST handler error naming the field and rule; the workflow checks
// again itself), Workflow ID d.LocalWorkflowID, the same summary, details,
// run timeout and search attributes, and DelegationStarter the caller
// (Starter).
func start(ctx context.Context, d contracts.Delegation, o nexus.StartOperationOptions) (temporalnexus.WorkflowHandle[contracts.Outcome], error) {
	if err := d.Validate(time.Now()); err != nil {
		return nil, &nexus.HandlerError{
			Type:          nexus.HandlerErrorTypeBadRequest,
			Message:       fmt.Sprintf("invalid contract: %v", err),
			RetryBehavior: nexus.HandlerErrorRetryBehaviorNonRetryable,
		}
	}
	attrs := []temporal.SearchAttributeUpdate{
		searchA2APurpose.ValueSet(contracts.Truncate(d.Purpose, contracts.MaxKeyword)),
		searchA2AAgent.ValueSet(contracts.Truncate(d.AgentCardURL, contracts.MaxKeyword)),
		searchA2AState.ValueSet(string(contracts.PhaseResolving)),
		searchStarter.ValueSet(Starter(o.Links)),
	}
	h, err := temporalnexus.ExecuteUntypedWorkflow[contracts.Outcome](ctx, o, client.StartWorkflowOptions{
		ID:                       d.LocalWorkflowID,
		TaskQueue:                contracts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowRunTimeout:       time.Until(d.Deadline) + 24*time.Hour,
		StaticSummary:            dclient.StaticSummary(d),
		StaticDetails:            dclient.StaticDetails(d),
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
	}, contracts.WorkflowType, d)
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) {
			return nil, &nexus.HandlerError{
				Type:          nexus.HandlerErrorTypeBadRequest,
				Message:       fmt.Sprintf("%v: %s", dclient.ErrAlreadyRunning, d.LocalWorkflowID),
				RetryBehavior: nexus.HandlerErrorRetryBehaviorNonRetryable,
			}
		}
		return nil, err
	}
	return h, nil
}

// Starter is the DelegationStarter of a delegation started through Nexus:
// "nexus:<namespace>/<workflow id>" of the calling workflow, from the
// workflow-event link the caller's server attaches to the request (the
// event that scheduled the operation); "nexus:" and the first link's URL
// for a caller that is not a workflow, and "nexus:unknown" without links.
// At most 200 bytes (cut with "…"); a character ValidStarter refuses is replaced by '?'.
func Starter(links []nexus.Link) string {
	s := "nexus:unknown"
	for _, l := range links {
		we, err := temporalnexus.ConvertNexusLinkToLinkWorkflowEvent(l)
		if err == nil && we.GetWorkflowId() != "" {
			s = "nexus:" + we.GetNamespace() + "/" + we.GetWorkflowId()
			break
		}
	}
	if s == "nexus:unknown" && len(links) > 0 && links[0].URL != nil {
		s = "nexus:" + links[0].URL.String()
	}
	// Truncate appends "…" (3 bytes) to what it cuts.
	return contracts.Truncate(sanitize(s), 197)
}

func sanitize(s string) string {
	if dclient.ValidStarter(s) {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if !dclient.ValidStarter(string(r)) {
			r = '?'
		}
		out = append(out, r)
	}
	return string(out)
}
