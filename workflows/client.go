package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
)

// Register registers the Delegation workflow and the activities on a worker.
func Register(r worker.Registry, a *activities.Activities) {
	r.RegisterWorkflowWithOptions(Delegation, workflowRegisterOptions())
	r.RegisterWorkflowWithOptions(ReconcileDelegations, workflow.RegisterOptions{Name: ReconcileWorkflowType})
	r.RegisterActivity(a)
}

func workflowRegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: WorkflowType}
}

// ErrAlreadyRunning is returned by Start when a delegation with the same
// local_workflow_id is running.
var ErrAlreadyRunning = errors.New("a delegation with this local_workflow_id is already running")

// Start starts a delegation whose Workflow ID is d.LocalWorkflowID on
// TaskQueue. The contract is validated first (contracts.Delegation.Validate).
// Starting under the id of a running delegation fails with
// ErrAlreadyRunning; an id whose earlier delegation has ended may be reused.
func Start(ctx context.Context, c client.Client, d contracts.Delegation) (client.WorkflowRun, error) {
	if err := d.Validate(time.Now()); err != nil {
		return nil, err
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       d.LocalWorkflowID,
		TaskQueue:                                TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		// The workflow itself ends at the deadline; the run timeout is a
		// backstop a day later.
		WorkflowRunTimeout: time.Until(d.Deadline) + 24*time.Hour,
		// Set at start, so the workflow spends no event on them.
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SearchA2APurpose.ValueSet(truncate(d.Purpose, maxKeyword)),
			SearchA2AAgent.ValueSet(truncate(d.AgentCardURL, maxKeyword)),
			SearchA2AState.ValueSet(PhaseResolving),
		),
	}, WorkflowType, d)
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) {
			return nil, fmt.Errorf("%w: %s", ErrAlreadyRunning, d.LocalWorkflowID)
		}
		return nil, err
	}
	return run, nil
}

// Answer gives an operator's answer through Update "provide-input" and
// waits until the workflow accepted it. A refused answer (empty, or no
// question pending) comes back as an error that says why.
func Answer(ctx context.Context, c client.Client, workflowID string, a contracts.Answer) (ProvideInputResult, error) {
	if err := a.Validate(); err != nil {
		return ProvideInputResult{}, err
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: ProvideInput, Args: []any{a},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return ProvideInputResult{}, err
	}
	var res ProvideInputResult
	err = h.Get(ctx, &res)
	return res, err
}

// QueryStateOf returns the local State of a delegation (Query "state").
func QueryStateOf(ctx context.Context, c client.Client, workflowID string) (State, error) {
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryState)
	if err != nil {
		return State{}, err
	}
	var s State
	err = v.Get(&s)
	return s, err
}

// Cancel requests cancellation of a delegation in namespace. The workflow
// cancels the remote task and ends with status "canceled". The reason is
// recorded in the WorkflowExecutionCancelRequested event.
func Cancel(ctx context.Context, c client.Client, namespace, workflowID, reason string) error {
	_, err := c.WorkflowService().RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
		Namespace:         namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
		Identity:          "delegate-cli",
		RequestId:         uuid.NewString(),
		Reason:            reason,
	})
	return err
}
