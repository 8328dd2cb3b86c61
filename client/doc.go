// Package client is the Go client for backend services that delegate work:
// start a delegation, answer the remote agent's question, cancel, read the
// local state and wait for the Outcome. It is a thin, typed layer over a
// Temporal client (go.temporal.io/sdk/client) and the Delegation workflow;
// the delegate CLI uses it too.
//
//	c, _ := sdkclient.Dial(sdkclient.Options{HostPort: "127.0.0.1:7233"})
//	h, err := client.Start(ctx, c, delegation)
//	...
//	out, err := h.Outcome(ctx) // blocks until the delegation ends
package client
