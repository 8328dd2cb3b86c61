#!/usr/bin/env node
// An independent A2A peer agent built on the a2a-js SDK, for interop tests of
// the delegate Go client (internal/interop starts it as a child process).
//
//   node interop/agent.mjs --sdk 1|0.3 [--bindings jsonrpc,rest] [--port 0]
//                          [--sign-jwk FILE] [--card-03-fields] [--work-ms 50] [--push]
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
// GET /counts gives {"messages":N,"tasks":N,"cancels":N,"get_tasks":N}:
// SendMessage/SendStreamingMessage (message/send, message/stream) requests,
// distinct task ids saved in the task store, CancelTask (tasks/cancel)
// requests and GetTask (tasks/get) requests. Requests are counted at the HTTP
// layer, before the SDK sees them; POST /counts/reset zeroes the counters.
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
import { randomBytes, randomUUID } from 'node:crypto';
import express from 'express';

// Only the ready line may go to stdout.
for (const k of ['log', 'info', 'debug']) console[k] = (...a) => console.error(...a);

const USAGE = `usage: node agent.mjs --sdk 1|0.3 [--bindings jsonrpc,rest] [--port 0] [--sign-jwk FILE] [--card-03-fields] [--work-ms 50] [--push]

An A2A claims agent on the a2a-js SDK (1.3.0: A2A 1.0; 0.3.14: A2A 0.3), on 127.0.0.1.
Prints {"url":...,"card_url":...} when ready. The first message's data field "scenario" picks:
  lost-parcel (default)  INPUT_REQUIRED, then COMPLETED (claim_opened) after one answer
  instant | fail | reject  COMPLETED | FAILED | REJECTED at once
  slow                   WORKING until canceled
  self-cancel | self-fail | self-complete  INPUT_REQUIRED, then the agent ends the task itself after
                         data field after_ms (default 1000)
GET /counts shows the requests that arrived; POST /counts/reset zeroes them.`;

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
if (BINDINGS.length === 0 || BINDINGS.some((b) => b !== 'jsonrpc' && b !== 'rest')) fail('--bindings takes jsonrpc and/or rest');
if (new Set(BINDINGS).size !== BINDINGS.length) fail('--bindings repeats a binding');
const PORT = Number(args.port);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) fail('--port must be 0..65535');
const WORK_MS = Number(args['work-ms']);
if (!Number.isFinite(WORK_MS) || WORK_MS < 0) fail('--work-ms must be a number >= 0');
if (args['card-03-fields'] && SDK !== '1') fail('--card-03-fields is for --sdk 1 only');
if (args['sign-jwk'] && SDK !== '1') fail('--sign-jwk: @a2a-js/sdk 0.3.14 has no card signer; use --sdk 1');

const HOST = '127.0.0.1';
const NAME = 'js-claims-agent';
const SKILL_ID = 'open-claim';
const PATHS = { jsonrpc: '/a2a/jsonrpc', rest: '/a2a/rest' };
const CARD_PATH = '/.well-known/agent-card.json';
const BINDING_NAMES = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON' };

const TEXT = {
  question: 'Please send a photo of the box the parcel was shipped in.',
  fail: 'the order is unknown',
  reject: 'claims for this skill are closed',
  canceled: 'the task was canceled at the client\'s request',
  'self-cancel': 'the agent gave up waiting',
  'self-fail': 'the agent timed out',
};
const SCENARIOS = new Set(['lost-parcel', 'instant', 'fail', 'reject', 'slow', 'self-cancel', 'self-fail', 'self-complete']);

// ---------------------------------------------------------------- counters

const counts = { messages: 0, tasks: 0, cancels: 0, get_tasks: 0 };
const createdTasks = new Set();

const RPC_METHODS = {
  SendMessage: 'messages', SendStreamingMessage: 'messages', 'message/send': 'messages', 'message/stream': 'messages',
  CancelTask: 'cancels', 'tasks/cancel': 'cancels',
  GetTask: 'get_tasks', 'tasks/get': 'get_tasks',
};

