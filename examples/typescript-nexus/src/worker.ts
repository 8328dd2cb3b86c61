// The worker of the TypeScript caller (workflows.ts): @temporalio/worker
// in the caller's namespace (not delegate's), on its own task queue.
//
//   cd examples/typescript-nexus && npm ci && npx tsc -p .
//   TEMPORAL_ADDRESS=127.0.0.1:7233 TEMPORAL_NAMESPACE=callers node dist/worker.js
//
// It prints one JSON line once it runs ({"worker":"running",...}) and
// stops on SIGINT or SIGTERM.

import { NativeConnection, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';

/** The task queue the caller's workflows run on. */
export const TASK_QUEUE = 'callers-ts';

async function main(): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'callers';
  const connection = await NativeConnection.connect({ address });
  try {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue: TASK_QUEUE,
      workflowsPath: fileURLToPath(new URL('./workflows.js', import.meta.url)),
    });
    const running = worker.run(); // until SIGINT or SIGTERM shuts it down
    console.log(JSON.stringify({ worker: 'running', namespace, task_queue: TASK_QUEUE }));
    await running;
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
