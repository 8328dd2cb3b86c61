// Command claims-agent serves the example A2A claims agent
// (internal/claimsagent): the Agent Card at /.well-known/agent-card.json,
// JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest (and their A2A 0.3
// forms under /a2a/v0.3/), and with --grpc-addr gRPC (A2A 1.0 §10) at that
// address. Its scenarios are
// in `claims-agent --help` and docs/claims-agent.md.
package main
