// Package activities holds every I/O step the Delegation workflow takes, as
// Temporal Activities: ResolveCard, CheckAndSend, SendMessage, PollTask,
// WatchTask, GetTask, CancelTask, CheckAuthorization, ReconcileOpen.
//
// Each maps its errors to a category of contracts (docs/architecture.md,
// principle 6) and returns them as a temporal.ApplicationError whose Type
// is the category: "transient" errors are retryable, every other category
// is not, so the workflow sees exactly one handling per category. Logs carry ids and
// categories, never message bodies.
//
// What travels between the workflow and the activities (their names,
// inputs, results and error types, and the decisions on a resolved card:
// ResolvedCard.Trusted and Usable, CardInUse.WhatChanged) is declared in
// package contracts (contracts/activity.go), so that the workflow does not
// import this package. Register registers the activities under their
// contracts names.
//
// One file per concern: activities.go (the Activities struct and how they
// dial an agent), card.go (ResolveCard), send.go (SendMessage),
// watch.go (PollTask, WatchTask, streams), task.go (GetTask, CancelTask),
// checksend.go, policy.go, reconcile.go, errors.go (categories and
// bounds), and register.go (Register).
package activities
