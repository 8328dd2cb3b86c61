// What the Delegation workflow refuses from a backend, as @temporalio/client
// sees it: each probe sends one thing a TypeScript backend can get wrong,
// and prints (one JSON object per line) the error it gets back. The
// workflow checks its own input (workflows/boundary.go): a refused contract
// fails the run at once, non-retryable, with an ApplicationFailure of type
// invalid_contract (or carried_state) naming the field and the rule, before
// anything reaches the agent; a refused answer fails the Update (type
// invalid_input) and the delegation goes on waiting.
//
//   TEMPORAL_ADDRESS=127.0.0.1:7233 node dist/refusals.js --agent http://127.0.0.1:9999 --prefix probe
//
// e2e/backend_interop_test.go runs it and checks each line.

import { WorkflowExecutionAlreadyStartedError, WorkflowContinuedAsNewError } from '@temporalio/client';
import type { Client, WorkflowHandle, WorkflowStartOptions } from '@temporalio/client';
import {
  TASK_QUEUE,
  WORKFLOW_TYPE,
  UPDATE_PROVIDE_INPUT,
  answer,
  cancel,
  connect,
  deadlineFromNow,
  lostParcel,
  outcome,
  parseFlags,
  readState,
  refusal,
  startDelegation,
  waitUntil,
} from './delegate_backend.js';

type Probe = { probe: string } & Record<string, unknown>;

const usage = `usage: TEMPORAL_ADDRESS=127.0.0.1:7233 node dist/refusals.js --agent URL --prefix P
  --agent URL   the claims agent's base URL (e.g. http://127.0.0.1:9999)
  --prefix P    the start of the workflow ids the probes use (P-...; a new P for each run)
The connection is TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE (default 127.0.0.1:7233, "default").`;

function report(p: Probe): void {
  console.log(JSON.stringify(p));
}

/** What an error is, for the report. */
function describe(err: unknown): Record<string, unknown> {
  const r = refusal(err);
  const name = err instanceof Error ? err.constructor.name : typeof err;
  if (r) return { error: name, type: r.type, non_retryable: r.nonRetryable, message: r.message };
  return { error: name, message: err instanceof Error ? err.message : String(err) };
}

/** Starts the workflow as given (no checks of ours) and reports how its run ended. */
async function startRaw(client: Client, probe: string, opts: Omit<WorkflowStartOptions, 'taskQueue'>): Promise<void> {
  try {
    const handle = await client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUE, ...opts });
    const out = await outcome(handle);
    report({ probe, status: out.status, outcome_error: out.error });
  } catch (err) {
    report({ probe, ...describe(err) });
  }
}

/** Sends an answer as given and reports the Update's result or refusal. */
async function answerRaw(handle: WorkflowHandle, probe: string, payload: unknown): Promise<void> {
  try {
    const res = await handle.executeUpdate(UPDATE_PROVIDE_INPUT, { args: [payload] });
    report({ probe, accepted: res });
  } catch (err) {
    report({ probe, ...describe(err) });
  }
}

