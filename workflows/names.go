// Package workflows holds the Delegation workflow: the state machine that
// owns one delegated A2A task from start to finish (DESIGN.md, "The flow of
// one delegation"), the names of its handlers and search attributes, and
// helpers that start, answer and cancel delegations through a Temporal
// client.
//
// The workflow never does I/O; every network step is an activity of package
// activities.
package workflows

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/a2aclient"
)

// Names fixed by the public contract.
const (
	// TaskQueue is the Temporal Task Queue the worker polls.
	TaskQueue = "delegate"
	// WorkflowType is the registered name of the Delegation workflow.
	WorkflowType = "Delegation"
	// ProvideInput is the name of both the Signal and the Update that carry
	// an operator's contracts.Answer.
	ProvideInput = "provide-input"
	// QueryState is the Query returning the whole local State as JSON.
	QueryState = "state"
	// Rediscover is the Signal by which an operator accepts a changed
	// agent card (state "card-changed").
	Rediscover = "rediscover"
)

// Keyword Search Attributes set by the workflow; registered by
// internal/devserver at start (and by operators on other servers).
var (
	SearchA2AState        = temporal.NewSearchAttributeKeyKeyword("A2AState")
	SearchA2AAgent        = temporal.NewSearchAttributeKeyKeyword("A2AAgent")
	SearchA2ARemoteTaskID = temporal.NewSearchAttributeKeyKeyword("A2ARemoteTaskId")
	SearchA2APurpose      = temporal.NewSearchAttributeKeyKeyword("A2APurpose")
)

// SearchAttributeNames lists the custom search attributes, all Keyword.
var SearchAttributeNames = []string{"A2AState", "A2AAgent", "A2ARemoteTaskId", "A2APurpose"}

// Local phases shown in A2AState before a remote state is known and after
// the delegation ended locally.
const (
	PhaseResolving = "resolving"
	PhaseSending   = "sending"
	// PhaseEnded: the delegation ended locally while the remote task was
	// not in a terminal state (or there was none).
	PhaseEnded = "ended"
	// StateCardChanged: the card changed in a way that matters; waiting
	// for Signal "rediscover".
	StateCardChanged = "card-changed"
)

// A2AStates lists every value the search attribute A2AState takes: the
// local phases, the remote task states (A2A 1.0 §4.1.3, written lower case
// with hyphens: a2aclient.State*), "message" (the agent answered with a
// Message, no Task), "unknown" (a state that could not be read), and the
// waits for an operator "card-changed" and "unknown_outcome".
var A2AStates = []string{
	PhaseResolving, PhaseSending,
	a2aclient.StateSubmitted, a2aclient.StateWorking, a2aclient.StateInputRequired, a2aclient.StateAuthRequired,
	a2aclient.StateCompleted, a2aclient.StateFailed, a2aclient.StateRejected, a2aclient.StateCanceled,
	a2aclient.StateMessage, a2aclient.StateUnknown,
	StateCardChanged, StateUnknownOutcome, PhaseEnded,
}

// CheckA2AState returns an error naming every valid value when s is not
// one of A2AStates (for filters typed by a person: a typo must not list
// nothing and succeed).
func CheckA2AState(s string) error {
	if slices.Contains(A2AStates, s) {
		return nil
	}
	return fmt.Errorf("%q is not an A2AState; one of: %s", s, strings.Join(A2AStates, ", "))
}
