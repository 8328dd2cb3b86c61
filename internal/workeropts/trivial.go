package workeropts

import (
	"context"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TrivialWorkflow is the name the bench's trivial workflow is registered
// under: one no-op activity (Noop), Temporal's floor that a delegation is
// compared with (docs/performance.md).
const TrivialWorkflow = "BenchTrivial"

// Noop is the trivial workflow's activity.
func Noop(context.Context) error { return nil }

// Trivial is a workflow with one no-op activity.
func Trivial(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteActivity(ctx, Noop).Get(ctx, nil)
}

// RegisterTrivial registers the bench's trivial workflow and its activity
// on w: the bench's in-process worker does, and `delegate worker` with its
// hidden --bench-trivial flag (the worker process the bench starts), here
// so that the worker build takes them without the bench.
func RegisterTrivial(w worker.Registry) {
	w.RegisterWorkflowWithOptions(Trivial, workflow.RegisterOptions{Name: TrivialWorkflow})
	w.RegisterActivity(Noop)
}
