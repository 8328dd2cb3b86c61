// Package trpcpeer runs, in-process, an A2A agent built on trpc-a2a-go
// v0.2.5 (trpc.group/trpc-go/trpc-a2a-go: Tencent's own A2A implementation,
// not a2a-go), so that tests can drive this project's client against a peer
// it did not write.
//
// Start serves the library's server (server.NewA2AServer) over its own
// in-memory task manager (taskmanager.NewMemoryTaskManager) on 127.0.0.1
// with a port chosen at run time. The Agent Card is the library's default
// shape: a top-level "url" (JSON-RPC at "/"), no preferredTransport, and
// "protocolVersion": "0.2.5" (server.ProtocolVersion, the library
// constant); it is served at /.well-known/agent-card.json (and the old
// /.well-known/agent.json). The JSON-RPC methods are the library's:
// message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe.
//
// The agent is a "claims" agent with the scenarios of the repository's
// other agents (package interop, docs/claims-agent.md), chosen by the field
// "scenario" of the data part of the first message (the Scenario
// constants); "order_id" defaults to DefaultOrderID. A completed claim has
// one artifact named ArtifactName ("claim_opened": delegate takes an
// artifact's kind from its name, or metadata.output_kind, never from the
// data) whose one data part is {"claim_id": "CLM-...", "order_id": ...}.
//
// What the library does on the wire, quirks included (the agent adds
// none):
//
//   - message/send with "blocking": false (what delegate sends) is answered
//     with the task WORKING; the scenario goes on after the reply.
//   - tasks/cancel answers the task CANCELED and the task manager forgets
//     the task (TaskHandler.CleanTask): a later tasks/get is TaskNotFound.
//     Agent.Forget does the same to a task, as a restart of the in-memory
//     manager would.
//   - Every JSON-RPC error other than parse, invalid request, method not
//     found and invalid params is answered with HTTP 500, the A2A codes
//     (TaskNotFound -32001, TaskNotCancelable -32002, ...) included.
//   - tasks/resubscribe sends only the events after the subscription (no
//     Task first; A2A 0.3 §7.9 leaves replay to the server), and its stream
//     ends only when the task is forgotten (not at a final state).
//   - A request refused by the API key check gets HTTP 401 with the text
//     body "Unauthorized" (no JSON-RPC, no WWW-Authenticate).
//
// Options: capabilities.streaming on or off (Options.Streaming), the card's
// defaultInputModes (Options.InputModes), and an API key (Options.APIKey)
// that every JSON-RPC request must carry in the header APIKeyHeader,
// checked by the library's own auth.APIKeyAuthProvider
// (server.WithAuthProvider) and declared on the card as the apiKey
// securityScheme APIKeyScheme with a security requirement naming it (the
// card itself stays public).
//
// The agent counts what it saw (Agent.Counts): tasks created, messages
// received, cancels and the task ids they named, reads, resubscriptions and
// refused requests, so that a test can assert one task per delegation.
// Options.Log, when set, receives every HTTP exchange (request body,
// response status and body, both cut).
package trpcpeer
