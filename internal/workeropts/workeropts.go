// Package workeropts holds the Temporal worker settings of `delegate
// worker`, in a package of their own so that the worker build (go build
// -tags worker ./cmd/delegate) takes them without the bench, which runs
// its workers with the same settings.
package workeropts

import "go.temporal.io/sdk/worker"

// Options are the worker.Options of every delegate worker (and of the
// bench's workers): 4 pollers each for workflow and activity tasks, the
// SDK's defaults otherwise (docs/scaling.md).
func Options() worker.Options {
	return worker.Options{
		MaxConcurrentWorkflowTaskPollers: 4,
		MaxConcurrentActivityTaskPollers: 4,
	}
}
