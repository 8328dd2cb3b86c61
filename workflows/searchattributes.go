package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// Keyword Search Attributes set by the workflow; registered by
// internal/devserver at start (and by operators on other servers).
var (
	SearchA2AState        = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AState)
	SearchA2AAgent        = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2AAgent)
	SearchA2ARemoteTaskID = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2ARemoteTaskID)
	SearchA2APurpose      = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeA2APurpose)
	// SearchDelegationCodeVersion is the workflow code version that wrote
	// the run (Newest): `DelegationCodeVersion = 'V' AND ExecutionStatus =
	// 'Running'` finds what still runs on V (docs/versioning.md).
	SearchDelegationCodeVersion = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeDelegationCodeVersion)
)

// noteCodeVersion notes (setSA) this code's version in search attribute
// DelegationCodeVersion, written with the run's first upsert (a fresh
// run's first state), so it costs no event of its own. A run continued as
// new starts with the attributes of the run before it: when that run ran
// this version, nothing is noted (and no upsert is added); when another
// version wrote it, this run's first upsert corrects it.
func (r *run) noteCodeVersion(ctx workflow.Context) {
	if v, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(SearchDelegationCodeVersion); ok && v == Newest() {
		return
	}
	r.setSA(SearchDelegationCodeVersion.ValueSet(Newest()))
}
