package workflows

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
)

// Register registers the Delegation workflow and the activities on a worker.
func Register(r worker.Registry, a *activities.Activities) {
	r.RegisterWorkflowWithOptions(Delegation, workflowRegisterOptions())
	r.RegisterWorkflowWithOptions(ReconcileDelegations, workflow.RegisterOptions{Name: contracts.ReconcileWorkflowType})
	r.RegisterActivity(a)
}

func workflowRegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: contracts.WorkflowType}
}

// ErrAlreadyRunning is returned by Start when a delegation with the same
// local_workflow_id is running.
var ErrAlreadyRunning = errors.New("a delegation with this local_workflow_id is already running")

// Start starts a delegation whose Workflow ID is d.LocalWorkflowID on
// contracts.TaskQueue. The contract is validated first (contracts.Delegation.Validate).
// Starting under the id of a running delegation fails with
// ErrAlreadyRunning; an id whose earlier delegation has ended may be reused.
func Start(ctx context.Context, c client.Client, d contracts.Delegation) (client.WorkflowRun, error) {
	if err := d.Validate(time.Now()); err != nil {
		return nil, err
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       d.LocalWorkflowID,
		TaskQueue:                                contracts.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		// The workflow itself ends at the deadline; the run timeout is a
		// backstop a day later.
		WorkflowRunTimeout: time.Until(d.Deadline) + 24*time.Hour,
		// What the delegation is, on the UI's list and its first page
		// (user metadata of the start event; no event of its own).
		StaticSummary: StaticSummary(d),
		StaticDetails: StaticDetails(d),
		// Set at start, so the workflow spends no event on them.
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SearchA2APurpose.ValueSet(truncate(d.Purpose, maxKeyword)),
			SearchA2AAgent.ValueSet(truncate(d.AgentCardURL, maxKeyword)),
			SearchA2AState.ValueSet(string(contracts.PhaseResolving)),
		),
	}, contracts.WorkflowType, d)
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) {
			return nil, fmt.Errorf("%w: %s", ErrAlreadyRunning, d.LocalWorkflowID)
		}
		return nil, err
	}
	return run, nil
}

// maxSummary bounds the static summary (one line in the UI's list).
const maxSummary = 200

// StaticSummary is the one-line summary a delegation is started with
// (Temporal's StartWorkflowOptions.StaticSummary, shown in the UI's
// workflow list and page): the purpose, the skill and the agent's host,
// at most 200 bytes, as inert markdown (escapeMarkdown: one code span).
func StaticSummary(d contracts.Delegation) string {
	host := d.AgentCardURL
	if u, err := url.Parse(d.AgentCardURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return escapeMarkdown(truncate(fmt.Sprintf("%s · %s at %s", d.Purpose, d.Skill, host), maxSummary))
}

// StaticDetails is the markdown a delegation is started with
// (StartWorkflowOptions.StaticDetails, the UI's Summary & Details): the
// purpose, agent, skill, deadline, allowed outputs and write authority,
// each escaped (escapeMarkdown) and cut, and how an operator acts on it.
// The message itself is not in it.
func StaticDetails(d contracts.Delegation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Delegation** %s\n\n", escapeMarkdown(truncate(d.LocalWorkflowID, 300)))
	fmt.Fprintf(&b, "- Purpose: %s\n", escapeMarkdown(truncate(d.Purpose, 500)))
	fmt.Fprintf(&b, "- Agent card: %s\n", escapeMarkdown(truncate(d.AgentCardURL, 500)))
	fmt.Fprintf(&b, "- Skill: %s\n", escapeMarkdown(truncate(d.Skill, 200)))
	fmt.Fprintf(&b, "- Deadline: %s\n", d.Deadline.UTC().Format(time.RFC3339))
	outs := make([]string, 0, len(d.AllowedOutputs))
	for _, o := range d.AllowedOutputs {
		outs = append(outs, escapeMarkdown(truncate(o, 200)))
	}
	fmt.Fprintf(&b, "- Allowed outputs: %s\n", truncate(strings.Join(outs, ", "), 1000))
	fmt.Fprintf(&b, "- Write authority: %s\n\n", escapeMarkdown(d.WriteAuthority))
	b.WriteString("The current state and any question are under Current Details (User Metadata); Queries → `state` gives it all.\n")
	return b.String()
}

// Answer gives an operator's answer through Update "provide-input" and
// waits until the workflow accepted it. A refused answer (empty, or no
// question pending) comes back as an error that says why.
func Answer(ctx context.Context, c client.Client, workflowID string, a contracts.Answer) (contracts.ProvideInputResult, error) {
	if err := a.Validate(); err != nil {
		return contracts.ProvideInputResult{}, err
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: contracts.ProvideInput, Args: []any{a},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contracts.ProvideInputResult{}, err
	}
	var res contracts.ProvideInputResult
	err = h.Get(ctx, &res)
	return res, err
}

// QueryStateOf returns the local contracts.State of a delegation (Query "state").
func QueryStateOf(ctx context.Context, c client.Client, workflowID string) (contracts.State, error) {
	v, err := c.QueryWorkflow(ctx, workflowID, "", contracts.QueryState)
	if err != nil {
		return contracts.State{}, err
	}
	var s contracts.State
	err = v.Get(&s)
	return s, err
}

// Cancel requests cancellation of a delegation in namespace. The workflow
// cancels the remote task and ends with status "canceled". A reason is sent
// first as Signal "cancel-reason" (the workflow shows it in contracts.State.CancelReason
// and the Outcome's error message) and recorded in the
// WorkflowExecutionCancelRequested event.
func Cancel(ctx context.Context, c client.Client, namespace, workflowID, reason string) error {
	// Checked before anything is sent: a reason signalled for a cancel that
	// then fails would be taken by the next cancel.
	if !utf8.ValidString(reason) {
		return &contracts.FieldError{Field: "reason", Rule: "must be valid UTF-8"}
	}
	if len(reason) > contracts.MaxCancelReason {
		return &contracts.FieldError{Field: "reason", Rule: fmt.Sprintf("%d bytes is over the %d-byte limit", len(reason), contracts.MaxCancelReason)}
	}
	if strings.TrimSpace(reason) != "" {
		// The workflow cannot read a cancel request's reason; it reads
		// this signal when the cancel arrives.
		input, err := converter.GetDefaultDataConverter().ToPayloads(map[string]string{"reason": reason})
		if err != nil {
			return err
		}
		if _, err := c.WorkflowService().SignalWorkflowExecution(ctx, &workflowservice.SignalWorkflowExecutionRequest{
			Namespace:         namespace,
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
			SignalName:        contracts.SignalCancelReason,
			Input:             input,
			Identity:          "delegate-cli",
			RequestId:         uuid.NewString(),
		}); err != nil {
			return err
		}
	}
	_, err := c.WorkflowService().RequestCancelWorkflowExecution(ctx, &workflowservice.RequestCancelWorkflowExecutionRequest{
		Namespace:         namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
		Identity:          "delegate-cli",
		RequestId:         uuid.NewString(),
		Reason:            reason,
	})
	return err
}
