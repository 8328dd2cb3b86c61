// Package mcp is delegate's Model Context Protocol server (`delegate mcp`,
// on github.com/modelcontextprotocol/go-sdk): the way in for agent
// runtimes (a desktop assistant, an IDE agent, another service's model
// loop).
//
// A model never writes a contract. An operator's templates file
// (LoadTemplates, docs/mcp.md) lists what may be started: each template
// is one MCP tool whose input schema is the template's parameters (plus
// wait_seconds), checked strictly; the parameters fill the template's
// text and become the message's data, and everything else — the agent,
// the skill, the purpose, the allowed outputs, the deadline, the write
// authority ("none") and who answers the agent's questions — comes from
// the template. The fixed tools delegation_status, delegation_list,
// delegation_cancel and delegation_answer follow what was started, and
// each delegation is a resource too (ResourceScheme, delegation://ID: its
// state as delegation_status returns it; a subscriber is told when its
// state, question or outcome changes).
//
// Identity is bound at the adapter, never taken from arguments: over
// stdio the actor is the one the launcher gave (Options.Actor); over
// Streamable HTTP every request carries a bearer token (Tokens, a file of
// token hashes read again when it changes; OIDC, JWTs of an OAuth issuer,
// the actor being sub) checked by the go-sdk's auth.RequireBearerToken.
// The HTTP endpoint (Server.Mux, HTTPOptions) publishes OAuth protected
// resource metadata (RFC 9728) in both modes, names it in every 401,
// refuses an Origin that is not allowed (403) and bounds each actor's
// sessions, which are not charged to its tool-call rate.
// The actor is recorded as the delegation's starter (Search Attribute
// DelegationStarter, client.WithStarter) and as answered_by of an answer
// given through MCP ("alice" for the human through elicitation, "alice
// (model)" through delegation_answer). An actor sees, answers and cancels
// only the delegations it started; another's id is "not found".
//
// A "human" template's question is put to the actor's human without a
// call ever waiting for them (human.go): up to MCP 2025-11-25 as an
// elicitation/create form kept pending by the session, not by the call
// (the call returns by its wait_seconds; the answer, whenever it comes
// while the session lives, is sent for the form's round, Elicitation in
// the Result); at MCP 2026-07-28 as an input request in the result,
// whose retry carries the answer and a requestState the server sealed.
// A session that ends withdraws its forms and ends its calls
// (Server.Activity counts both); over HTTP a 2026-07-28 request is
// served statelessly (sessions.go).
//
// A template tool also runs as an MCP task bound to its delegation
// (tasks.go, tasks_ext.go): at 2025-11-25 a task-augmented tools/call
// (the tasks utility: tasks/get, tasks/result, tasks/cancel, tasks/list),
// at 2026-07-28 for a client that declares the tasks extension
// (io.modelcontextprotocol/tasks: tasks/get, tasks/update, tasks/cancel).
// The task's id is the delegation's; its state is the delegation's, read
// from Temporal. wire.go reads each message before the go-sdk does: the
// task parameter the go-sdk (v1.8.0) drops, methods nobody serves (over
// HTTP, -32601), and a call whose HTTP request ended (cancelled).
//
// Every delegation tool returns structuredContent Result; the remote
// agent's words are quoted and marked (Question.Source "remote_agent"),
// large outputs summarised (BoundOutcome). Arguments are bounded before
// they are decoded (MaxArgumentBytes), each actor's calls are rate
// limited, and every refusal is a tool error (isError) naming the
// argument and the rule.
package mcp
