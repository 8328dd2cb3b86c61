// Package push lets remote agents push their tasks' changes to delegate
// (A2A 1.0 §4.3, push notifications) instead of being polled.
//
// The worker registers, for each task of an agent whose card declares
// pushNotifications, a push config (CreateTaskPushNotificationConfig)
// whose URL names the delegation (Settings.URL) and whose token is
// derived from a key only the worker and the webhook hold (Settings.Token:
// HMAC-SHA256 of the workflow id and the task id), so that no token is
// ever stored in Temporal's history and a token opens one delegation's
// one task only.
//
// Handler is the webhook (`delegate webhook`): it authenticates every
// notification (the token, and with WithSignatures the JWT the agent signs
// it with, checked against the agent's keys in the trust store), bounds
// its size, refuses replays and stale notifications, and signals the
// delegation "task-update" (Relay). The workflow
// treats that as a hint and reads the task before it acts, so a forged
// or reordered push can never complete a delegation.
package push
