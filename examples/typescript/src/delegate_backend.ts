// A backend in TypeScript that delegates work through delegate's Temporal
// workflow with nothing but @temporalio/client: it starts a delegation,
// finds it by search attribute once the remote agent asks a question, reads
// the question (Query "state"), answers it (Update "provide-input"), waits
// for the Outcome, and cancels a second delegation with a reason.
//
// The public names and shapes are in docs/backends.md; the contract's fields
// in docs/contracts.md. `make test-interop` compiles this file with tsc and
// runs it against a real Temporal server, a delegate worker and the claims
// agent (e2e/backend_interop_test.go):
//
//   cd examples/typescript && npm ci && npx tsc -p .
//   TEMPORAL_ADDRESS=127.0.0.1:7233 node dist/delegate_backend.js \
//     --agent http://127.0.0.1:9999 --id lost-parcel-ts-1
//
// It prints one JSON object per step on stdout.

import { Client, Connection, WorkflowFailedError, WorkflowUpdateFailedError, ApplicationFailure } from '@temporalio/client';
import type { WorkflowHandle } from '@temporalio/client';
import { pathToFileURL } from 'node:url';

// ---- The public names (contracts/names.go) ----

/** The workflow type the delegate worker registers. */
export const WORKFLOW_TYPE = 'Delegation';
/** The Task Queue the delegate worker polls. */
export const TASK_QUEUE = 'delegate';
/** Query: the whole local state of a delegation, with the pending question. */
export const QUERY_STATE = 'state';
/** Update (and Signal): an answer to the remote agent's question. */
export const UPDATE_PROVIDE_INPUT = 'provide-input';
/** Signal sent just before a cancel request: why (shown in the state and the Outcome). */
export const SIGNAL_CANCEL_REASON = 'cancel-reason';
/** Signal: withdraw the delegation's authorization (status authorization_denied). */
export const SIGNAL_REVOKE = 'revoke';
/** Signal: read the remote task once now. */
export const SIGNAL_RECONCILE = 'reconcile';
/** Keyword Search Attributes the workflow keeps up to date. */
export const SEARCH_ATTRIBUTE_A2A_STATE = 'A2AState';
export const SEARCH_ATTRIBUTE_A2A_AGENT = 'A2AAgent';
export const SEARCH_ATTRIBUTE_A2A_REMOTE_TASK_ID = 'A2ARemoteTaskId';
export const SEARCH_ATTRIBUTE_A2A_PURPOSE = 'A2APurpose';

/** ApplicationFailure types of a refused input. */
export const ERROR_INVALID_CONTRACT = 'invalid_contract'; // the workflow refused its contract; the run failed
export const ERROR_CARRIED_STATE = 'carried_state'; // the workflow refused a second argument; the run failed
export const ERROR_INVALID_INPUT = 'invalid_input'; // an Update's payload was refused; the delegation goes on

// ---- The shapes (JSON, snake_case; docs/contracts.md, contracts/*.go) ----

/** The contract: the workflow's one argument. Unknown fields are refused. */
export interface Delegation {
  local_workflow_id: string; // also the workflow id
  agent_card_url: string;
  skill: string;
  purpose: string;
  message: { text?: string; data?: unknown };
  allowed_outputs: string[];
  deadline: string; // RFC 3339, in the future, at most 366 days ahead
  write_authority: 'none';
  output_schemas?: Record<string, unknown>;
  output_modes?: string[];
  resource_scope?: string[];
  on_invalid_artifact?: 'fail' | 'drop';
  require_signed_card?: boolean;
  on_unknown_outcome?: 'ask_operator' | 'resend';
  waiting_poll_seconds?: number;
}

/** The payload of Update (or Signal) "provide-input". */
export interface Answer {
  text: string;
  data?: unknown;
  answered_by?: string;
  credential_ref?: string; // answers AUTH_REQUIRED: a name in the worker's credential store, never a secret
}

/** The result of Update "provide-input": the round the answer is for. */
export interface ProvideInputResult {
  round: number;
}

/** What the remote agent asked (untrusted text: show it, never obey it). */
export interface Question {
  round: number;
  state: 'input-required' | 'auth-required'; // auth-required: answer with credential_ref
  text: string;
  data?: unknown;
  since: string;
}

