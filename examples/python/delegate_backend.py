"""A backend in Python that delegates work through delegate's Temporal workflow
with nothing but the Temporal Python SDK (temporalio, Python 3.10+): it starts a
delegation, finds it by search attribute once the remote agent asks a question,
reads the question (Query "state"), answers it (Update "provide-input"), waits
for the Outcome, and cancels a second delegation with a reason.

NOT RUN IN CI: PyPI is not reachable where this project is built and tested,
so this file has never been executed against a server. A Go test
(e2e/backend_names_test.go) reads it and checks that it uses exactly the public
names of package contracts. The same flow in TypeScript
(examples/typescript/src/delegate_backend.ts) is compiled and run by
`make test-interop` against a real server, a worker and the claims agent.
The public names and shapes: docs/backends.md; the contract: docs/contracts.md.

    pip install temporalio
    TEMPORAL_ADDRESS=127.0.0.1:7233 python delegate_backend.py \\
        --agent http://127.0.0.1:9999 --id lost-parcel-py-1
"""

import argparse
import asyncio
import json
import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    SearchAttributeKey,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError

# ---- The public names (contracts/names.go) ----

WORKFLOW_TYPE = "Delegation"  # the workflow type the delegate worker registers
TASK_QUEUE = "delegate"  # the Task Queue the delegate worker polls
QUERY_STATE = "state"  # the whole local state, with the pending question
UPDATE_PROVIDE_INPUT = "provide-input"  # an answer (also a Signal of that name)
SIGNAL_CANCEL_REASON = "cancel-reason"  # why, sent just before a cancel request
SIGNAL_REVOKE = "revoke"  # withdraw the authorization (authorization_denied)
SIGNAL_RECONCILE = "reconcile"  # read the remote task once now
# Keyword Search Attributes the workflow keeps up to date.
SEARCH_ATTRIBUTE_A2A_STATE = "A2AState"
SEARCH_ATTRIBUTE_A2A_AGENT = "A2AAgent"
SEARCH_ATTRIBUTE_A2A_REMOTE_TASK_ID = "A2ARemoteTaskId"
SEARCH_ATTRIBUTE_A2A_PURPOSE = "A2APurpose"

# ApplicationError types of a refused input.
ERROR_INVALID_CONTRACT = "invalid_contract"  # the run failed: contract refused
ERROR_CARRIED_STATE = "carried_state"  # the run failed: a second argument refused
ERROR_INVALID_INPUT = "invalid_input"  # an Update was refused; the delegation goes on


async def connect() -> Client:
    """Connects as the Temporal CLI does by default: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE."""
    return await Client.connect(
        os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
        namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
    )


def deadline_from_now(seconds: float) -> str:
    """A deadline seconds from now, RFC 3339. Contracts never carry a fixed date."""
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def lost_parcel(local_workflow_id: str, agent: str, scenario: str | None = None) -> dict[str, Any]:
    """The claims agent's lost-parcel contract (docs/contracts.md: snake_case; an unknown field is refused)."""
    data: dict[str, Any] = {"order_id": "A-1001"}
    if scenario:
        data["scenario"] = scenario
    return {
        "local_workflow_id": local_workflow_id,
        "agent_card_url": f"{agent}/.well-known/agent-card.json",
        "skill": "open-claim",
        "purpose": "open a claim for a lost parcel",
        "message": {"text": "My parcel for order A-1001 never arrived.", "data": data},
        "allowed_outputs": ["claim_opened"],
        "deadline": deadline_from_now(3600),  # in the future, at most 366 days ahead
        "write_authority": "none",
    }


async def start_delegation(client: Client, contract: dict[str, Any]) -> WorkflowHandle:
    """Starts a delegation: workflow type Delegation on task queue delegate, the
    contract as its one argument, the workflow id = local_workflow_id. No cron
    schedule and no workflow timeouts: the contract's deadline bounds it.
    Raises temporalio.exceptions.WorkflowAlreadyStartedError when that id runs."""
    return await client.start_workflow(
        WORKFLOW_TYPE,
        contract,
        id=contract["local_workflow_id"],
        task_queue=TASK_QUEUE,
        id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    )


async def read_state(handle: WorkflowHandle) -> dict[str, Any]:
    """The local state (Query "state"): a2a_state, question (absent when none
    is pending: round, state, text, data, since), input_rounds, outcome, ..."""
    return await handle.query(QUERY_STATE)


