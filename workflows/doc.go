// Package workflows holds the Delegation workflow: the state machine that
// owns one delegated A2A task from start to finish (docs/architecture.md, "The flow of
// one delegation"), and the ReconcileDelegations workflow a Schedule runs.
// RegisterWorkflows puts both on a worker, activities.Register their
// activities:
//
//	w := worker.New(c, contracts.TaskQueue, worker.Options{})
//	workflows.RegisterWorkflows(w, workflows.Options{})
//	activities.Register(w, &activities.Activities{Logger: logger})
//
// The workflow never does I/O; every network step is an activity of package
// activities, which this package does not import: it schedules them by
// their names in contracts (contracts.ActivityCheckAndSend, ...). What it
// reads and writes through history (its input, State, the handler names,
// the activities' inputs and results, and the decisions on a resolved
// card) lives in package contracts; backends start and answer delegations
// with package client.
//
// One file per concern, in the order of the flow: delegation.go (the
// entry point, the run's fields, the main loop), send.go and checksend.go
// (one round as one CheckAndSend activity: the card, the authorization and
// the send; unknown outcomes; retries), card.go (adopt the card, card
// changes, rediscover), follow.go
// (the loop over the remote task's snapshots: a step per snapshot, an
// input round (ask, wait, answer), watching, republished questions),
// input.go (show a question, wait for and check an operator's answer), unknown.go (a send whose outcome is
// unknown), cancel.go (the deadline timer, stops, canceling the remote
// task, late results), outcome.go (the Outcome of every ending),
// handlers.go and payloads.go (Signals, Updates, and what typed input is
// refused), inbox.go (what the listener and the handlers hand to the main
// coroutine), details.go (the UI's current details), carry.go
// (continue-as-new), wait.go (the one place the workflow blocks, and how
// the deadline bounds each wait), activity.go (running activities and
// their options), records.go (the one writer of each growing record of
// State), errors.go (the stops, each with its Outcome), versions.go (the versioning rule and the registry of changes:
// docs/versioning.md), register.go, reconcile.go, boundary.go (the
// workflow's own input checks), searchattributes.go, rolling.go and
// rolling_next.go (what "release N+1" of the rolling-deploy test writes at
// a hand-over: build tag rollingnext).
package workflows