// countRest counts a REST request by its method and path (relative to the
// REST mount point): POST .../message:send|stream, POST .../tasks/ID:cancel,
// GET .../tasks/ID. Both the 1.0 paths and the 0.3 "/v1/..." ones match.
function countRest(req) {
  let p = req.path;
  try { p = decodeURIComponent(p); } catch { /* keep it raw */ }
  if (req.method === 'POST' && /\/message:(send|stream)$/.test(p)) counts.messages++;
  else if (req.method === 'POST' && /\/tasks\/[^/]+:cancel$/.test(p)) counts.cancels++;
  else if (req.method === 'GET' && /\/tasks\/[^/:]+$/.test(p)) counts.get_tasks++;
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

// ---------------------------------------------------------------- scenarios

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => new Date().toISOString();
const claimData = (orderId) => ({ claim_id: `CLM-${randomBytes(4).toString('hex').toUpperCase()}`, order_id: orderId });

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
    case 'instant': {
      io.task('completed', { artifact: claimData(req.orderId) });
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

function baseCard() {
  return {
    name: NAME,
    description: 'Opens claims for lost parcels (a2a-js peer for interop tests).',
    version: '1.0.0',
    provider: { organization: 'delegate interop tests', url: 'https://example.invalid/delegate' },
    capabilities: { streaming: true, ...(args.push ? { pushNotifications: true } : {}) },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json'],
    skills: [{
      id: SKILL_ID,
      name: 'Open a claim',
      description: 'Opens a claim for a lost parcel; asks for a photo of the box first.',
      tags: ['claims', 'parcels'],
      examples: ['My parcel for order A-1001 never arrived.'],
    }],
  };
}

function card03Fields(base) {
  const ifaces = BINDINGS.map((b) => ({ url: base + PATHS[b], transport: BINDING_NAMES[b] }));
  return {
    url: ifaces[0].url,
    preferredTransport: ifaces[0].transport,
    protocolVersion: '0.3.0',
    // A2A 0.3 §5.6: additionalInterfaces SHOULD include the main url too.
    additionalInterfaces: ifaces,
  };
}

// ---------------------------------------------------------------- sdk 1.x

async function buildV1(app, base) {
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

  const interfaces = BINDINGS.map((b) => ({ url: base + PATHS[b], protocolBinding: BINDING_NAMES[b], protocolVersion: '1.0' }));
  const card = { ...baseCard(), supportedInterfaces: interfaces, ...(args['card-03-fields'] ? card03Fields(base) : {}) };

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

  const handler = new DefaultRequestHandler(card, store, executor, buses, undefined, undefined, undefined, signer);
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = ex;
  app.use(CARD_PATH, agentCardHandler({ agentCardProvider: handler }));
  if (BINDINGS.includes('jsonrpc')) app.use(PATHS.jsonrpc, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  if (BINDINGS.includes('rest')) app.use(PATHS.rest, restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
}

// ---------------------------------------------------------------- sdk 0.3

async function buildV03(app, base) {
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

  const ifaces = BINDINGS.map((b) => ({ url: base + PATHS[b], transport: BINDING_NAMES[b] }));
  const card = {
    ...baseCard(),
    protocolVersion: '0.3.0',
    url: ifaces[0].url,
    preferredTransport: ifaces[0].transport,
    additionalInterfaces: ifaces,
  };
  const handler = new DefaultRequestHandler(card, store, executor, buses);
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = ex;
  app.use(CARD_PATH, agentCardHandler({ agentCardProvider: handler }));
  if (BINDINGS.includes('jsonrpc')) app.use(PATHS.jsonrpc, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  if (BINDINGS.includes('rest')) app.use(PATHS.rest, restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
}

// ---------------------------------------------------------------- main

const app = express();
app.disable('x-powered-by');
app.use(counting);
app.get('/counts', (_req, res) => res.json(counts));
app.post('/counts/reset', (_req, res) => {
  counts.messages = 0;
  counts.cancels = 0;
  counts.get_tasks = 0;
  createdTasks.clear();
  counts.tasks = 0;
  res.json(counts);
});

const server = http.createServer();
server.on('error', (e) => {
  console.error(`agent: ${e.message}`);
  process.exit(1);
});
server.listen(PORT, HOST, async () => {
  const base = `http://${HOST}:${server.address().port}`;
  try {
    if (SDK === '1') await buildV1(app, base);
    else await buildV03(app, base);
  } catch (e) {
    console.error('agent: setup failed:', e);
    process.exit(1);
  }
  server.on('request', app);
  process.stdout.write(JSON.stringify({ url: base, card_url: base + CARD_PATH }) + '\n');
});

let stopping = false;
function shutdown(why) {
  if (stopping) return;
  stopping = true;
  console.error(`agent: stopping (${why})`);
  for (const st of tasks.values()) stopScript(st);
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
