// delegate's Nexus service as a TypeScript caller sees it: service
// "delegate", operation "start-delegation" (package nexusop), its input the
// contract and its result the Outcome. The endpoint's name is the caller's
// side of the deployment: `delegate dev` creates "delegate"; on a cluster
// or Temporal Cloud, docs/deployment.md "Nexus".
//
// Only types and names: a workflow imports this file, so it stays free of
// I/O (the worker bundles it into the workflow sandbox).

import * as nexus from 'nexus-rpc';

/** The endpoint `delegate dev` creates (nexusop.Endpoint). */
export const ENDPOINT = 'delegate';

/** The contract (docs/contracts.md; the whole shape: examples/typescript's Delegation). */
export interface Delegation {
  local_workflow_id: string; // the delegation's Workflow ID in delegate's namespace
  agent_card_url: string;
  skill: string;
  purpose: string;
  message: { text?: string; data?: unknown };
  allowed_outputs: string[];
  deadline: string; // RFC 3339, absolute: nothing on the Nexus path resolves a relative deadline_in
  write_authority: 'none';
  [optional: string]: unknown; // output_schemas, resource_scope, ... (docs/contracts.md)
}

/** The Delegation workflow's result (the whole shape: examples/typescript's Outcome). */
export interface Outcome {
  local_workflow_id: string;
  status: string; // completed, invalid_output, rejected, canceled, deadline_exceeded, ...
  outputs: { kind: string; artifact_id: string; data?: unknown; text?: string; authority: 'none' }[] | null;
  error?: { category: string; message: string };
  [more: string]: unknown;
}

/** Service "delegate" (nexusop.Service), operation "start-delegation" (nexusop.Operation). */
export const delegateService = nexus.service('delegate', {
  startDelegation: nexus.operation<Delegation, Outcome>({ name: 'start-delegation' }),
});
