package workflows

import (
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