/** Part of what Query "state" returns (the whole shape: contracts/state.go). */
export interface State {
  local_workflow_id: string;
  a2a_state: string; // as Search Attribute A2AState
  remote_task_id?: string;
  context_id?: string;
  question?: Question; // absent when no question is pending
  input_rounds: number;
  cancel_reason?: string;
  outcome?: Outcome; // set once the delegation has ended
  failure?: string; // set when the workflow refused its input
}

export type Status =
  | 'completed'
  | 'invalid_output'
  | 'failed'
  | 'rejected'
  | 'canceled'
  | 'deadline_exceeded'
  | 'unknown_outcome'
  | 'authorization_denied'
  | 'protocol_error'
  | 'card_untrusted'
  | 'card_changed'
  | 'cancel_unconfirmed';

/** One artifact that passed the contract: a proposal, never an authority. */
export interface Output {
  kind: string;
  artifact_id: string;
  data?: unknown;
  text?: string;
  files?: unknown[];
  authority: 'none';
}

/** The workflow's result. */
export interface Outcome {
  local_workflow_id: string;
  status: Status;
  remote_task_id: string;
  context_id: string;
  agent: { name: string; card_url: string; card_version: string; card_digest: string; signature?: string };
  protocol: { version: string; binding: string; url: string };
  outputs: Output[] | null;
  rejected_artifacts: { artifact_id: string; reason: string }[] | null;
  input_rounds: number;
  error?: { category: string; message: string };
  late_results?: unknown[];
}

// ---- The calls ----

/** Connects as the Temporal CLI would by default: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE. */
export async function connect(): Promise<Client> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  return new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
}

/**
 * Starts a delegation: workflow type Delegation on task queue delegate, the
 * contract as its one argument, the workflow id = local_workflow_id. No cron
 * schedule and no workflow timeouts: the contract's deadline bounds it.
 * Throws WorkflowExecutionAlreadyStartedError when that id is running.
 */
export async function startDelegation(client: Client, d: Delegation): Promise<WorkflowHandle> {
  return client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUE,
    workflowId: d.local_workflow_id,
    args: [d],
    workflowIdConflictPolicy: 'FAIL',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE', // an id may be used again once its delegation ended
  });
}

/** Reads the whole local state (Query "state"); needs a running worker. */
export async function readState(handle: WorkflowHandle): Promise<State> {
  return handle.query<State>(QUERY_STATE);
}

/**
 * Answers the pending question (Update "provide-input") and returns the
 * round it is for. A refused answer throws WorkflowUpdateFailedError whose
 * cause is an ApplicationFailure of type invalid_input saying why (empty,
 * no question pending, already answered, ...); nothing was sent.
 */
export async function answer(handle: WorkflowHandle, a: Answer): Promise<number> {
  const res = await handle.executeUpdate<ProvideInputResult, [Answer]>(UPDATE_PROVIDE_INPUT, { args: [a] });
  return res.round;
}

/**
 * Waits for the Outcome (following continue-as-new). A contract the
 * workflow refused throws WorkflowFailedError whose cause is an
 * ApplicationFailure of type invalid_contract (or carried_state).
 */
export async function outcome(handle: WorkflowHandle): Promise<Outcome> {
  return handle.result() as Promise<Outcome>;
}

/**
 * Cancels a delegation: the reason first (Signal "cancel-reason"), then the
 * workflow's cancellation. The workflow cancels the remote task and ends
 * canceled (or cancel_unconfirmed). Never terminate a delegation: that
 * leaves the remote task working.
 */
export async function cancel(handle: WorkflowHandle, reason: string): Promise<void> {
  await handle.signal(SIGNAL_CANCEL_REASON, { reason });
  await handle.cancel();
}

/** Lists the delegations whose Search Attribute A2AState is state (e.g. "input-required"). */
export async function listByA2AState(client: Client, state: string): Promise<{ id: string; agent?: string }[]> {
  const out: { id: string; agent?: string }[] = [];
  const query = `${SEARCH_ATTRIBUTE_A2A_STATE} = ${JSON.stringify(state)} AND ExecutionStatus = "Running"`;
  for await (const info of client.workflow.list({ query })) {
    const agent = info.typedSearchAttributes.getAll().find((p) => p.key.name === SEARCH_ATTRIBUTE_A2A_AGENT);
    out.push({ id: info.workflowId, agent: agent ? String(agent.value) : undefined });
  }
  return out;
}

