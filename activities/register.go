package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/contracts"
)

// Register registers the activities the workflows schedule, each under
// its name in contracts (contracts.ActivityCheckAndSend, ...), and no
// other method of a. (ResolveCard, CheckAuthorization and SendMessage run
// inside CheckAndSend; the workflow schedules none of them.) A worker
// registers the workflows with workflows.RegisterWorkflows and the
// activities with Register.
func Register(r worker.ActivityRegistry, a *Activities) {
	fns := activityFuncs(a)
	for _, name := range contracts.ActivityNames {
		r.RegisterActivityWithOptions(fns[name], activity.RegisterOptions{Name: name})
	}
}

// activityFuncs maps each name of contracts.ActivityNames to its method,
// typed, so that a method whose signature leaves the contracts types
// fails to compile here.
func activityFuncs(a *Activities) map[string]any {
	var (
		checkAndSend  func(context.Context, contracts.CheckAndSendInput) (contracts.CheckAndSendResult, error)       = a.CheckAndSend
		pollTask      func(context.Context, contracts.WatchInput) (contracts.TaskSnapshot, error)                    = a.PollTask
		watchTask     func(context.Context, contracts.WatchInput) (contracts.TaskSnapshot, error)                    = a.WatchTask
		getTask       func(context.Context, contracts.GetTaskInput) (contracts.TaskSnapshot, error)                  = a.GetTask
		findTask      func(context.Context, contracts.FindTaskInput) (contracts.FindTaskResult, error)               = a.FindTask
		checkCred     func(context.Context, contracts.CheckCredentialInput) (contracts.CheckCredentialResult, error) = a.CheckCredential
		cancelTask    func(context.Context, contracts.CancelInput) (contracts.TaskSnapshot, error)                   = a.CancelTask
		reconcileOpen func(context.Context, contracts.ReconcileInput) ([]string, error)                              = a.ReconcileOpen
		cancelOrphans func(context.Context, contracts.ReconcileInput) ([]contracts.Orphan, error)                    = a.CancelOrphans
	)
	return map[string]any{
		contracts.ActivityCheckAndSend:    checkAndSend,
		contracts.ActivityPollTask:        pollTask,
		contracts.ActivityWatchTask:       watchTask,
		contracts.ActivityGetTask:         getTask,
		contracts.ActivityFindTask:        findTask,
		contracts.ActivityCheckCredential: checkCred,
		contracts.ActivityCancelTask:      cancelTask,
		contracts.ActivityReconcileOpen:   reconcileOpen,
		contracts.ActivityCancelOrphans:   cancelOrphans,
	}
}
