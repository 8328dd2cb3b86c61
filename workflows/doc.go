// Package workflows holds the Delegation workflow: the state machine that
// owns one delegated A2A task from start to finish (DESIGN.md, "The flow of
// one delegation"), and the ReconcileDelegations workflow a Schedule runs.
// Register puts both, and the activities, on a worker:
//
//	w := worker.New(c, contracts.TaskQueue, worker.Options{})
//	workflows.Register(w, &activities.Activities{Logger: logger}, workflows.Options{})
//
// The workflow never does I/O; every network step is an activity of package
// activities. What it reads and writes through history (its input, State,
// the handler names) lives in package contracts; backends start and answer
// delegations with package client.
//
// The files follow the flow: delegation.go (entry point and main loop),
// and one file per concern beside it.
package workflows
