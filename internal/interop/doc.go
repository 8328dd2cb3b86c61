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
// handlers (and gRPC through its grpc handler), so its wire behaviour is the SDK's, quirks included. Scenarios
// are chosen by the field "scenario" of the data part of the first message
// (see the Scenario constants); GET /counts reports what arrived (Counts).
//
// Peers as people run them in production (Options):
//
//   - gRPC (BindingGRPC, SDK1, alone or with the others): the SDK's own
//     grpcService on a @grpc/grpc-js server on a second port; the card,
//     still served over HTTP, lists {"url": "127.0.0.1:PORT",
//     "protocolBinding": "GRPC", "protocolVersion": "1.0"}, a bare
//     host:port target as the SDK's samples write it (Agent.GRPCAddr).
//     a2a-go's a2agrpc/v1 transport dials it as is.
//   - OAuth 2.0 client credentials (OAuth, ClientID, ClientSecret,
//     TokenTTL, TokenURLOverride, RefuseTokens): the agent's own token
//     endpoint POST /oauth/token (Agent.TokenURL; RFC 6749 §4.4, HTTP Basic
//     or form client authentication), and every A2A request (JSON-RPC,
//     REST, gRPC metadata) needs a granted, unexpired Bearer token, else
//     HTTP 401 with WWW-Authenticate: Bearer or gRPC UNAUTHENTICATED,
//     decided before the SDK sees the request. The card (open) declares
//     the oauth2SecurityScheme OAuthScheme (clientCredentials, tokenUrl,
//     scope OAuthScope) and a requirement in SecurityForm: SecurityFormProto
//     ({"schemes": {NAME: {"list": [...]}}}, what the SDK's toJSON writes)
//     or SecurityFormMap ({NAME: [...]}).
//   - A static bearer (Bearer) instead of OAuth, with the scheme
//     BearerScheme.
//   - An extended card (ExtendedCard, SDK1, with OAuth or Bearer): the
//     public card declares capabilities.extendedAgentCard and lists only
//     PublicSkill; the SDK's GetExtendedAgentCard (JSON-RPC, REST, gRPC)
//     serves the card with ClaimSkill too, to authenticated callers only.
//
// Counts also report token requests and grants, refused requests and
// extended-card requests. Secrets go to the agent in temporary files, not
// in argv, and Options formats them redacted.
//
// Everything listens on 127.0.0.1 on a port the OS chooses.
package interop
