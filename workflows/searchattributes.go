package workflows

import (
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// Keyword Search Attributes set by the workflow; registered by
// internal/devserver at start (and by operators on other servers).
var (
	SearchA2AState        = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState)
	SearchA2AAgent        = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AAgent)
	SearchA2ARemoteTaskID = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2ARemoteTaskID)
	SearchA2APurpose      = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2APurpose)
)
