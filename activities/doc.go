// Package activities holds every I/O step the Delegation workflow takes, as
// Temporal Activities: ResolveCard, CheckAndSend, SendMessage, PollTask,
// WatchTask, GetTask, CancelTask, CheckAuthorization, ReconcileOpen.
//
// Each maps its errors to a category of contracts (DESIGN.md principle 6)
// and returns them as a temporal.ApplicationError whose Type is the category:
// "transient" errors are retryable, every other category is not, so the
// workflow sees exactly one handling per category. Logs carry ids and
// categories, never message bodies.
//
// One file per concern: activities.go (the Activities struct and how they
// dial an agent), card.go (ResolveCard), send.go (SendMessage),
// watch.go (PollTask, WatchTask, streams), task.go (GetTask, CancelTask),
// checksend.go, policy.go, reconcile.go, and errors.go (categories and
// bounds).
package activities
