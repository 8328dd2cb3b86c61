// Package interop starts independent A2A peer agents, written on the a2a-js
// SDK (npm @a2a-js/sdk 1.3.0 for A2A 1.0 and 0.3.14 for A2A 0.3), as child
// processes, so that tests can drive this project's client against agents it
// did not write.
//
// The agent is interop/agent.mjs at the repository root; its npm packages
// are pinned in interop/package.json and interop/package-lock.json and
// installed with `npm ci` in that directory (node_modules is not committed).
// Available reports whether node and the packages are there, so that tests
// can skip when they are not (and fail instead when DELEGATE_INTEROP=1).
//
// The agent serves its Agent Card at /.well-known/agent-card.json (name
// "js-claims-agent", one skill "open-claim", streaming), JSON-RPC at
// /a2a/jsonrpc and HTTP+JSON at /a2a/rest, all through the SDK's own express
// handlers, so its wire behaviour is the SDK's, quirks included. Scenarios
// are chosen by the field "scenario" of the data part of the first message
// (see the Scenario constants); GET /counts reports what arrived (Counts).
//
// Everything listens on 127.0.0.1 on a port the OS chooses.
package interop
