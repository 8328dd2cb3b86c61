package contracts

import (
	"fmt"
	"slices"
	"strings"
)

// Temporal names fixed by the public contract: the Task Queue, the
// Workflow types, and the names of the Delegation workflow's Signals,
// Updates and Queries. A backend that does not use package client sends
// these.
const (
	// TaskQueue is the Temporal Task Queue the worker polls.
	TaskQueue = "delegate"
	// WorkflowType is the registered name of the Delegation workflow.
	WorkflowType = "Delegation"
	// ReconcileWorkflowType is the workflow a reconcile Schedule starts.
	ReconcileWorkflowType = "ReconcileDelegations"
	// ReconcileScheduleID is the id of the Schedule `delegate reconcile
	// --schedule` creates.
	ReconcileScheduleID = "delegate-reconcile"

	// ProvideInput is the name of both the Signal and the Update that carry
	// an operator's Answer; the Update returns a ProvideInputResult.
	ProvideInput = "provide-input"
	// QueryState is the Query returning the whole local State as JSON.
	QueryState = "state"
	// SignalRediscover is the Signal by which an operator accepts a changed
	// agent card (A2AState "card-changed"). Payload: none.
	SignalRediscover = "rediscover"
	// ResolveUnknown is the Signal and Update by which an operator resolves
	// a send whose outcome is unknown. Payload: a Resolution.
	ResolveUnknown = "resolve-unknown"
	// SignalRevoke withdraws the delegation's authorization: nothing more
	// is sent, the remote task is canceled, the status is
	// authorization_denied. Payload: a Revocation (optional).
	SignalRevoke = "revoke"
	// SignalCancelReason is the Signal `delegate cancel --reason` sends
	// just before it requests cancellation. Payload: a Revocation-shaped
	// {"reason": "..."}. Temporal keeps a cancel request's own reason in
	// history only, where the workflow cannot read it; this one is shown
	// in State.CancelReason and the Outcome.
	SignalCancelReason = "cancel-reason"
	// SignalReconcile makes the workflow read the remote task once now
	// (GetTask) and record what it saw. Payload: none.
	SignalReconcile = "reconcile"
	// SignalTaskUpdate is what `delegate webhook` sends when the remote
	// agent pushes a change of the task (A2A 1.0 §4.3, push
	// notifications). Payload: a TaskUpdate. A hint only: the workflow
	// reads the task (GetTask) before it acts.
	SignalTaskUpdate = "task-update"
)

// MaxCancelReason bounds a cancel's reason (Signal "cancel-reason"), in
// bytes.
const MaxCancelReason = 1000

// Revocation is the payload of Signal "revoke" and of Signal
// "cancel-reason": why.
type Revocation struct {
	Reason string `json:"reason"`
}

// Keyword Search Attributes the Delegation workflow sets; `delegate dev`
// registers them, operators of other servers register them once (see
// docs/deployment.md).
const (
	SearchAttributeA2AState        = "A2AState"
	SearchAttributeA2AAgent        = "A2AAgent"
	SearchAttributeA2ARemoteTaskID = "A2ARemoteTaskId"
	SearchAttributeA2APurpose      = "A2APurpose"
	// SearchAttributeDelegationStarter is who started the delegation, set
	// at start by the starter (`delegate mcp` sets the MCP connection's
	// authenticated actor; package client's WithStarter), never by the
	// workflow. The MCP adapter shows an actor only the delegations whose
	// DelegationStarter is its own.
	SearchAttributeDelegationStarter = "DelegationStarter"
	// SearchAttributeDelegationCodeVersion is the version of the workflow
	// code that wrote the run (workflows.Newest(): "baseline", or the last
	// change as "<change-id>-v<version>"), set by the workflow in the first
	// search attribute upsert of each run (a run continued as new from one
	// of the same version already shows it), and by a run that refused its
	// input. `DelegationCodeVersion = 'V' AND ExecutionStatus = 'Running'`
	// finds what still runs on version V (docs/versioning.md).
	SearchAttributeDelegationCodeVersion = "DelegationCodeVersion"
)