async def answer(handle: WorkflowHandle, text: str, answered_by: str) -> int:
    """Answers the pending question (Update "provide-input"); returns its round.
    A refused answer raises WorkflowUpdateFailedError whose cause is an
    ApplicationError of type invalid_input saying why; nothing was sent."""
    result = await handle.execute_update(UPDATE_PROVIDE_INPUT, {"text": text, "answered_by": answered_by})
    return result["round"]


async def outcome(handle: WorkflowHandle) -> dict[str, Any]:
    """Waits for the Outcome (following continue-as-new). A refused contract
    raises WorkflowFailureError whose cause is an ApplicationError of type
    invalid_contract (or carried_state), naming the field and the rule."""
    return await handle.result()


async def cancel(handle: WorkflowHandle, reason: str) -> None:
    """The reason first (Signal "cancel-reason"), then the workflow's
    cancellation: the workflow cancels the remote task and ends canceled.
    Never terminate a delegation: its remote task would go on working."""
    await handle.signal(SIGNAL_CANCEL_REASON, {"reason": reason})
    await handle.cancel()


async def list_by_a2a_state(client: Client, state: str) -> list[dict[str, Any]]:
    """The running delegations whose Search Attribute A2AState is state."""
    agent_key = SearchAttributeKey.for_keyword(SEARCH_ATTRIBUTE_A2A_AGENT)
    query = f"{SEARCH_ATTRIBUTE_A2A_STATE} = {json.dumps(state)} AND ExecutionStatus = 'Running'"
    rows = []
    async for wf in client.list_workflows(query):
        rows.append({"id": wf.id, "agent": wf.typed_search_attributes.get(agent_key)})
    return rows


def refusal(err: BaseException) -> dict[str, Any] | None:
    """Why the workflow refused something: the ApplicationError's type and message."""
    if isinstance(err, (WorkflowFailureError, WorkflowUpdateFailedError)) and isinstance(err.cause, ApplicationError):
        return {"type": err.cause.type, "message": err.cause.message, "non_retryable": err.cause.non_retryable}
    return None


async def wait_until(what: str, timeout: float, cond):
    """Polls cond (async, returns a value or None) until it returns a value."""
    end = time.monotonic() + timeout
    while True:
        v = await cond()
        if v is not None:
            return v
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.2)


def show(step: str, **v: Any) -> None:
    print(json.dumps({"step": step, **v}))


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agent", required=True, help="the agent's base URL, e.g. http://127.0.0.1:9999")
    p.add_argument("--id", required=True, help="the delegation's local_workflow_id")
    args = p.parse_args()
    client = await connect()
    try:
        # 1. Start.
        handle = await start_delegation(client, lost_parcel(args.id, args.agent))
        show("started", id=handle.id)

        # 2. Find the delegations waiting for an answer, by search attribute.
        async def listed():
            rows = await list_by_a2a_state(client, "input-required")
            return rows if any(r["id"] == args.id for r in rows) else None

        show("listed", state="input-required", delegations=await wait_until("input-required", 60, listed))

        # 3. Read the question (Query "state"). Its text is the remote agent's:
        # show it, never obey it.
        state = await read_state(handle)
        question = state.get("question")
        if question is None:
            raise RuntimeError(f"no question pending (a2a_state {state['a2a_state']})")
        show("question", round=question["round"], text=question["text"])

        # 4. Answer it (Update "provide-input").
        show("answered", round=await answer(handle, "photo attached: box.jpg", "claims-backend"))

        # 5. Wait for the Outcome. Outputs are proposals (authority "none").
        show("outcome", outcome=await outcome(handle))

        # 6. Cancel a delegation that is still working, with a reason.
        slow = await start_delegation(client, lost_parcel(f"{args.id}-slow", args.agent, "slow"))

        async def working():
            return True if (await read_state(slow))["a2a_state"] == "working" else None

        await wait_until("working", 60, working)
        await cancel(slow, "no longer needed")
        show("canceled", outcome=await outcome(slow))
    except (WorkflowFailureError, WorkflowUpdateFailedError) as err:
        r = refusal(err)
        if r is not None:
            show("refused", **r)
        raise


if __name__ == "__main__":
    asyncio.run(main())
