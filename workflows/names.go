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
	"github.com/a2adelegate/delegate/contracts"
	"go.temporal.io/sdk/temporal"
)

// Keyword Search Attributes set by the workflow; registered by
// internal/devserver at start (and by operators on other servers).
var (
	SearchA2AState        = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState)
	SearchA2AAgent        = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AAgent)
	SearchA2ARemoteTaskID = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2ARemoteTaskID)
	SearchA2APurpose      = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2APurpose)
)