async function main(): Promise<void> {
  const { agent, prefix } = parseFlags(usage, ['agent', 'prefix']);
  const id = (s: string) => `${prefix}-${s}`;
  const client = await connect();
  try {
    // The contract's field names are snake_case; a camelCase one is not
    // ignored but refused (here it would have dropped the signed-card
    // requirement).
    {
      const d = { ...lostParcel(id('camel-case'), agent), requireSignedCard: true };
      await startRaw(client, 'unknown field', { workflowId: d.local_workflow_id, args: [d] });
    }
    {
      const { skill: _skill, ...d } = lostParcel(id('no-skill'), agent);
      await startRaw(client, 'missing field', { workflowId: d.local_workflow_id, args: [d] });
    }
    // JSON.stringify(contract) as the argument: a JSON string, not an object.
    {
      const d = lostParcel(id('stringified'), agent);
      await startRaw(client, 'contract as a string', { workflowId: d.local_workflow_id, args: [JSON.stringify(d)] });
    }
    {
      const d = lostParcel(id('the-contract-id'), agent);
      await startRaw(client, 'workflow id', { workflowId: id('another-id'), args: [d] });
    }
    {
      const d = { ...lostParcel(id('far-deadline'), agent), deadline: deadlineFromNow(10 * 365 * 24 * 3600 * 1000) };
      await startRaw(client, 'deadline too far', { workflowId: d.local_workflow_id, args: [d] });
    }
    // A contract file's relative deadline ("deadline_in": "1h") is
    // resolved by delegate start and Go's package client; a backend
    // starting the workflow itself sends the absolute deadline.
    {
      const { deadline: _deadline, ...rest } = lostParcel(id('relative-deadline'), agent);
      const d = { ...rest, deadline_in: '1h' };
      await startRaw(client, 'relative deadline', { workflowId: d.local_workflow_id, args: [d] });
    }
    // A deadline already past is not refused: the delegation ends
    // deadline_exceeded at once, and nothing is sent.
    {
      const d = { ...lostParcel(id('past-deadline'), agent), deadline: deadlineFromNow(-60 * 1000) };
      await startRaw(client, 'past deadline', { workflowId: d.local_workflow_id, args: [d] });
    }
    {
      const d = lostParcel(id('execution-timeout'), agent);
      await startRaw(client, 'execution timeout', { workflowId: d.local_workflow_id, args: [d], workflowExecutionTimeout: '1 minute' });
    }
    {
      const d = lostParcel(id('run-timeout'), agent);
      await startRaw(client, 'run timeout', { workflowId: d.local_workflow_id, args: [d], workflowRunTimeout: '10 minutes' });
    }
    // A second argument is the workflow's own hand-over at continue-as-new.
    {
      const d = lostParcel(id('second-argument'), agent);
      await startRaw(client, 'second argument', { workflowId: d.local_workflow_id, args: [d, { state: {}, pending: null }] });
    }
    // A cron schedule: each run would send the first message again. The
    // refused run of a cron workflow fails and hands over to the next tick
    // (result() of that run throws WorkflowContinuedAsNewError), so read
    // the failure from its close event.
    {
      const d = lostParcel(id('cron'), agent);
      const handle = await client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUE, workflowId: d.local_workflow_id, args: [d], cronSchedule: '@every 2s' });
      const first = client.workflow.getHandle(d.local_workflow_id, handle.firstExecutionRunId, { followRuns: false });
      try {
        await first.result();
        report({ probe: 'cron', error: 'none: the first run completed' });
      } catch (err) {
        if (!(err instanceof WorkflowContinuedAsNewError)) {
          report({ probe: 'cron', ...describe(err) });
        } else {
          const history = await first.fetchHistory();
          const last = history.events?.[history.events.length - 1];
          const f = last?.workflowExecutionFailedEventAttributes?.failure ?? last?.workflowExecutionContinuedAsNewEventAttributes?.failure;
          report({ probe: 'cron', error: 'the first run failed', type: f?.applicationFailureInfo?.type, non_retryable: f?.applicationFailureInfo?.nonRetryable, message: f?.message });
        }
      }
      // Each tick is refused the same way; the chain of runs ends only by
      // terminate. (Never terminate a delegation that started: its remote
      // task goes on working. This one never sent anything.)
      await client.workflow.getHandle(d.local_workflow_id).terminate('end of the cron probe');
    }

    // A delegation waiting for an answer, and what an answer can get wrong.
    const waiting = await startDelegation(client, lostParcel(id('waiting'), agent));
    // The same id again while it runs: refused by the server.
    try {
      await startDelegation(client, lostParcel(id('waiting'), agent));
      report({ probe: 'already started', error: 'none' });
    } catch (err) {
      report({ probe: 'already started', error: err instanceof WorkflowExecutionAlreadyStartedError ? 'WorkflowExecutionAlreadyStartedError' : describe(err).error, message: err instanceof Error ? err.message : String(err) });
    }
    await waitUntil('a question', 60_000, async () => ((await readState(waiting)).question ? true : undefined));
    await answerRaw(waiting, 'empty answer', { text: '  ' });
    await answerRaw(waiting, 'answer field in camelCase', { text: 'photo', answeredBy: 'claims-backend' });
    await answerRaw(waiting, 'answer as a string', 'photo attached');

    // An answer while no question is pending.
    const slow = await startDelegation(client, lostParcel(id('slow'), agent, 'slow'));
    await waitUntil('the slow delegation working', 60_000, async () => ((await readState(slow)).a2a_state === 'working' ? true : undefined));
    try {
      await answer(slow, { text: 'photo attached' });
      report({ probe: 'no question pending', error: 'none' });
    } catch (err) {
      report({ probe: 'no question pending', ...describe(err) });
    }

    // The refused answers changed nothing: the question still waits, and
    // a good answer is taken for round 1.
    const round = await answer(waiting, { text: 'photo attached: box.jpg', answered_by: 'claims-backend' });
    const out = await outcome(waiting);
    report({ probe: 'then a good answer', round, status: out.status });

    await cancel(slow, 'end of the probes');
    report({ probe: 'cancel', status: (await outcome(slow)).status });
  } finally {
    await client.connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
