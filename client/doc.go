// Package client is the Go client for backend services that delegate work,
// and the one the delegate CLI uses: start a delegation (Start, with the
// UI's summary and details, StaticSummary and StaticDetails, and
// WithStarter for who started it), answer the remote agent's question,
// cancel, read the local state, wait for the Outcome, list delegations
// (List), and the operator's moves (Revoke, Resolve, Rediscover,
// Reconcile, ScheduleReconcile, SweepOrphans). It is a thin, typed layer
// over a Temporal client (go.temporal.io/sdk/client) and links only that
// and package contracts (and codec, for encrypted payloads): no A2A stack.
//
//	c, err := client.Dial(ctx, client.Connection{}) // profile, TEMPORAL_* env, or fields
//	h, err := client.Start(ctx, c, delegation)
//	...
//	out, err := h.Outcome(ctx) // blocks until the delegation ends
package client
