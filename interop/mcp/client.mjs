// An MCP client built on the official TypeScript SDK
// (@modelcontextprotocol/sdk, Client with StdioClientTransport or
// StreamableHTTPClientTransport), driven by e2e/mcp_interop_test.go against
// `delegate mcp`. It is the independent client of issue 30: this project
// did not write the SDK, so what it accepts is what MCP clients accept.
//
// Usage: node client.mjs SCENARIO, with the parameters as one JSON object
// in the environment variable MCP_INTEROP:
//
//   transport   "stdio" | "http"
//   command     stdio: the server's executable; args: its arguments;
//               env: extra environment for it (the SDK passes only a safe
//               default set of the parent's)
//   url         http: the Streamable HTTP endpoint; token: the bearer token
//   elicitation declare the elicitation capability (form mode); answer: the
//               text given to every elicitation (accept; elicit_action
//               "decline" or "cancel" answers so instead); answer_after_ms:
//               the human takes that long to answer each form
//   timeout_ms  the whole scenario's deadline (default 120000)
//
// Scenarios (each exits 0 only when what it saw is what it expects):
//
//   tools    list the tools; expect_tools: names that must be there;
//            expect_properties: {tool: [property, ...]} that must be in that
//            tool's input schema
//   human    call tool with arguments (or follow id), then
//            delegation_status {wait_seconds} until the outcome is there,
//            answering each elicitation with answer; expects at least one
//            elicitation and the outcome status expect_status
//   decline  call tool with arguments, delegation_status until elicited;
//            the elicitation is answered elicit_action (decline or cancel):
//            expects the question back, and not elicited again by the next
//            delegation_status
//   model    call tool with arguments, delegation_status until the agent
//            asks, delegation_answer {text: answer}, delegation_status until
//            the outcome; expects no elicitation and expect_status. With
//            subscribe, also reads the resource delegation://ID and
//            subscribes to it: expects notifications/resources/updated
//   start    call tool with arguments; with until_question, then
//            delegation_status until the agent asks; prints the id
//   probes   call each of probes [{tool, arguments, error_contains} |
//            {tool, arguments, absent_id} | {tool, arguments, expect_status}]:
//            the first kind must be a tool error (isError) whose text
//            contains error_contains, the second a result whose
//            structuredContent.delegations has no local_workflow_id
//            absent_id, the third a result whose structuredContent.outcome
//            has that status; {resource: URI, error_contains}: reading
//            the resource must fail with that text
//   intrude  (http) join the session session_id (another actor's) with
//            this token, delegation_list: expects HTTP 403
//   slow-human  call tool with arguments, then delegation_status
//            {wait_seconds} until the outcome, every call with the SDK's
//            default request timeout (60 s, as desktop hosts keep it) and an
//            onprogress handler; the human (answer_after_ms) answers the
//            form after the calls that asked returned. Expects no call to
//            fail or to take longer than its wait_seconds and slack_ms, the
//            form shown once, and the outcome expect_status
//   tasks    with the SDK's experimental tasks client (MCP 2025-11-25
//            tasks): expects the tasks capability and tool's
//            execution.taskSupport "optional" (the fixed tools none);
//            callToolStream of tool with arguments as a task: a task
//            created, its status input_required, the question put through
//            elicitation related to the task (answered answer) while
//            tasks/result waits, the result with outcome expect_status;
//            then a second task cancelled while it waits (cancelTask:
//            cancelled), and listTasks listing both with those statuses
//   revoke   (http) delegation_list, print {"step":"ready","session":ID}, wait for a line
//            on stdin (the test removes the token meanwhile), delegation_list
//            again on the same session: expects HTTP 401
//
// Output: one JSON object a line on stdout ({"step": ..., ...}): first
// {"step":"initialized", "protocol": the negotiated MCP version, ...}; the last is
// {"step":"ok"} or {"step":"fail","error":...} (exit 1).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createInterface } from 'node:readline';

const scenario = process.argv[2];
const p = JSON.parse(process.env.MCP_INTEROP ?? '{}');
const deadline = Date.now() + (p.timeout_ms ?? 120000);

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

class Unexpected extends Error {}

function expect(cond, msg) {
  if (!cond) throw new Unexpected(msg);
}

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

const elicitations = [];
const updates = []; // URIs of notifications/resources/updated
let sessionId = null;

