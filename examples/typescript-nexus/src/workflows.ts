// A workflow in another namespace that delegates through delegate's Nexus
// endpoint with @temporalio/workflow (docs/backends.md, "From another
// namespace: the Nexus operation"): it needs no client of delegate's
// namespace, only the endpoint's name. worker.ts runs it; start it like any
// workflow of its namespace, its one argument the contract (with an
// absolute deadline), e.g. from the Temporal CLI:
//
//   temporal workflow start --namespace callers --task-queue callers-ts \
//     --type delegateClaim --workflow-id claim-42 --input-file contract.json
//
// e2e/nexus_ts_interop_test.go runs both workflows below.

import { NexusOperationFailure } from '@temporalio/common'; // @temporalio/workflow 1.24 does not re-export it
import { createNexusServiceClient } from '@temporalio/workflow';
import { HandlerError } from 'nexus-rpc';
import { ENDPOINT, delegateService, type Delegation, type Outcome } from './service.js';

export async function delegateClaim(d: Delegation): Promise<Outcome> {
  const delegate = createNexusServiceClient({ endpoint: ENDPOINT, service: delegateService });
  // A cancel of this workflow cancels the operation; with the default cancellationType
  // (WAIT_CANCELLATION_COMPLETED) the call then returns the delegation's Outcome (canceled)
  // once it has canceled its remote task.
  return await delegate.executeOperation('startDelegation', d); // throws a NexusOperationFailure: refused (cause a HandlerError BAD_REQUEST), terminated, timed out
}

/** How delegateClaim's call failed, as this workflow sees it (the test's probe). */
export interface Refusal {
  error: string;
  message: string;
  cause?: string;
  handler_error_type?: string;
  retryable?: boolean;
  cause_message?: string;
}

/**
 * Runs delegateClaim and, when its call fails, returns what the failure is
 * in TypeScript (its class, the handler error's type, whether it may be
 * retried, and the handler's message) instead of failing.
 */
export async function delegateClaimRefusal(d: Delegation): Promise<Outcome | Refusal> {
  try {
    return await delegateClaim(d);
  } catch (err) {
    if (!(err instanceof NexusOperationFailure)) throw err;
    const r: Refusal = { error: err.name, message: err.message };
    if (err.cause instanceof HandlerError) {
      r.cause = err.cause.name;
      r.handler_error_type = err.cause.type;
      r.retryable = err.cause.retryable;
      r.cause_message = err.cause.message;
    }
    return r;
  }
}
