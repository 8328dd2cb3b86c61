package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// ErrAlreadyRunning is returned by Start when a delegation with the same
// local_workflow_id is running.
var ErrAlreadyRunning = errors.New("a delegation with this local_workflow_id is already running")

// The Keyword search attributes Start sets (contracts.SearchAttributeNames).
var (
	searchA2AState   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState)
	searchA2AAgent   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AAgent)
	searchA2APurpose = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2APurpose)
	searchStarter    = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeDelegationStarter)
)

// StartOption adjusts how Start starts a delegation.
type StartOption func(*startOptions)

type startOptions struct {
	starter string
}

// WithStarter records who starts the delegation in the Keyword Search
// Attribute DelegationStarter (contracts.SearchAttributeDelegationStarter;
// ValidStarter): the authenticated actor of the
// caller, never a name the caller typed into the contract. `delegate mcp`
// sets it; `delegate list --starter NAME` and ListOptions.Starter select by
// it. The server must have the attribute registered (`delegate dev` does).
func WithStarter(name string) StartOption {
	return func(o *startOptions) { o.starter = name }
}

// Start validates the contract and starts the delegation on
// contracts.TaskQueue; its Workflow ID is d.LocalWorkflowID. Errors: a
// *contracts.FieldError (joined) for a contract that does not validate
// (errors.Is(err, contracts.ErrInvalidContract)), ErrAlreadyRunning for an
// id whose delegation is running (an id whose delegation has ended may be
// reused), or the Temporal error. d.Deadline is absolute, and so is the
// contract the workflow stores: a contract file's relative "deadline_in"
// is resolved before (contracts.DecodeDelegation, contracts.ResolveDeadline,
// contracts.DeadlineAfter).
func Start(ctx context.Context, c sdkclient.Client, d contracts.Delegation, opts ...StartOption) (*Handle, error) {
	if err := d.Validate(time.Now()); err != nil {
		return nil, err
	}
	var so startOptions
	for _, o := range opts {
		o(&so)
	}
	attrs := []temporal.SearchAttributeUpdate{
		searchA2APurpose.ValueSet(contracts.Truncate(d.Purpose, contracts.MaxKeyword)),
		searchA2AAgent.ValueSet(contracts.Truncate(d.AgentCardURL, contracts.MaxKeyword)),
		searchA2AState.ValueSet(string(contracts.PhaseResolving)),
	}
	if so.starter != "" {
		if !ValidStarter(so.starter) {
			return nil, &contracts.FieldError{Field: "(starter)", Rule: StarterRule}
		}
		attrs = append(attrs, searchStarter.ValueSet(so.starter))
	}
	run, err := c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
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
		TypedSearchAttributes: temporal.NewSearchAttributes(attrs...),
	}, contracts.WorkflowType, d)
	if err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) {
			return nil, fmt.Errorf("%w: %s", ErrAlreadyRunning, d.LocalWorkflowID)
		}
		return nil, err
	}
	return &Handle{c: c, id: d.LocalWorkflowID, run: run}, nil
}

// maxSummary bounds the static summary (one line in the UI's list).
const maxSummary = 200

// StaticSummary is the one-line summary a delegation is started with
// (Temporal's StartWorkflowOptions.StaticSummary, shown in the UI's
// workflow list and page): the purpose, the skill and the agent's host,
// at most 200 bytes, as inert markdown (contracts.InertMarkdown).
func StaticSummary(d contracts.Delegation) string {
	host := d.AgentCardURL
	if u, err := url.Parse(d.AgentCardURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return contracts.InertMarkdown(contracts.Truncate(fmt.Sprintf("%s · %s at %s", d.Purpose, d.Skill, host), maxSummary))
}

// StaticDetails is the markdown a delegation is started with
// (StartWorkflowOptions.StaticDetails, the UI's Summary & Details): the
// purpose, agent, skill, deadline, allowed outputs and write authority,
// each made inert (contracts.InertMarkdown) and cut, and how an operator
// acts on it. The message itself is not in it.
func StaticDetails(d contracts.Delegation) string {
	inert := func(s string, n int) string { return contracts.InertMarkdown(contracts.Truncate(s, n)) }
	var b strings.Builder
	fmt.Fprintf(&b, "**Delegation** %s\n\n", inert(d.LocalWorkflowID, 300))
	fmt.Fprintf(&b, "- Purpose: %s\n", inert(d.Purpose, 500))
	fmt.Fprintf(&b, "- Agent card: %s\n", inert(d.AgentCardURL, 500))
	fmt.Fprintf(&b, "- Skill: %s\n", inert(d.Skill, 200))
	fmt.Fprintf(&b, "- Deadline: %s\n", d.Deadline.UTC().Format(time.RFC3339))
	outs := make([]string, 0, len(d.AllowedOutputs))
	for _, o := range d.AllowedOutputs {
		outs = append(outs, inert(o, 200))
	}
	fmt.Fprintf(&b, "- Allowed outputs: %s\n", contracts.Truncate(strings.Join(outs, ", "), 1000))
	fmt.Fprintf(&b, "- Write authority: %s\n\n", contracts.InertMarkdown(d.WriteAuthority))
	b.WriteString("The current state and any question are under Current Details (User Metadata); Queries → `state` gives it all.\n")
	return b.String()
}