async function connect() {
  const capabilities = {};
  if (p.elicitation) capabilities.elicitation = { form: {} };
  const client = new Client({ name: 'delegate-interop-mcp', version: '0.0.0' }, { capabilities });
  if (p.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const params = req.params;
      elicitations.push(params);
      emit({ step: 'elicitation', mode: params.mode ?? 'form', message: params.message, requestedSchema: params.requestedSchema });
      const props = params.requestedSchema?.properties ?? {};
      if (props.answer?.type !== 'string') {
        emit({ step: 'elicitation-declined', why: 'no string property "answer" in requestedSchema' });
        return { action: 'decline' };
      }
      if (p.elicit_action && p.elicit_action !== 'accept') return { action: p.elicit_action };
      if (p.answer_after_ms) {
        // A human who takes their time: the answer comes long after the
        // call that asked (whatever happens to that call meanwhile).
        const asked = Date.now();
        await new Promise((r) => setTimeout(r, p.answer_after_ms));
        emit({ step: 'elicitation-answered', after_ms: Date.now() - asked });
      }
      return { action: 'accept', content: { answer: p.answer } };
    });
  }
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    emit({ step: 'resource-updated', uri: n.params.uri });
  });
  let transport;
  if (p.transport === 'stdio') {
    transport = new StdioClientTransport({ command: p.command, args: p.args ?? [], env: p.env ?? {}, stderr: 'inherit' });
  } else if (p.transport === 'http') {
    // With session_id the SDK joins that session instead of initializing.
    transport = new StreamableHTTPClientTransport(new URL(p.url), {
      requestInit: { headers: { Authorization: `Bearer ${p.token}` } },
      sessionId: p.session_id,
    });
  } else {
    throw new Unexpected(`transport: "${p.transport}" is not stdio or http`);
  }
  // The SDK tells a transport the negotiated version (the HTTP one sends it
  // as MCP-Protocol-Version); note it for stdio too.
  let negotiated = null;
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiated = v;
    setVersion?.(v);
  };
  await client.connect(transport);
  sessionId = transport.sessionId ?? null;
  emit({
    step: 'initialized',
    protocol: negotiated,
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    session: transport.sessionId ?? null,
  });
  return client;
}

// call calls a tool and prints what came back; a tool error is returned
// (result.isError), a protocol or transport error thrown.
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 90000 });
  emit({ step: 'call', tool: name, arguments: args, isError: result.isError === true, text: textOf(result), structuredContent: result.structuredContent ?? null });
  return result;
}

async function callOK(client, name, args) {
  const r = await call(client, name, args);
  expect(!r.isError, `${name}: tool error: ${textOf(r)}`);
  expect(r.structuredContent && typeof r.structuredContent === 'object', `${name}: no structuredContent`);
  return r.structuredContent;
}

async function startDelegation(client) {
  const sc = await callOK(client, p.tool, p.arguments ?? {});
  expect(typeof sc.local_workflow_id === 'string' && sc.local_workflow_id !== '', `${p.tool}: no local_workflow_id in ${JSON.stringify(sc)}`);
  expect(sc.template === p.tool, `${p.tool}: template = ${JSON.stringify(sc.template)}, want ${JSON.stringify(p.tool)}`);
  emit({ step: 'started', local_workflow_id: sc.local_workflow_id, a2a_state: sc.a2a_state });
  return sc;
}

// follow calls delegation_status until done(structuredContent) holds.
async function follow(client, id, done, what) {
  let sc;
  while (Date.now() < deadline) {
    sc = await callOK(client, 'delegation_status', { local_workflow_id: id, wait_seconds: p.wait_seconds ?? 5 });
    expect(sc.local_workflow_id === id, `delegation_status: local_workflow_id = ${JSON.stringify(sc.local_workflow_id)}, want ${id}`);
    if (done(sc)) return sc;
  }
  throw new Unexpected(`timed out waiting for ${what} (last: ${JSON.stringify(sc)})`);
}

function expectOutcome(sc) {
  expect(sc.outcome && sc.outcome.status === (p.expect_status ?? 'completed'),
    `outcome = ${JSON.stringify(sc.outcome)}, want status ${p.expect_status ?? 'completed'}`);
}

function expectQuestion(sc) {
  const q = sc.question;
  expect(q && typeof q.text === 'string' && q.text !== '' && q.round >= 1, `question = ${JSON.stringify(q)}`);
  expect(q.source === 'remote_agent', `question.source = ${JSON.stringify(q.source)}, want "remote_agent"`);
}