// SearchAttributeNames lists the custom search attributes, all Keyword.
var SearchAttributeNames = []string{SearchAttributeA2AState, SearchAttributeA2AAgent, SearchAttributeA2ARemoteTaskID, SearchAttributeA2APurpose, SearchAttributeDelegationStarter, SearchAttributeDelegationCodeVersion}

// Phase is a local phase of a delegation, shown in A2AState when no
// remote TaskState tells where it stands: before the task exists, while
// an operator must decide, after it ended locally.
type Phase string

// The local phases.
const (
	PhaseResolving Phase = "resolving"
	PhaseSending   Phase = "sending"
	// PhaseEnded: the delegation ended locally while the remote task was
	// not in a terminal state (or there was none).
	PhaseEnded Phase = "ended"
	// PhaseCardChanged: the card changed in a way that matters; waiting
	// for Signal "rediscover".
	PhaseCardChanged Phase = "card-changed"
	// PhaseUnknownOutcome: a send's outcome is unknown; waiting for
	// resolve-unknown.
	PhaseUnknownOutcome Phase = "unknown-outcome"
)

// FormerA2AStates maps an A2AState value to the spellings it had before:
// delegations that were waiting when the spelling changed keep the old
// one in their search attribute and State, so filters read both. An entry
// stays as long as the workflow version that wrote the old spelling
// (docs/versioning.md). Empty: the baseline has one spelling of each.
var FormerA2AStates = map[string][]string{}

// Phases lists every Phase.
var Phases = []Phase{PhaseResolving, PhaseSending, PhaseCardChanged, PhaseUnknownOutcome, PhaseEnded}

// A2AStates lists every value the search attribute A2AState (and
// State.A2AState) takes: the local phases and the remote task states
// (TaskStates).
var A2AStates = func() []string {
	var out []string
	for _, p := range Phases {
		out = append(out, string(p))
	}
	for _, s := range TaskStates {
		out = append(out, string(s))
	}
	return out
}()

// ParseA2AState returns the current spelling of s, an A2AState value or
// a former spelling of one (FormerA2AStates), and an error naming every
// valid value when it is neither (for filters typed by a person: a typo
// must not list nothing and succeed).
func ParseA2AState(s string) (string, error) {
	if slices.Contains(A2AStates, s) {
		return s, nil
	}
	for now, former := range FormerA2AStates {
		if slices.Contains(former, s) {
			return now, nil
		}
	}
	var former []string
	for now, old := range FormerA2AStates {
		for _, o := range old {
			former = append(former, o+" (= "+now+")")
		}
	}
	if len(former) == 0 {
		return "", fmt.Errorf("%q is not an A2AState; one of: %s", s, strings.Join(A2AStates, ", "))
	}
	slices.Sort(former)
	return "", fmt.Errorf("%q is not an A2AState; one of: %s; also read: %s", s, strings.Join(A2AStates, ", "), strings.Join(former, ", "))
}

// CurrentA2AState returns the current spelling of an A2AState value read
// from a search attribute or a State (a former spelling is mapped; any
// other value is returned as it is).
func CurrentA2AState(s string) string {
	if now, err := ParseA2AState(s); err == nil {
		return now
	}
	return s
}

// A2AStateFilter is the Temporal visibility query clause that selects the
// delegations in A2AState state (a valid, current value), under every
// spelling it has had (FormerA2AStates): `A2AState = "working"`, or, for a
// renamed value, `A2AState IN ("new-spelling", "old_spelling")`.
func A2AStateFilter(state string) string {
	former := FormerA2AStates[state]
	if len(former) == 0 {
		return fmt.Sprintf("%s = %q", SearchAttributeA2AState, state)
	}
	quoted := []string{fmt.Sprintf("%q", state)}
	for _, f := range former {
		quoted = append(quoted, fmt.Sprintf("%q", f))
	}
	return fmt.Sprintf("%s IN (%s)", SearchAttributeA2AState, strings.Join(quoted, ", "))
}
