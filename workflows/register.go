package workflows

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// Options configure the Delegation workflow on one worker; the zero value
// is the default. Every worker of a Task Queue must use the same options:
// they decide which commands the workflow issues.
type Options struct {
	// ContinueAsNewEvents is the history length past which a delegation
	// continues as new even before Temporal suggests it (0: 10,000; a
	// negative value: at the first chance, for tests).
	ContinueAsNewEvents int
	// WaitingHistoryEvents is the history length past which a delegation
	// that waits (for an operator, or on a long watch) continues as new at
	// once, before signals can fill the run to the server's limits (0:
	// DefaultWaitingHistoryEvents; negative: at once, for tests).
	WaitingHistoryEvents int
}

// DefaultWaitingHistoryEvents is Options.WaitingHistoryEvents when unset:
// half of the server's default limit of 10,000 signals a run.
const DefaultWaitingHistoryEvents = 5000

func (o Options) waitingHistoryEvents() int {
	if o.WaitingHistoryEvents == 0 {
		return DefaultWaitingHistoryEvents
	}
	return o.WaitingHistoryEvents
}

// DefaultContinueAsNewEvents is Options.ContinueAsNewEvents when unset.
const DefaultContinueAsNewEvents = 10000

func (o Options) continueAsNewEvents() int {
	if o.ContinueAsNewEvents == 0 {
		return DefaultContinueAsNewEvents
	}
	return o.ContinueAsNewEvents
}

// RegisterWorkflows registers the Delegation workflow (configured by o)
// and the ReconcileDelegations workflow. A worker registers their
// activities with activities.Register (this package does not import
// package activities: it schedules them by their names in contracts); a
// worker.WorkflowReplayer, or a test environment that mocks the
// activities, registers the workflows alone.
func RegisterWorkflows(r worker.WorkflowRegistry, o Options) {
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, input, carried converter.RawValue) (contracts.Outcome, error) {
		return delegation(ctx, input, carried, o)
	}, workflowRegisterOptions())
	r.RegisterWorkflowWithOptions(ReconcileDelegations, workflow.RegisterOptions{Name: contracts.ReconcileWorkflowType})
}

func workflowRegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: contracts.WorkflowType}
}
