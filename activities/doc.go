// Package activities holds every I/O step the Delegation and
// ReconcileDelegations workflows take, as Temporal Activities (the names of
// contracts.ActivityNames): CheckAndSend (which resolves the card, checks
// the authorization and sends, in one activity), PollTask, WatchTask,
// GetTask, FindTask, CheckCredential, CancelTask, ReconcileOpen and
// CancelOrphans.
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
// The steps inside CheckAndSend (ResolveCard, CheckAuthorization,
// SendMessage) are methods too, registered as no activity of their own.
package activities
