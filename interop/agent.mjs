#!/usr/bin/env node
// An independent A2A peer agent built on the a2a-js SDK, for interop tests of
// the delegate Go client (internal/interop starts it as a child process).
//
//   node interop/agent.mjs --sdk 1|0.3 [--bindings jsonrpc,rest,grpc] [--port 0]
//                          [--sign-jwk FILE] [--card-03-fields] [--work-ms 50] [--push]
//                          [--oauth --client-id ID --client-secret-file FILE
//                           [--token-ttl-ms 3600000] [--token-url-override URL]
//                           [--refuse-tokens]]
//                          [--bearer-file FILE] [--security-form proto|map]
//                          [--extended-card]
//
// --sdk 1    @a2a-js/sdk 1.3.0 (npm alias "a2a-js-1"), A2A 1.0.
// --sdk 0.3  @a2a-js/sdk 0.3.14 (npm alias "a2a-js-03"), A2A 0.3.
//
// Everything on the wire is the SDK's own: DefaultRequestHandler,
// InMemoryTaskStore, DefaultExecutionEventBusManager, and the express
// handlers jsonRpcHandler (mounted at /a2a/jsonrpc), restHandler (at
// /a2a/rest) and agentCardHandler (at /.well-known/agent-card.json), the
// paths the SDK's README uses. This file only adds the executor (scripted
// scenarios), the request counters (/counts) and process plumbing. Quirks of
// the SDK are kept on purpose, for example: the 1.x executor must publish a
// Task as the first event of every execute() call, so a follow-up on an
// INPUT_REQUIRED task first republishes that INPUT_REQUIRED task (and a
// returnImmediately reply carries it).
//
// When ready it prints exactly one line on stdout:
//   {"url":"http://127.0.0.1:PORT","card_url":"http://127.0.0.1:PORT/.well-known/agent-card.json"}
// with "grpc_addr":"127.0.0.1:PORT2" added when gRPC is served.
// Everything else (the SDK's logging included) goes to stderr. It exits on
// SIGTERM, SIGINT, or when stdin, if it is a pipe, reaches EOF (the parent
// went away).
//
// Scenarios are chosen by the data part field "scenario" of the first message
// (default "lost-parcel"); "order_id" (default "A-1001") and "after_ms"
// (default 1000) are read from the same data part:
//   lost-parcel  SUBMITTED, WORKING, then INPUT_REQUIRED asking for a photo;
//                a follow-up (same taskId, contextId) gives WORKING, then
//                COMPLETED with the artifact "claim_opened".
//   instant      a Task that is COMPLETED at once, with the artifact.
//   fail         SUBMITTED, WORKING, then FAILED ("the order is unknown").
//   reject       SUBMITTED, then REJECTED ("claims for this skill are closed").
//   slow         SUBMITTED, WORKING until canceled (CancelTask → CANCELED).
//   self-cancel, self-fail, self-complete
//                like lost-parcel up to INPUT_REQUIRED; after after_ms the
//                agent ends the task itself (CANCELED "the agent gave up
//                waiting", FAILED "the agent timed out", or COMPLETED with the
//                artifact) unless a follow-up or a cancel came first.
// The agent sleeps --work-ms between WORKING and the next state.
//
// --push declares capabilities.pushNotifications: the SDK's
// DefaultRequestHandler then keeps push configs (InMemoryPushNotificationStore)
// and POSTs every later event of a task to them with its
// DefaultPushNotificationSender (token in X-A2A-Notification-Token).
//
// GET /counts gives {"messages":N,"tasks":N,"cancels":N,"get_tasks":N,
// "token_requests":N,"token_grants":N,"unauthorized":N,
// "extended_card_requests":N}: SendMessage/SendStreamingMessage
// (message/send, message/stream) requests, distinct task ids saved in the
// task store, CancelTask (tasks/cancel) requests, GetTask (tasks/get)
// requests, POST /oauth/token requests and the tokens it granted, A2A
// requests refused for a missing, unknown, expired or refused token, and
// GetExtendedAgentCard requests (JSON-RPC GetExtendedAgentCard, REST GET
// .../extendedAgentCard, gRPC). Requests are counted at the HTTP layer (for
// gRPC in a wrapper of the SDK's service), before the SDK sees them and
// after the token check: a refused request counts only as unauthorized.
// POST /counts/reset zeroes the counters.
//
// gRPC (--bindings grpc, sdk 1 only; combinable: --bindings jsonrpc,grpc).
// The SDK's own grpcService (a2a-js-1/server/grpc, with its A2AService
// definition) on a @grpc/grpc-js Server bound to 127.0.0.1:0 with insecure
// credentials, on its own port. The card (still served over HTTP at
// /.well-known/agent-card.json) lists it as {"url":"127.0.0.1:PORT2",
// "protocolBinding":"GRPC","protocolVersion":"1.0"}: a bare host:port
// target, as the SDK's own multi-transport sample writes it
// ("localhost:PORT") and as its GrpcTransport passes it to grpc-js. The SDK
// checks the A2A-Version metadata of every gRPC call against the card.
//
// OAuth 2.0 client credentials (--oauth, both SDKs). The agent runs its own
// token endpoint, POST /oauth/token on its HTTP port (RFC 6749 §4.4):
// grant_type=client_credentials; the client authenticates with HTTP Basic
// or the client_id/client_secret form fields (either, not both); optional
// scope (only "claims:write"; it is also the default). Answer: {access_token,
// token_type:"Bearer", expires_in (seconds, rounded up), scope} with
// Cache-Control: no-store; errors are RFC 6749 §5.2 JSON (400
// invalid_request, unsupported_grant_type, invalid_scope; 401
// invalid_client). --client-id names the client, --client-secret-file holds
// its secret (the whole file without trailing newlines; never in argv, never
// printed). Tokens are 32 random bytes (base64url), valid for --token-ttl-ms
// (default 3600000) and kept only as their SHA-256. Every A2A request —
// JSON-RPC, REST, and gRPC (metadata "authorization") — must carry
// "Authorization: Bearer TOKEN" with a granted, unexpired token, or it is
// refused before the SDK sees it: HTTP 401 with WWW-Authenticate: Bearer
// (error="invalid_token" when a token was given) and the body
// {"error":{"code":401,"status":"UNAUTHENTICATED","message":...}} for
// JSON-RPC and REST alike (a2a-js has no authentication error of its own),
// gRPC status UNAUTHENTICATED. The card, /counts and the token endpoint stay
// open. --refuse-tokens: the endpoint still mints tokens, but every A2A
// request is refused (401). The card declares
//   "securitySchemes": {"carrier-oauth": {"oauth2SecurityScheme": {"flows":
//     {"clientCredentials": {"tokenUrl": "<url>/oauth/token",
//      "scopes": {"claims:write": "open claims"}}}}}}
// (--token-url-override URL names another tokenUrl; the agent's endpoint
// stays where it is) and "securityRequirements" in the form --security-form
// picks: proto (default) [{"schemes": {"carrier-oauth": {"list":
// ["claims:write"]}}}], which is A2A 1.0's a2a.proto JSON and exactly what
// the SDK's generated SecurityRequirement.toJSON writes (the agent makes it
// with that function); map [{"carrier-oauth": ["claims:write"]}], the
// OpenAPI form. With --sdk 0.3 the card has the 0.3 fields instead:
// "securitySchemes": {"carrier-oauth": {"type": "oauth2", "flows":
// {"clientCredentials": {...}}}} and "security": [{"carrier-oauth":
// ["claims:write"]}].
//
// --bearer-file FILE (instead of --oauth): every A2A request needs
// "Authorization: Bearer <the file's content>", refused as above otherwise;
// the card declares {"static-bearer": {"httpAuthSecurityScheme": {"scheme":
// "Bearer"}}} (0.3: {"type": "http", "scheme": "bearer"}) and a requirement
// with no scopes in the --security-form form.
//
// Extended card (--extended-card, sdk 1, with --oauth or --bearer-file).
// The public card declares capabilities.extendedAgentCard: true and lists
// only the skill "public-info"; the extended card (A2A 1.0 §3.1.11,
// JSON-RPC method GetExtendedAgentCard, REST GET
// /a2a/rest/extendedAgentCard, gRPC GetExtendedAgentCard) lists
// "public-info" and "open-claim". It is the SDK's own: DefaultRequestHandler
// gets it as its extendedAgentCardProvider and serves it to users the
// UserBuilder marks authenticated (every request the token check let
// through). Requests without a valid token are refused before the SDK.
// Quirks kept: the SDK serves the public card as JSON.stringify of the object
// it was given, but the extended card through AgentCard.toJSON (JSON-RPC,
// REST) or protobuf (gRPC), so the extended card must be handed over in the
// SDK's internal form (AgentCard.fromJSON of the JSON); fromJSON cannot read
// the map form of securityRequirements (it becomes {}, "no requirement"),
// so the extended card always carries the proto form. Given an unauthenticated
// user the SDK would answer with the public card rather than refuse.
//
// Card signing (--sign-jwk, sdk 1 only). What the a2a-js 1.3.0 signer does
// (node_modules/a2a-js-1/dist/index.js, src/signature.ts in the SDK):
//  - generateAgentCardSignature(privateKey, protectedHeader, header?) returns
//    a generator that DefaultRequestHandler.getAgentCard() calls on EVERY
//    card fetch (and on every JSON-RPC/REST request, which reads the card to
//    check A2A-Version): ES256 signatures are randomized, so each fetch gets
//    different "signatures" bytes and a different ETag.
//  - The protected header is exactly the object the caller passes, as JSON
//    in the caller's key order, base64url-encoded by jose's FlattenedSign
//    (this agent passes {"alg":"ES256","kid":<kid of the JWK>,"typ":"JOSE"},
//    as the SDK's doc example does; its verifier requires kid, typ and alg).
//    No unprotected header is passed, so the entry is {protected, signature}.
//  - The payload is canonicalizeAgentCard(card): the card is round-tripped
//    through the SDK's protobuf-generated AgentCard.fromJSON/toJSON, which
//    DROPS every field outside the 1.0 schema (so the 0.3 top-level fields
//    of --card-03-fields are NOT signed) and omits the protobuf defaults of
//    non-optional fields (an extension's "required": false, "", empty lists
//    and maps; the proto3-optional booleans such as capabilities.streaming
//    and pushNotifications are kept even when false); then "signatures" is
//    deleted; then cleanEmpty() drops "", null, and empty arrays/objects
//    recursively; then jcsStringify() (keys sorted with JS's default sort,
//    JSON.stringify for scalars) serializes it. Checked with node: for
//    {"url":"x","extra":{...},"iconUrl":"","defaultInputModes":[],
//    "capabilities":{"pushNotifications":false,"extensions":[{"uri":"u",
//    "required":false}]},...} the payload has no url, extra, iconUrl,
//    defaultInputModes or required, and keeps "pushNotifications":false.
//    So the JWS is over the JCS form of the card WITHOUT "signatures" — but of
//    the SDK-normalized card, not of the bytes served. The payload is
//    detached (not in the served entry).
// @a2a-js/sdk 0.3.14 has no card signer (only the AgentCardSignature type):
// --sign-jwk with --sdk 0.3 is refused.

import { fstatSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import express from 'express';

// Only the ready line may go to stdout.
for (const k of ['log', 'info', 'debug']) console[k] = (...a) => console.error(...a);

const USAGE = `usage: node agent.mjs --sdk 1|0.3 [--bindings jsonrpc,rest,grpc] [--port 0] [--sign-jwk FILE] [--card-03-fields] [--work-ms 50] [--push]
       [--oauth --client-id ID --client-secret-file FILE [--token-ttl-ms 3600000] [--token-url-override URL] [--refuse-tokens]]
       [--bearer-file FILE] [--security-form proto|map] [--extended-card]

An A2A claims agent on the a2a-js SDK (1.3.0: A2A 1.0; 0.3.14: A2A 0.3), on 127.0.0.1.
Prints {"url":...,"card_url":...[,"grpc_addr":...]} when ready. The first message's data field "scenario" picks:
  lost-parcel (default)  INPUT_REQUIRED, then COMPLETED (claim_opened) after one answer
  instant | fail | reject  COMPLETED | FAILED | REJECTED at once
  big-numbers            COMPLETED at once, the claim_opened data holding BIG_NUMBERS (numbers no double holds)
  slow                   WORKING until canceled
  self-cancel | self-fail | self-complete  INPUT_REQUIRED, then the agent ends the task itself after
                         data field after_ms (default 1000)
GET /counts shows the requests that arrived; POST /counts/reset zeroes them.
--oauth: POST /oauth/token mints bearer tokens (client credentials); every A2A request needs one.`;

function fail(msg) {
  console.error(`agent: ${msg}\n${USAGE}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      sdk: { type: 'string' },
      bindings: { type: 'string', default: 'jsonrpc' },
      port: { type: 'string', default: '0' },
      'sign-jwk': { type: 'string' },
      'card-03-fields': { type: 'boolean', default: false },
      'work-ms': { type: 'string', default: '50' },
      push: { type: 'boolean', default: false },
      oauth: { type: 'boolean', default: false },
      'client-id': { type: 'string' },
      'client-secret-file': { type: 'string' },
      'token-ttl-ms': { type: 'string', default: '3600000' },
      'token-url-override': { type: 'string' },
      'refuse-tokens': { type: 'boolean', default: false },
      'bearer-file': { type: 'string' },
      'security-form': { type: 'string' },
      'extended-card': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (e) {
  fail(e.message);
}
if (args.help) {
  console.error(USAGE);
  process.exit(0);
}
const SDK = args.sdk;
if (SDK !== '1' && SDK !== '0.3') fail('--sdk must be 1 or 0.3');
const BINDINGS = args.bindings.split(',').map((s) => s.trim()).filter(Boolean);
if (BINDINGS.length === 0 || BINDINGS.some((b) => b !== 'jsonrpc' && b !== 'rest' && b !== 'grpc')) fail('--bindings takes jsonrpc, rest and/or grpc');
if (new Set(BINDINGS).size !== BINDINGS.length) fail('--bindings repeats a binding');
if (BINDINGS.includes('grpc') && SDK !== '1') fail('--bindings grpc is for --sdk 1 only (the a2a-js 1.x server/grpc export)');
const PORT = Number(args.port);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) fail('--port must be 0..65535');
const WORK_MS = Number(args['work-ms']);
if (!Number.isFinite(WORK_MS) || WORK_MS < 0) fail('--work-ms must be a number >= 0');
if (args['card-03-fields'] && SDK !== '1') fail('--card-03-fields is for --sdk 1 only');
if (args['sign-jwk'] && SDK !== '1') fail('--sign-jwk: @a2a-js/sdk 0.3.14 has no card signer; use --sdk 1');

// readSecret reads a secret from a file (so it is not in argv): the whole
// file, without trailing CR/LF. It is never printed.
function readSecret(flag) {
  let v;
  try {
    v = readFileSync(args[flag], 'utf8').replace(/[\r\n]+$/, '');
  } catch (e) {
    fail(`--${flag}: cannot read the file (${e.code ?? 'error'})`);
  }
  if (v === '') fail(`--${flag}: the file is empty`);
  return v;
}

const OAUTH = args.oauth;
if (OAUTH) {
  if (!args['client-id']) fail('--oauth needs --client-id');
  if (!args['client-secret-file']) fail('--oauth needs --client-secret-file');
  if (args['bearer-file']) fail('--oauth and --bearer-file exclude each other');
} else {
  for (const f of ['client-id', 'client-secret-file', 'token-url-override']) if (args[f] !== undefined) fail(`--${f} needs --oauth`);
  if (args['refuse-tokens']) fail('--refuse-tokens needs --oauth');
}
const CLIENT_ID = args['client-id'];
const CLIENT_SECRET = OAUTH ? readSecret('client-secret-file') : undefined;
const STATIC_BEARER = args['bearer-file'] ? readSecret('bearer-file') : undefined;
if (STATIC_BEARER !== undefined && !/^[A-Za-z0-9\-._~+/]+=*$/.test(STATIC_BEARER)) fail('--bearer-file: not an RFC 6750 b64token');
const TOKEN_TTL_MS = Number(args['token-ttl-ms']);
if (!Number.isInteger(TOKEN_TTL_MS) || TOKEN_TTL_MS <= 0) fail('--token-ttl-ms must be an integer > 0');
if (args['token-url-override'] !== undefined) {
  try { new URL(args['token-url-override']); } catch { fail('--token-url-override must be an absolute URL'); }
}
const AUTH = OAUTH ? 'oauth' : STATIC_BEARER !== undefined ? 'bearer' : undefined;
if (args['security-form'] !== undefined) {
  if (!AUTH) fail('--security-form needs --oauth or --bearer-file');
  if (SDK !== '1') fail('--security-form is for --sdk 1 only (a 0.3 card has the map form, "security")');
  if (args['security-form'] !== 'proto' && args['security-form'] !== 'map') fail('--security-form takes proto or map');
}
const SECURITY_FORM = args['security-form'] ?? 'proto';
if (args['extended-card']) {
  if (SDK !== '1') fail('--extended-card is for --sdk 1 only');
  if (!AUTH) fail('--extended-card needs --oauth or --bearer-file (the extended card is for authenticated clients)');
}

const HOST = '127.0.0.1';
const NAME = 'js-claims-agent';
const SKILL_ID = 'open-claim';
const PUBLIC_SKILL_ID = 'public-info';
const PATHS = { jsonrpc: '/a2a/jsonrpc', rest: '/a2a/rest' };
const CARD_PATH = '/.well-known/agent-card.json';
const TOKEN_PATH = '/oauth/token';
const BINDING_NAMES = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON', grpc: 'GRPC' };
const SCHEME = AUTH === 'oauth' ? 'carrier-oauth' : 'static-bearer';
const SCOPE = 'claims:write';
const SCOPES = { [SCOPE]: 'open claims' };

const TEXT = {
  question: 'Please send a photo of the box the parcel was shipped in.',
  fail: 'the order is unknown',
  reject: 'claims for this skill are closed',
  canceled: 'the task was canceled at the client\'s request',
  'self-cancel': 'the agent gave up waiting',
  'self-fail': 'the agent timed out',
};
const SCENARIOS = new Set(['lost-parcel', 'instant', 'big-numbers', 'fail', 'reject', 'slow', 'self-cancel', 'self-fail', 'self-complete']);

// ---------------------------------------------------------------- counters

const counts = {
  messages: 0, tasks: 0, cancels: 0, get_tasks: 0,
  token_requests: 0, token_grants: 0, unauthorized: 0, extended_card_requests: 0,
};
const createdTasks = new Set();

const RPC_METHODS = {
  SendMessage: 'messages', SendStreamingMessage: 'messages', 'message/send': 'messages', 'message/stream': 'messages',
  CancelTask: 'cancels', 'tasks/cancel': 'cancels',
  GetTask: 'get_tasks', 'tasks/get': 'get_tasks',
  GetExtendedAgentCard: 'extended_card_requests', 'agent/getAuthenticatedExtendedCard': 'extended_card_requests',
};
// gRPC methods counted (the grpc-js handler names of A2AService).
const GRPC_METHODS = {
  sendMessage: 'messages', sendStreamingMessage: 'messages', cancelTask: 'cancels', getTask: 'get_tasks',
  getExtendedAgentCard: 'extended_card_requests',
};

// countRest counts a REST request by its method and path (relative to the
// REST mount point): POST .../message:send|stream, POST .../tasks/ID:cancel,
// GET .../tasks/ID, GET .../extendedAgentCard (0.3: .../v1/card). Both the
// 1.0 paths and the 0.3 "/v1/..." ones match.
function countRest(req) {
  let p = req.path;
  try { p = decodeURIComponent(p); } catch { /* keep it raw */ }
  if (req.method === 'POST' && /\/message:(send|stream)$/.test(p)) counts.messages++;
  else if (req.method === 'POST' && /\/tasks\/[^/]+:cancel$/.test(p)) counts.cancels++;
  else if (req.method === 'GET' && /\/tasks\/[^/:]+$/.test(p)) counts.get_tasks++;
  else if (req.method === 'GET' && (/\/extendedAgentCard$/.test(p) || p === '/v1/card')) counts.extended_card_requests++;
}

// tapJSONRPC counts a JSON-RPC request by its method without consuming the
// body: it listens to the body as the SDK's own parser reads it (a prepended
// 'data' listener does not start the flow), and counts when the body ends.
function tapJSONRPC(req) {
  if (req.method !== 'POST') return;
  const chunks = [];
  let size = 0;
  req.prependListener('data', (c) => {
    if (size <= 1 << 20) chunks.push(c);
    size += c.length;
  });
  req.prependListener('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const what = body && typeof body === 'object' ? RPC_METHODS[body.method] : undefined;
      if (what) counts[what]++;
    } catch { /* not JSON: not a call we count */ }
  });
}

function counting(req, _res, next) {
  if (req.path === PATHS.jsonrpc || req.path === PATHS.jsonrpc + '/') tapJSONRPC(req);
  else if (req.path.startsWith(PATHS.rest + '/')) countRest({ method: req.method, path: req.path.slice(PATHS.rest.length) });
  next();
}

// ---------------------------------------------------------------- auth

// Tokens minted by POST /oauth/token, by the SHA-256 of the token (the
// token itself is kept nowhere): { expires (ms since epoch), scope }.
const tokens = new Map();
const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest();
const sameSecret = (a, b) => timingSafeEqual(sha256(a), sha256(b)); // equal lengths, constant time
const STATIC_BEARER_HASH = STATIC_BEARER !== undefined ? sha256(STATIC_BEARER) : undefined;

// checkBearer reads an Authorization value ("Bearer TOKEN", RFC 6750 §2.1;
// the scheme is case-insensitive). It returns { ok: true, principal } or
// { ok: false, why } where why is "missing" (no Bearer credentials) or
// "invalid" (unknown, expired, or refused by --refuse-tokens), with a
// description that never contains the token.
function checkBearer(header) {
  const m = typeof header === 'string' ? /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header) : null;
  if (!m) return { ok: false, why: 'missing', text: 'a Bearer token is required' };
  const token = m[1];
  if (AUTH === 'bearer') {
    return timingSafeEqual(sha256(token), STATIC_BEARER_HASH)
      ? { ok: true, principal: 'static-bearer' }
      : { ok: false, why: 'invalid', text: 'the token is not valid' };
  }
  const key = sha256(token).toString('hex');
  const t = tokens.get(key);
  if (!t) return { ok: false, why: 'invalid', text: 'the token is unknown' };
  if (Date.now() >= t.expires) return { ok: false, why: 'invalid', text: 'the token expired' };
  if (args['refuse-tokens']) return { ok: false, why: 'invalid', text: 'the agent refuses every token (--refuse-tokens)' };
  return { ok: true, principal: CLIENT_ID };
}

// A user the SDK's UserBuilder hands to the request handler once the gate
// let the request through (the SDK's User interface: isAuthenticated,
// userName).
class GatedUser {
  constructor(name) { this.name = name; }
  get isAuthenticated() { return true; }
  get userName() { return this.name; }
}
const UNAUTHENTICATED = { get isAuthenticated() { return false; }, get userName() { return ''; } };
// userBuilder for the SDK's express and grpc handlers: req.a2aPrincipal
// (express) or call.a2aPrincipal (grpc) is set by the gate.
const userBuilder = async (reqOrCall) => (reqOrCall?.a2aPrincipal ? new GatedUser(reqOrCall.a2aPrincipal) : UNAUTHENTICATED);

// gate refuses an A2A HTTP request (JSON-RPC or REST) without a valid
// token, before the SDK sees it: HTTP 401 with WWW-Authenticate (RFC 6750
// §3: error="invalid_token" when a token was given) and a google.rpc.Status
// body (A2A 1.0 §11.6; the a2a-js SDK has no authentication error of its
// own, so this is plumbing, not the SDK's answer).
function gate(req, res, next) {
  if (!AUTH) return next();
  const p = req.path;
  const a2a = p === PATHS.jsonrpc || p.startsWith(PATHS.jsonrpc + '/') || p === PATHS.rest || p.startsWith(PATHS.rest + '/');
  if (!a2a) return next();
  const v = checkBearer(req.get('authorization'));
  if (v.ok) {
    req.a2aPrincipal = v.principal;
    return next();
  }
  counts.unauthorized++;
  const challenge = `Bearer realm="${NAME}"` + (AUTH === 'oauth' ? `, scope="${SCOPE}"` : '') +
    (v.why === 'invalid' ? `, error="invalid_token", error_description="${v.text}"` : '');
  res.set('WWW-Authenticate', challenge);
  res.status(401).json({ error: { code: 401, status: 'UNAUTHENTICATED', message: v.text } });
}

// tokenEndpoint is the OAuth 2.0 token endpoint, client credentials grant
// only (RFC 6749 §4.4). The client authenticates with HTTP Basic (§2.3.1,
// client id and secret form-urlencoded, then base64) or with client_id and
// client_secret form fields, not both (§2.3: "MUST NOT use more than one
// authentication method"). Errors are §5.2 JSON: 400 invalid_request,
// unsupported_grant_type or invalid_scope; 401 invalid_client (with
// WWW-Authenticate: Basic). A grant (§5.1) is
// {access_token, token_type: "Bearer", expires_in (s), scope}, no-store.
function tokenEndpoint(req, res) {
  counts.token_requests++;
  res.set('Cache-Control', 'no-store');
  res.set('Pragma', 'no-cache');
  const oauthError = (status, error, description) => {
    if (status === 401) res.set('WWW-Authenticate', `Basic realm="${NAME}"`);
    res.status(status).json({ error, error_description: description });
  };
  if (!req.is('application/x-www-form-urlencoded')) {
    return oauthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
  }
  const body = req.body && typeof req.body === 'object' ? req.body : {};
  const field = (k) => (typeof body[k] === 'string' ? body[k] : Array.isArray(body[k]) ? null : undefined);
  for (const k of ['grant_type', 'scope', 'client_id', 'client_secret']) {
    if (field(k) === null) return oauthError(400, 'invalid_request', `parameter ${k} is repeated`);
  }
  const grant = field('grant_type');
  if (grant === undefined) return oauthError(400, 'invalid_request', 'grant_type is missing');
  if (grant !== 'client_credentials') return oauthError(400, 'unsupported_grant_type', 'only client_credentials is supported');

  let id;
  let secret;
  const authz = req.get('authorization');
  const basic = typeof authz === 'string' ? /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(authz) : null;
  const formID = field('client_id');
  const formSecret = field('client_secret');
  if (basic) {
    if (formSecret !== undefined) return oauthError(400, 'invalid_request', 'the client authenticated twice (Basic and client_secret)');
    const dec = Buffer.from(basic[1], 'base64').toString('utf8');
    const i = dec.indexOf(':');
    if (i < 0) return oauthError(401, 'invalid_client', 'malformed Basic credentials');
    try {
      id = decodeURIComponent(dec.slice(0, i).replace(/\+/g, ' '));
      secret = decodeURIComponent(dec.slice(i + 1).replace(/\+/g, ' '));
    } catch {
      return oauthError(401, 'invalid_client', 'malformed Basic credentials');
    }
    if (formID !== undefined && formID !== id) return oauthError(400, 'invalid_request', 'client_id differs from the Basic credentials');
  } else if (authz !== undefined) {
    return oauthError(401, 'invalid_client', 'unsupported client authentication');
  } else {
    id = formID;
    secret = formSecret;
    if (id === undefined || secret === undefined) return oauthError(401, 'invalid_client', 'no client authentication');
  }
  if (!sameSecret(id, CLIENT_ID) || !sameSecret(secret, CLIENT_SECRET)) {
    return oauthError(401, 'invalid_client', 'client authentication failed');
  }

  const requested = (field('scope') ?? '').split(' ').filter(Boolean);
  const unknown = requested.filter((sc) => !(sc in SCOPES));
  if (unknown.length > 0) return oauthError(400, 'invalid_scope', `unknown scope ${JSON.stringify(unknown[0])}`);
  const scope = requested.length > 0 ? [...new Set(requested)].join(' ') : SCOPE;

  const token = randomBytes(32).toString('base64url');
  tokens.set(sha256(token).toString('hex'), { expires: Date.now() + TOKEN_TTL_MS, scope });
  counts.token_grants++;
  res.status(200).json({ access_token: token, token_type: 'Bearer', expires_in: Math.ceil(TOKEN_TTL_MS / 1000), scope });
}

// gateGRPC wraps a grpc-js service implementation: each call is checked
// (metadata "authorization", as for HTTP) and counted before it reaches the
// SDK's handler; a refused call ends with UNAUTHENTICATED. impl() returns
// the SDK's implementation (built once the card, which names the gRPC
// port, is known).
function gateGRPC(grpc, definition, impl) {
  const out = {};
  for (const [name, def] of Object.entries(definition)) {
    const refuse = (call) => {
      if (!AUTH) return false;
      const v = checkBearer(call.metadata.get('authorization')[0]?.toString());
      if (v.ok) {
        call.a2aPrincipal = v.principal;
        return false;
      }
      counts.unauthorized++;
      return { code: grpc.status.UNAUTHENTICATED, details: v.text };
    };
    const count = () => { if (GRPC_METHODS[name]) counts[GRPC_METHODS[name]]++; };
    const starting = { code: grpc.status.UNAVAILABLE, details: 'the agent is starting' };
    out[name] = def.responseStream
      ? (call) => {
        const err = refuse(call) || (!impl() && starting);
        if (err) {
          call.emit('error', err); // grpc-js ends the call with this status
          return;
        }
        count();
        return impl()[name](call);
      }
      : (call, callback) => {
        const err = refuse(call) || (!impl() && starting);
        if (err) return callback(err, null);
        count();
        return impl()[name](call, callback);
      };
  }
  return out;
}

// securityFields are the card's securitySchemes and securityRequirements
// for --oauth or --bearer-file (none otherwise). For sdk 1, the scheme is
// written in the 1.0 JSON form and the requirements in --security-form:
// proto is what the SDK's own generated AgentCard.toJSON writes for a
// SecurityRequirement set through its types ({"schemes": {NAME: {"list":
// [...]}}}); map is the OpenAPI map form ({NAME: [...]}). For sdk 0.3 the
// 0.3 fields: an OpenAPI-style scheme ({"type": "oauth2", "flows": ...} or
// {"type": "http", "scheme": "bearer"}) and "security" in the map form.
function securityFields(base, core, form) {
  if (!AUTH) return {};
  const scopes = AUTH === 'oauth' ? [SCOPE] : [];
  const tokenUrl = args['token-url-override'] ?? base + TOKEN_PATH;
  if (SDK !== '1') {
    return {
      securitySchemes: {
        [SCHEME]: AUTH === 'oauth'
          ? { type: 'oauth2', flows: { clientCredentials: { tokenUrl, scopes: SCOPES } } }
          : { type: 'http', scheme: 'bearer' },
      },
      security: [{ [SCHEME]: scopes }],
    };
  }
  const scheme = AUTH === 'oauth'
    ? { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl, scopes: SCOPES } } } }
    : { httpAuthSecurityScheme: { scheme: 'Bearer' } };
  const requirement = form === 'map'
    ? { [SCHEME]: scopes }
    : core.SecurityRequirement.toJSON({ schemes: { [SCHEME]: { list: scopes } } });
  return { securitySchemes: { [SCHEME]: scheme }, securityRequirements: [requirement] };
}

// ---------------------------------------------------------------- scenarios

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => new Date().toISOString();
const claimData = (orderId) => ({ claim_id: `CLM-${randomBytes(4).toString('hex').toUpperCase()}`, order_id: orderId });

// BIG_NUMBERS are written into the JSON as these exact texts: an int64 id
// above 2^53 and decimals of 30 digits, as Java and Go backends send them;
// a JavaScript number would round each. The data holds each as the string
// EXACT + text (the SDK's task store clones its tasks, so neither a BigInt
// nor JSON.rawJSON survives it), and every JSON text this process writes
// has such a string replaced by the bare number: what the SDK sends over
// JSON-RPC, HTTP+JSON and SSE carries the number exactly as written.
const EXACT = 'exact-number:';
const BIG_NUMBERS = {
  ledger_ref: '7615917337495251231',
  amount: '123456789012345678901234567890.123456789012345678901234567890',
  ratio: '0.100000000000000000000000000001',
  negative: '-9223372036854775808',
};
const stringify = JSON.stringify;
JSON.stringify = function exactStringify(...args) {
  const out = stringify.apply(this, args);
  return typeof out === 'string' && out.includes(EXACT)
    ? out.replace(/"exact-number:(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"/g, '$1')
    : out;
};
function bigNumbersData(orderId) {
  const d = claimData(orderId);
  for (const [k, v] of Object.entries(BIG_NUMBERS)) d[k] = EXACT + v;
  return d;
}

// Per-task script state, keyed by task id.
//   scenario, orderId, afterMs, contextId; turn: 1 for the first message,
//   +1 per follow-up (an older turn still sleeping stops publishing);
//   done: no more events from the script; wake(): ends a "slow" wait;
//   timer: the self-* timer.
const tasks = new Map();

function readRequest(data) {
  const d = data && typeof data === 'object' && !Array.isArray(data) ? data : {};
  const scenario = typeof d.scenario === 'string' && d.scenario !== '' ? d.scenario : 'lost-parcel';
  const orderId = typeof d.order_id === 'string' && d.order_id !== '' ? d.order_id : 'A-1001';
  const afterMs = Number.isFinite(d.after_ms) && d.after_ms >= 0 ? d.after_ms : 1000;
  return { scenario, orderId, afterMs };
}

function stopScript(st) {
  st.done = true;
  if (st.timer) clearTimeout(st.timer);
  st.timer = undefined;
  if (st.wake) st.wake();
}

// The script is written once against this small interface, implemented
// below for each SDK line:
//   io.task(state, {text, artifact})   publish the Task (the first event)
//   io.status(state, {text})           publish a status-update
//   io.artifact(data)                  publish the claim_opened artifact-update
//   io.again()                         republish the stored task (1.x follow-up)
//   io.data()                          the data part of the user message
//   io.contextId                       the task's context id
//   io.later(scenario, orderId)        end the task after the request is over
async function runFirst(io, taskId) {
  const req = readRequest(io.data());
  const st = { ...req, contextId: io.contextId, turn: 1, done: false };
  tasks.set(taskId, st);
  const stale = () => st.done || st.turn !== 1;
  if (!SCENARIOS.has(req.scenario)) {
    io.task('submitted', {});
    io.status('rejected', { text: `unknown scenario "${req.scenario}"` });
    st.done = true;
    return;
  }
  switch (req.scenario) {
    case 'instant':
    case 'big-numbers': {
      io.task('completed', { artifact: req.scenario === 'instant' ? claimData(req.orderId) : bigNumbersData(req.orderId) });
      io.status('completed', {});
      st.done = true;
      return;
    }
    case 'reject': {
      io.task('submitted', {});
      io.status('rejected', { text: TEXT.reject });
      st.done = true;
      return;
    }
  }
  io.task('submitted', {});
  io.status('working', {});
  if (req.scenario === 'slow') {
    await new Promise((r) => { st.wake = r; if (st.done) r(); });
    return;
  }
  await sleep(WORK_MS);
  if (stale()) return;
  if (req.scenario === 'fail') {
    io.status('failed', { text: TEXT.fail });
    st.done = true;
    return;
  }
  io.status('input-required', { text: TEXT.question });
  if (req.scenario.startsWith('self-')) {
    st.timer = setTimeout(() => {
      st.timer = undefined;
      if (stale()) return;
      st.done = true;
      io.later(req.scenario, req.orderId).catch((e) => console.error(`agent: ${req.scenario} for ${taskId}:`, e));
    }, req.afterMs);
  }
}

async function runFollowUp(io, taskId) {
  let st = tasks.get(taskId);
  if (!st) {
    st = { ...readRequest(undefined), contextId: io.contextId, turn: 1, done: false };
    tasks.set(taskId, st);
  }
  stopScript(st); // a follow-up ends any wait or timer of an earlier turn
  st.done = false;
  const turn = ++st.turn;
  io.again();
  io.status('working', {});
  await sleep(WORK_MS);
  if (st.done || st.turn !== turn) return; // canceled, or a newer follow-up
  io.artifact(claimData(st.orderId));
  io.status('completed', {});
  st.done = true;
}

// ---------------------------------------------------------------- card

const CLAIM_SKILL = {
  id: SKILL_ID,
  name: 'Open a claim',
  description: 'Opens a claim for a lost parcel; asks for a photo of the box first.',
  tags: ['claims', 'parcels'],
  examples: ['My parcel for order A-1001 never arrived.'],
};
const PUBLIC_SKILL = {
  id: PUBLIC_SKILL_ID,
  name: 'Claims desk information',
  description: 'What a claim needs and how long it takes; the extended card lists the claim skill.',
  tags: ['claims', 'info'],
  examples: ['What do I need to open a claim?'],
};

// baseCard is the public card without its interfaces. With --extended-card
// it declares capabilities.extendedAgentCard and lists only the public
// skill; the extended card (extendedSkills) adds open-claim.
function baseCard() {
  return {
    name: NAME,
    description: 'Opens claims for lost parcels (a2a-js peer for interop tests).',
    version: '1.0.0',
    provider: { organization: 'delegate interop tests', url: 'https://example.invalid/delegate' },
    capabilities: {
      streaming: true,
      ...(args.push ? { pushNotifications: true } : {}),
      ...(args['extended-card'] ? { extendedAgentCard: true } : {}),
    },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json'],
    skills: args['extended-card'] ? [PUBLIC_SKILL] : [CLAIM_SKILL],
  };
}
const extendedSkills = () => [PUBLIC_SKILL, CLAIM_SKILL];

function card03Fields(urls) {
  const ifaces = BINDINGS.map((b) => ({ url: urls[b], transport: BINDING_NAMES[b] }));
  return {
    url: ifaces[0].url,
    preferredTransport: ifaces[0].transport,
    protocolVersion: '0.3.0',
    // A2A 0.3 §5.6: additionalInterfaces SHOULD include the main url too.
    additionalInterfaces: ifaces,
  };
}

// ---------------------------------------------------------------- sdk 1.x

async function buildV1(app, base, urls) {
  const core = await import('a2a-js-1');
  const srv = await import('a2a-js-1/server');
  const ex = await import('a2a-js-1/server/express');
  const { AgentEvent, DefaultRequestHandler, DefaultExecutionEventBusManager, InMemoryTaskStore, ResultManager } = srv;
  const { Task, TaskStatusUpdateEvent, TaskArtifactUpdateEvent, generateAgentCardSignature } = core;

  const STATE = {
    submitted: 'TASK_STATE_SUBMITTED', working: 'TASK_STATE_WORKING', 'input-required': 'TASK_STATE_INPUT_REQUIRED',
    completed: 'TASK_STATE_COMPLETED', failed: 'TASK_STATE_FAILED', rejected: 'TASK_STATE_REJECTED', canceled: 'TASK_STATE_CANCELED',
  };
  // Events are written in the 1.0 JSON form and converted with the SDK's own
  // generated fromJSON into the SDK's internal objects.
  const statusJSON = (taskId, contextId, state, text) => ({
    state: STATE[state],
    timestamp: now(),
    ...(text ? { message: { messageId: randomUUID(), role: 'ROLE_AGENT', taskId, contextId, parts: [{ text }] } } : {}),
  });
  const artifactJSON = (data) => ({ artifactId: randomUUID(), name: 'claim_opened', parts: [{ data, mediaType: 'application/json' }] });
  const statusEvent = (taskId, contextId, state, text) =>
    AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId, status: statusJSON(taskId, contextId, state, text) }));
  const artifactEvent = (taskId, contextId, data) =>
    AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({ taskId, contextId, artifact: artifactJSON(data), lastChunk: true }));

  class CountingTaskStore extends InMemoryTaskStore {
    async save(task, context) {
      createdTasks.add(task.id);
      counts.tasks = createdTasks.size;
      return super.save(task, context);
    }
  }
  const store = new CountingTaskStore();
  const buses = new DefaultExecutionEventBusManager();

  const ioFor = (rc, bus) => {
    const { taskId, contextId } = rc;
    return {
      contextId,
      data: () => rc.userMessage.parts.find((p) => p.content?.$case === 'data')?.content.value,
      task: (state, { text, artifact }) => bus.publish(AgentEvent.task(Task.fromJSON({
        id: taskId, contextId, status: statusJSON(taskId, contextId, state, text),
        ...(artifact ? { artifacts: [artifactJSON(artifact)] } : {}),
      }))),
      again: () => bus.publish(AgentEvent.task(rc.task)),
      status: (state, { text }) => bus.publish(statusEvent(taskId, contextId, state, text)),
      artifact: (data) => bus.publish(artifactEvent(taskId, contextId, data)),
      // The agent ends an INPUT_REQUIRED task on its own. The request that
      // published INPUT_REQUIRED is over and its event queue stopped there,
      // so nothing persists later events: persist them with the SDK's own
      // ResultManager, publish them on the task's bus (kept alive by the SDK
      // for INPUT_REQUIRED) for live subscribers, then settle the bus as the
      // SDK does for a terminal state.
      later: async (scenario, orderId) => {
        const events = scenario === 'self-complete'
          ? [artifactEvent(taskId, contextId, claimData(orderId)), statusEvent(taskId, contextId, 'completed')]
          : [statusEvent(taskId, contextId, scenario === 'self-cancel' ? 'canceled' : 'failed', TEXT[scenario])];
        const rm = new ResultManager(store, rc.context);
        const live = buses.getByTaskId(taskId, rc.context);
        for (const ev of events) {
          await rm.processEvent(ev);
          live?.publish(ev);
        }
        if (live) {
          live.finished();
          buses.cleanupByTaskId(taskId, rc.context);
        }
      },
    };
  };

  const executor = {
    async execute(rc, bus) {
      const io = ioFor(rc, bus);
      if (rc.task) await runFollowUp(io, rc.taskId);
      else await runFirst(io, rc.taskId);
    },
    async cancelTask(taskId, bus) {
      const st = tasks.get(taskId);
      if (st) stopScript(st);
      bus.publish(statusEvent(taskId, st?.contextId ?? '', 'canceled', TEXT.canceled));
    },
  };

  // gRPC: the SDK's grpcService on a grpc-js Server of its own, bound
  // first (the card names its port); the service's handler is made below,
  // once the request handler exists. The card names the gRPC interface as
  // the SDK's multi-transport sample does: a bare "host:port" target.
  let grpcHandlers;
  let grpcMod;
  if (BINDINGS.includes('grpc')) {
    const grpc = await import('@grpc/grpc-js');
    grpcMod = await import('a2a-js-1/server/grpc');
    grpcServer = new grpc.Server();
    grpcServer.addService(grpcMod.A2AService, gateGRPC(grpc, grpcMod.A2AService, () => grpcHandlers));
    const port = await new Promise((resolve, reject) => {
      grpcServer.bindAsync(`${HOST}:0`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
    });
    urls.grpc = `${HOST}:${port}`;
  }

  const interfaces = BINDINGS.map((b) => ({ url: urls[b], protocolBinding: BINDING_NAMES[b], protocolVersion: '1.0' }));
  const card = {
    ...baseCard(),
    supportedInterfaces: interfaces,
    ...securityFields(base, core, SECURITY_FORM),
    ...(args['card-03-fields'] ? card03Fields(urls) : {}),
  };
  // The extended card goes out through the SDK's own conversions
  // (AgentCard.toJSON for JSON-RPC and REST, protobuf for gRPC), so it is
  // given in the SDK's internal form: the 1.0 JSON converted with its
  // generated AgentCard.fromJSON. Its requirements are in the proto form
  // whatever --security-form says: fromJSON does not read the map form
  // (it becomes an empty requirement, {}, i.e. "no authentication").
  const extended = args['extended-card']
    ? core.AgentCard.fromJSON({ ...card, skills: extendedSkills(), ...securityFields(base, core, 'proto') })
    : undefined;

  let signer;
  if (args['sign-jwk']) {
    let jwk;
    try {
      jwk = JSON.parse(readFileSync(args['sign-jwk'], 'utf8'));
    } catch (e) {
      fail(`--sign-jwk: ${e.message}`);
    }
    if (!jwk || jwk.kty !== 'EC' || jwk.crv !== 'P-256' || !jwk.d) fail('--sign-jwk: want a private EC P-256 JWK');
    if (typeof jwk.kid !== 'string' || jwk.kid === '') fail('--sign-jwk: the JWK has no "kid"');
    signer = generateAgentCardSignature(jwk, { alg: 'ES256', kid: jwk.kid, typ: 'JOSE' });
    await signer(card); // fail at start, not at the first fetch
  }

  const handler = new DefaultRequestHandler(card, store, executor, buses, undefined, undefined, extended, signer);
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = ex;
  const users = AUTH ? userBuilder : UserBuilder.noAuthentication;
  app.use(CARD_PATH, agentCardHandler({ agentCardProvider: handler }));
  if (BINDINGS.includes('jsonrpc')) app.use(PATHS.jsonrpc, jsonRpcHandler({ requestHandler: handler, userBuilder: users }));
  if (BINDINGS.includes('rest')) app.use(PATHS.rest, restHandler({ requestHandler: handler, userBuilder: users }));
  if (grpcMod) grpcHandlers = grpcMod.grpcService({ requestHandler: handler, userBuilder: users });
}

// ---------------------------------------------------------------- sdk 0.3

async function buildV03(app, base, urls) {
  const srv = await import('a2a-js-03/server');
  const ex = await import('a2a-js-03/server/express');
  const { DefaultRequestHandler, DefaultExecutionEventBusManager, InMemoryTaskStore, ResultManager } = srv;

  const FINAL = new Set(['input-required', 'completed', 'failed', 'rejected', 'canceled']);
  const statusJSON = (taskId, contextId, state, text) => ({
    state,
    timestamp: now(),
    ...(text ? { message: { kind: 'message', messageId: randomUUID(), role: 'agent', taskId, contextId, parts: [{ kind: 'text', text }] } } : {}),
  });
  const artifactJSON = (data) => ({ artifactId: randomUUID(), name: 'claim_opened', parts: [{ kind: 'data', data }] });
  const statusEvent = (taskId, contextId, state, text) =>
    ({ kind: 'status-update', taskId, contextId, status: statusJSON(taskId, contextId, state, text), final: FINAL.has(state) });
  const artifactEvent = (taskId, contextId, data) =>
    ({ kind: 'artifact-update', taskId, contextId, artifact: artifactJSON(data), lastChunk: true });

  class CountingTaskStore extends InMemoryTaskStore {
    async save(task, context) {
      createdTasks.add(task.id);
      counts.tasks = createdTasks.size;
      return super.save(task, context);
    }
  }
  const store = new CountingTaskStore();
  const buses = new DefaultExecutionEventBusManager();

  const ioFor = (rc, bus) => {
    const { taskId, contextId } = rc;
    return {
      contextId,
      data: () => rc.userMessage.parts.find((p) => p.kind === 'data')?.data,
      task: (state, { text, artifact }) => bus.publish({
        kind: 'task', id: taskId, contextId, status: statusJSON(taskId, contextId, state, text),
        history: [rc.userMessage], ...(artifact ? { artifacts: [artifactJSON(artifact)] } : {}),
      }),
      again: () => {}, // a 0.3 executor continues a task with status updates only
      status: (state, { text }) => bus.publish(statusEvent(taskId, contextId, state, text)),
      artifact: (data) => bus.publish(artifactEvent(taskId, contextId, data)),
      // In 0.3.14 the SDK drops a task's bus as soon as the request's event
      // queue sees a final event (INPUT_REQUIRED is published final), so the
      // agent persists its own later events with the SDK's ResultManager and
      // publishes them to a bus only if one exists again.
      later: async (scenario, orderId) => {
        const events = scenario === 'self-complete'
          ? [artifactEvent(taskId, contextId, claimData(orderId)), statusEvent(taskId, contextId, 'completed')]
          : [statusEvent(taskId, contextId, scenario === 'self-cancel' ? 'canceled' : 'failed', TEXT[scenario])];
        const rm = new ResultManager(store, rc.context);
        const live = buses.getByTaskId(taskId);
        for (const ev of events) {
          await rm.processEvent(ev);
          live?.publish(ev);
        }
      },
    };
  };

  const executor = {
    async execute(rc, bus) {
      const io = ioFor(rc, bus);
      if (rc.task) await runFollowUp(io, rc.taskId);
      else await runFirst(io, rc.taskId);
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      const st = tasks.get(taskId);
      if (st) stopScript(st);
      bus.publish(statusEvent(taskId, st?.contextId ?? '', 'canceled', TEXT.canceled));
    },
  };

  const ifaces = BINDINGS.map((b) => ({ url: urls[b], transport: BINDING_NAMES[b] }));
  const card = {
    ...baseCard(),
    protocolVersion: '0.3.0',
    url: ifaces[0].url,
    preferredTransport: ifaces[0].transport,
    additionalInterfaces: ifaces,
    ...securityFields(base, undefined),
  };
  const handler = new DefaultRequestHandler(card, store, executor, buses);
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = ex;
  const users = AUTH ? userBuilder : UserBuilder.noAuthentication;
  app.use(CARD_PATH, agentCardHandler({ agentCardProvider: handler }));
  if (BINDINGS.includes('jsonrpc')) app.use(PATHS.jsonrpc, jsonRpcHandler({ requestHandler: handler, userBuilder: users }));
  if (BINDINGS.includes('rest')) app.use(PATHS.rest, restHandler({ requestHandler: handler, userBuilder: users }));
}

// ---------------------------------------------------------------- main

let grpcServer; // set by buildV1 for --bindings grpc

const app = express();
app.disable('x-powered-by');
app.use(gate); // before counting: a refused request reaches neither the counters nor the SDK
app.use(counting);
app.get('/counts', (_req, res) => res.json(counts));
app.post('/counts/reset', (_req, res) => {
  for (const k of Object.keys(counts)) counts[k] = 0;
  createdTasks.clear();
  res.json(counts);
});
if (OAUTH) app.post(TOKEN_PATH, express.urlencoded({ extended: false, limit: '16kb' }), tokenEndpoint);

const server = http.createServer();
server.on('error', (e) => {
  console.error(`agent: ${e.message}`);
  process.exit(1);
});
server.listen(PORT, HOST, async () => {
  const base = `http://${HOST}:${server.address().port}`;
  const urls = { jsonrpc: base + PATHS.jsonrpc, rest: base + PATHS.rest };
  try {
    if (SDK === '1') await buildV1(app, base, urls);
    else await buildV03(app, base, urls);
  } catch (e) {
    console.error('agent: setup failed:', e);
    process.exit(1);
  }
  server.on('request', app);
  const ready = { url: base, card_url: base + CARD_PATH, ...(urls.grpc ? { grpc_addr: urls.grpc } : {}) };
  process.stdout.write(JSON.stringify(ready) + '\n');
});

let stopping = false;
function shutdown(why) {
  if (stopping) return;
  stopping = true;
  console.error(`agent: stopping (${why})`);
  for (const st of tasks.values()) stopScript(st);
  grpcServer?.forceShutdown();
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
// Stdin is watched only when it is a pipe or a socket (a parent that holds
// the other end); /dev/null or a terminal would not tell anything.
let stdin;
try { stdin = fstatSync(0); } catch { /* no stdin */ }
if (stdin && (stdin.isFIFO() || stdin.isSocket())) {
  process.stdin.on('end', () => shutdown('stdin closed'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}
