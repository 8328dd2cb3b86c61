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
	"go.temporal.io/sdk/temporal"
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