const scenarios = {
  async tools(client) {
    const { tools } = await client.listTools();
    emit({ step: 'tools', tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations ?? null })) });
    const names = new Set(tools.map((t) => t.name));
    for (const want of p.expect_tools ?? []) expect(names.has(want), `tool ${want} is not listed (listed: ${[...names].join(', ')})`);
    for (const [tool, props] of Object.entries(p.expect_properties ?? {})) {
      const t = tools.find((x) => x.name === tool);
      const have = Object.keys(t?.inputSchema?.properties ?? {});
      for (const prop of props) expect(have.includes(prop), `tool ${tool}: property ${prop} not in its input schema (has ${have.join(', ')})`);
    }
  },

  async human(client) {
    expect(p.elicitation, 'human: needs elicitation');
    const id = p.id ?? (await startDelegation(client)).local_workflow_id;
    const sc = await follow(client, id, (s) => s.outcome != null, 'the outcome');
    expectOutcome(sc);
    expect(elicitations.length >= 1, 'the delegation ended without an elicitation');
    emit({ step: 'done', local_workflow_id: id, elicitations: elicitations.length, outcome: sc.outcome });
  },

  async decline(client) {
    expect(p.elicitation && p.elicit_action, 'decline: needs elicitation and elicit_action (decline or cancel)');
    const id = (await startDelegation(client)).local_workflow_id;
    const first = await follow(client, id, (s) => elicitations.length > 0 || s.outcome != null, 'an elicitation');
    expect(elicitations.length === 1, `elicitations = ${elicitations.length}, want 1`);
    expectQuestion(first);
    const again = await callOK(client, 'delegation_status', { local_workflow_id: id, wait_seconds: 1 });
    expectQuestion(again);
    expect(elicitations.length === 1, `the ${p.elicit_action}d question was elicited again (${elicitations.length} elicitations)`);
    emit({ step: 'waiting', local_workflow_id: id, a2a_state: again.a2a_state });
  },

  async model(client) {
    const id = (await startDelegation(client)).local_workflow_id;
    const uri = `delegation://${id}`;
    if (p.subscribe) {
      // The delegation as a resource: read it, and be told when it changes.
      const { resourceTemplates } = await client.listResourceTemplates();
      emit({ step: 'resource-templates', resourceTemplates });
      const read = await client.readResource({ uri });
      const body = JSON.parse(read.contents?.[0]?.text ?? 'null');
      emit({ step: 'resource-read', uri, mimeType: read.contents?.[0]?.mimeType, body });
      expect(body?.local_workflow_id === id, `resource ${uri}: local_workflow_id = ${JSON.stringify(body?.local_workflow_id)}`);
      await client.subscribeResource({ uri });
      emit({ step: 'subscribed', uri });
    }
    const asked = await follow(client, id, (s) => s.question != null || s.outcome != null, 'a question');
    expectQuestion(asked);
    const after = await callOK(client, 'delegation_answer', { local_workflow_id: id, text: p.answer });
    emit({ step: 'answered', local_workflow_id: id, a2a_state: after.a2a_state });
    const sc = await follow(client, id, (s) => s.outcome != null, 'the outcome');
    expectOutcome(sc);
    expect(elicitations.length === 0, `a model template's question was elicited ${elicitations.length} time(s)`);
    if (p.subscribe) {
      // The server reads a subscribed delegation every few seconds: wait
      // for the notification of its end.
      while (!updates.includes(uri) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(updates.includes(uri), `no notifications/resources/updated for ${uri} (got ${JSON.stringify(updates)})`);
    }
    emit({ step: 'done', local_workflow_id: id, outcome: sc.outcome });
  },

  async 'slow-human'(client) {
    expect(p.elicitation && p.answer_after_ms, 'slow-human: needs elicitation and answer_after_ms');
    const slack = p.slack_ms ?? 5000;
    let progress = 0;
    let calls = 0;
    let maxTook = 0;
    // As a host calls: the SDK's default timeout, progress listened to.
    const timed = async (name, args) => {
      const waitMs = (args.wait_seconds ?? 0) * 1000;
      const t0 = Date.now();
      let seen = 0;
      const r = await client.callTool({ name, arguments: args }, undefined, { onprogress: () => { progress++; seen++; } });
      const took = Date.now() - t0;
      calls++;
      maxTook = Math.max(maxTook, took);
      const sc = r.structuredContent ?? {};
      emit({ step: 'timed-call', tool: name, took_ms: took, progress: seen, isError: r.isError === true, a2a_state: sc.a2a_state ?? null, elicitation: sc.elicitation ?? null, text: textOf(r) });
      expect(!r.isError, `${name}: tool error: ${textOf(r)}`);
      expect(took <= waitMs + slack, `${name} with wait_seconds ${args.wait_seconds ?? 0} took ${took} ms (want at most ${waitMs + slack})`);
      return sc;
    };
    const first = await timed(p.tool, p.arguments ?? {});
    const id = first.local_workflow_id;
    expect(typeof id === 'string' && id !== '', `${p.tool}: no local_workflow_id`);
    emit({ step: 'started', local_workflow_id: id, a2a_state: first.a2a_state, elicitation: first.elicitation ?? null });
    let sc = first;
    while (sc.outcome == null && Date.now() < deadline) {
      sc = await timed('delegation_status', { local_workflow_id: id, wait_seconds: p.wait_seconds ?? 20 });
    }
    expectOutcome(sc);
    expect(elicitations.length === 1, `the form was shown ${elicitations.length} times, want once`);
    emit({ step: 'done', local_workflow_id: id, elicitations: elicitations.length, calls, max_took_ms: maxTook, progress, outcome: sc.outcome });
  },

  async tasks(client) {
    expect(p.elicitation, 'tasks: needs elicitation');
    const caps = client.getServerCapabilities();
    expect(caps?.tasks?.requests?.tools?.call && caps.tasks.list && caps.tasks.cancel, `capabilities.tasks = ${JSON.stringify(caps?.tasks)}`);
    const { tools } = await client.listTools();
    for (const t of tools) {
      const want = t.name.startsWith('delegation_') ? undefined : 'optional';
      expect(t.execution?.taskSupport === want, `tool ${t.name}: execution = ${JSON.stringify(t.execution)}, want taskSupport ${want}`);
    }
    const tasks = client.experimental.tasks;
    // The first: followed to its end as a host that works in tasks does.
    let id = null;
    const statuses = [];
    let result = null;
    for await (const m of tasks.callToolStream({ name: p.tool, arguments: p.arguments ?? {} }, CallToolResultSchema, { task: { ttl: 600000 } })) {
      if (m.type === 'taskCreated') {
        id = m.task.taskId;
        emit({ step: 'task-created', task: m.task });
      } else if (m.type === 'taskStatus') {
        statuses.push(m.task.status);
        emit({ step: 'task-status', task: m.task });
      } else if (m.type === 'result') {
        result = m.result;
        emit({ step: 'task-result', isError: result.isError === true, meta: result._meta ?? null, structuredContent: result.structuredContent ?? null });
      } else if (m.type === 'error') {
        throw new Unexpected(`callToolStream: ${m.error}`);
      }
    }
    expect(id && id.startsWith(`mcp.${p.tool}.`), `task id ${JSON.stringify(id)}, want a delegation of ${p.tool}`);
    expect(statuses.includes('input_required'), `statuses ${JSON.stringify(statuses)}: never input_required`);
    expect(result && !result.isError, `result: ${JSON.stringify(result)}`);
    expectOutcome(result.structuredContent ?? {});
    expect(result._meta?.['io.modelcontextprotocol/related-task']?.taskId === id, `result _meta = ${JSON.stringify(result._meta)}`);
    expect(elicitations.length === 1, `elicitations = ${elicitations.length}, want 1`);
    expect(elicitations[0]._meta?.['io.modelcontextprotocol/related-task']?.taskId === id, `elicitation _meta = ${JSON.stringify(elicitations[0]._meta)}`);
    const done = await tasks.getTask(id);
    expect(done.status === 'completed', `getTask after the result: ${JSON.stringify(done)}`);
    // The second: cancelled while it waits for input.
    let second = null;
    for await (const m of tasks.callToolStream({ name: p.tool, arguments: p.arguments ?? {} }, CallToolResultSchema, { task: {} })) {
      if (m.type === 'taskCreated') {
        second = m.task.taskId;
        break;
      }
      if (m.type === 'error') throw new Unexpected(`callToolStream: ${m.error}`);
    }
    let waiting;
    while (Date.now() < deadline) {
      waiting = await tasks.getTask(second);
      if (waiting.status === 'input_required') break;
      await new Promise((r) => setTimeout(r, waiting.pollInterval ?? 1000));
    }
    expect(waiting?.status === 'input_required', `second task: ${JSON.stringify(waiting)}`);
    const cancelled = await tasks.cancelTask(second);
    emit({ step: 'task-cancelled', task: cancelled });
    expect(cancelled.status === 'cancelled', `cancelTask: ${JSON.stringify(cancelled)}`);
    const after = await tasks.getTask(second);
    expect(after.status === 'cancelled', `getTask after cancelTask: ${JSON.stringify(after)}`);
    const listed = await tasks.listTasks();
    emit({ step: 'tasks-listed', tasks: listed.tasks });
    const byId = Object.fromEntries(listed.tasks.map((t) => [t.taskId, t.status]));
    expect(byId[id] === 'completed' && byId[second] === 'cancelled', `listTasks: ${JSON.stringify(byId)}`);
    emit({ step: 'done', task: id, cancelled: second, statuses });
  },

  async start(client) {
    const sc = await startDelegation(client);
    if (p.until_question) {
      expectQuestion(await follow(client, sc.local_workflow_id, (s) => s.question != null || s.outcome != null, 'a question'));
    }
  },

  async probes(client) {
    for (const pr of p.probes ?? []) {
      if (pr.resource !== undefined) {
        let got;
        try {
          got = await client.readResource({ uri: pr.resource });
        } catch (err) {
          emit({ step: 'probe', resource: pr.resource, ok: true, error: String(err?.message ?? err) });
          expect(String(err?.message).includes(pr.error_contains), `read ${pr.resource}: ${err}, want an error with ${JSON.stringify(pr.error_contains)}`);
          continue;
        }
        throw new Unexpected(`read ${pr.resource}: not refused: ${JSON.stringify(got)}`);
      }
      const r = await call(client, pr.tool, pr.arguments ?? {});
      if (pr.absent_id !== undefined) {
        expect(!r.isError, `${pr.tool}: tool error: ${textOf(r)}`);
        const ids = (r.structuredContent?.delegations ?? []).map((d) => d.local_workflow_id);
        expect(!ids.includes(pr.absent_id), `${pr.tool}: lists ${pr.absent_id}`);
        emit({ step: 'probe', tool: pr.tool, ok: true, listed: ids });
        continue;
      }
      if (pr.expect_status !== undefined) {
        expect(!r.isError, `${pr.tool}: tool error: ${textOf(r)}`);
        const st = r.structuredContent?.outcome?.status;
        expect(st === pr.expect_status, `${pr.tool}: outcome status ${JSON.stringify(st)}, want ${pr.expect_status}`);
        emit({ step: 'probe', tool: pr.tool, ok: true, status: st });
        continue;
      }
      expect(r.isError === true, `${pr.tool} ${JSON.stringify(pr.arguments)}: not refused: ${JSON.stringify(r.structuredContent)} ${textOf(r)}`);
      expect(textOf(r).includes(pr.error_contains), `${pr.tool}: error text ${JSON.stringify(textOf(r))} does not contain ${JSON.stringify(pr.error_contains)}`);
      emit({ step: 'probe', tool: pr.tool, ok: true, text: textOf(r) });
    }
  },

  async intrude(client) {
    expect(p.transport === 'http' && p.session_id, 'intrude: needs http and session_id');
    try {
      const r = await call(client, 'delegation_list', {});
      throw new Unexpected(`delegation_list on another actor's session answered: isError=${r.isError === true} ${textOf(r)} ${JSON.stringify(r.structuredContent)}`);
    } catch (err) {
      if (err instanceof Unexpected) throw err;
      emit({ step: 'refused', error: String(err?.message ?? err), code: err?.code ?? null });
      expect(err instanceof StreamableHTTPError && err.code === 403, `on another actor's session: ${err}, want HTTP 403`);
    }
  },

  async revoke(client) {
    expect(p.transport === 'http', 'revoke: needs http');
    await callOK(client, 'delegation_list', {});
    emit({ step: 'ready', session: sessionId });
    const rl = createInterface({ input: process.stdin });
    await new Promise((resolve, reject) => {
      rl.once('line', resolve);
      rl.once('close', () => reject(new Unexpected('stdin closed before the go-ahead')));
    });
    rl.close();
    try {
      const r = await call(client, 'delegation_list', {});
      throw new Unexpected(`delegation_list after revocation answered: isError=${r.isError === true} ${textOf(r)}`);
    } catch (err) {
      if (err instanceof Unexpected) throw err;
      emit({ step: 'refused', error: String(err?.message ?? err), code: err?.code ?? null });
      expect(err instanceof StreamableHTTPError && err.code === 401, `after revocation: ${err}, want HTTP 401`);
    }
  },
};

let client;
let failed = false;
try {
  const run = scenarios[scenario];
  expect(run, `scenario "${scenario}" is not one of ${Object.keys(scenarios).join(', ')}`);
  client = await connect();
  await run(client);
  emit({ step: 'ok' });
} catch (err) {
  failed = true;
  emit({ step: 'fail', error: err instanceof Unexpected ? err.message : String(err?.stack ?? err) });
} finally {
  try {
    await client?.close();
  } catch {
    // closing a session the server already refused: nothing to do
  }
}
process.exit(failed ? 1 : 0);