/** Why the workflow refused something: the ApplicationFailure's type and message. */
export function refusal(err: unknown): { type: string; message: string; nonRetryable: boolean } | undefined {
  if ((err instanceof WorkflowFailedError || err instanceof WorkflowUpdateFailedError) && err.cause instanceof ApplicationFailure) {
    return { type: err.cause.type ?? '', message: err.cause.message, nonRetryable: err.cause.nonRetryable === true };
  }
  return undefined;
}

/** A deadline an hour from now, as RFC 3339. Contracts never carry a fixed date. */
export function deadlineFromNow(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

/** The claims agent's lost-parcel contract (docs/claims-agent.md). */
export function lostParcel(id: string, agent: string, scenario?: string): Delegation {
  return {
    local_workflow_id: id,
    agent_card_url: `${agent}/.well-known/agent-card.json`,
    skill: 'open-claim',
    purpose: 'open a claim for a lost parcel',
    message: { text: 'My parcel for order A-1001 never arrived.', data: scenario ? { order_id: 'A-1001', scenario } : { order_id: 'A-1001' } },
    allowed_outputs: ['claim_opened'],
    deadline: deadlineFromNow(60 * 60 * 1000),
    write_authority: 'none',
  };
}

/** Polls until cond returns a value, or throws after timeoutMs. */
export async function waitUntil<T>(what: string, timeoutMs: number, cond: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Reads the command line's `--name value` flags: each of names once, and
 * nothing else. A missing, repeated or unknown flag, or one without its
 * value, prints why and usage to stderr and exits 2 (a usage error, as
 * the delegate CLI; no stack trace); --help prints usage and exits 0.
 */
export function parseFlags(usage: string, names: readonly string[], argv: readonly string[] = process.argv.slice(2)): Record<string, string> {
  function fail(why: string): never {
    console.error(`${why}\n${usage}`);
    process.exit(2);
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage);
    process.exit(0);
  }
  const got: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].startsWith('--') ? argv[i].slice(2) : '';
    if (!names.includes(name)) fail(`unknown argument ${JSON.stringify(argv[i])}`);
    if (name in got) fail(`--${name} given twice`);
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) fail(`--${name} needs a value`);
    got[name] = value;
  }
  for (const n of names) if (!(n in got)) fail(`missing --${n}`);
  return got;
}

const usage = `usage: TEMPORAL_ADDRESS=127.0.0.1:7233 node dist/delegate_backend.js --agent URL --id ID
  --agent URL  the claims agent's base URL (e.g. http://127.0.0.1:9999)
  --id ID      the local_workflow_id of the delegation it starts (and ID-slow, which it cancels)
The connection is TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE (default 127.0.0.1:7233, "default").`;

function print(step: string, v: object): void {
  console.log(JSON.stringify({ step, ...v }));
}

async function main(): Promise<void> {
  const { agent, id } = parseFlags(usage, ['agent', 'id']);
  const client = await connect();
  try {
    // 1. Start.
    const handle = await startDelegation(client, lostParcel(id, agent));
    print('started', { id: handle.workflowId });

    // 2. Find the delegations waiting for an answer, by search attribute.
    const listed = await waitUntil('a delegation in input-required', 60_000, async () => {
      const rows = await listByA2AState(client, 'input-required');
      return rows.some((r) => r.id === id) ? rows : undefined;
    });
    print('listed', { state: 'input-required', delegations: listed });

    // 3. Read the question (Query "state").
    const state = await readState(handle);
    if (!state.question) throw new Error(`no question pending (a2a_state ${state.a2a_state})`);
    print('question', { round: state.question.round, text: state.question.text });

    // 4. Answer it (Update "provide-input"): accepted for that round.
    const round = await answer(handle, { text: 'photo attached: box.jpg', answered_by: 'claims-backend' });
    print('answered', { round });

    // 5. Wait for the Outcome. Outputs are proposals (authority "none").
    const out = await outcome(handle);
    print('outcome', { outcome: out });

    // 6. Cancel a delegation that is still working, with a reason.
    const slow = await startDelegation(client, lostParcel(`${id}-slow`, agent, 'slow'));
    await waitUntil('the slow delegation working', 60_000, async () =>
      (await readState(slow)).a2a_state === 'working' ? true : undefined,
    );
    await cancel(slow, 'no longer needed');
    const canceled = await outcome(slow);
    print('canceled', { outcome: canceled });
  } catch (err) {
    const r = refusal(err);
    if (r) print('refused', r);
    throw err;
  } finally {
    await client.connection.close();
  }
}

// Run main only when this file is the program (refusals.ts imports it).
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
