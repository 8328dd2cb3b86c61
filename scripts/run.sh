#!/usr/bin/env bash
# `make run`: the embedded Temporal server with its UI and the worker, the
# example claims agent, and one sample delegation (lost-parcel), until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_PORT=${TEMPORAL_PORT:-7233}
UI_PORT=${UI_PORT:-8233}
AGENT_ADDR=${AGENT_ADDR:-127.0.0.1:9999}
export TEMPORAL_ADDRESS="127.0.0.1:${TEMPORAL_PORT}"
# The commands printed below must reach this server from another shell.
ADDR_FLAG=""
if [ "$TEMPORAL_PORT" != 7233 ]; then ADDR_FLAG=" --address ${TEMPORAL_ADDRESS}"; fi
mkdir -p .delegate

# One `make run` per directory: a second one must not share the SQLite file
# or touch the first one's logs. The lock is flock(1) on .delegate/run.lock,
# held by this script and the servers it starts (inherited descriptor 9),
# so it goes away with them however they end; `delegate dev` also locks
# its database file itself.
lock=.delegate/run.lock
[ -d "$lock" ] && rm -rf "$lock" # a lock directory left by an older version of this script
if command -v flock >/dev/null 2>&1; then
  exec 9>>"$lock"
  if ! flock -n 9; then
    owner=$(cat "$lock" 2>/dev/null || true)
    echo "make run: another make run${owner:+ (pid $owner)} is serving from $(pwd)/.delegate; stop it first (Ctrl-C in its shell)." >&2
    exit 1
  fi
  echo $$ > "$lock"
else
  echo "make run: flock(1) not found (util-linux): a second make run in this directory is not detected (delegate dev still refuses a database in use)." >&2
fi

# Every port must be free before anything starts: a busy one belongs to
# another server, which must not be mistaken for ours.
port_busy() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
busy=""
port_busy 127.0.0.1 "$TEMPORAL_PORT" && busy="$busy TEMPORAL_PORT=${TEMPORAL_PORT}"
port_busy 127.0.0.1 "$UI_PORT" && busy="$busy UI_PORT=${UI_PORT}"
port_busy "${AGENT_ADDR%:*}" "${AGENT_ADDR##*:}" && busy="$busy AGENT_ADDR=${AGENT_ADDR}"
if [ -n "$busy" ]; then
  echo "make run: in use:${busy} (another make run or server?). Stop it, or choose free ports, e.g." >&2
  echo "  TEMPORAL_PORT=7243 UI_PORT=8243 AGENT_ADDR=127.0.0.1:9998 make run" >&2
  exit 1
fi

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "stopping..."
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -s .delegate/temporal.db ]; then
    echo "stopped. The delegations are kept in .delegate/temporal.db; the next make run goes on with them."
  else
    echo "stopped."
  fi
}
trap cleanup INT TERM EXIT

./bin/delegate dev --port "$TEMPORAL_PORT" --ui-port "$UI_PORT" > .delegate/dev.log 2>&1 &
pids+=($!)
./bin/claims-agent --addr "$AGENT_ADDR" --state-dir .delegate/agent > .delegate/claims-agent.log 2>&1 &
pids+=($!)

# Wait (bounded) until our own server says it serves (its first line of
# output) and answers, and our agent serves its card.
for i in $(seq 1 300); do
  if grep -qs '^Temporal server ' .delegate/dev.log && ./bin/delegate list >/dev/null 2>&1 &&
     grep -qs '^claims agent: ' .delegate/claims-agent.log; then
    break
  fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then echo "make run: delegate dev exited:" >&2; cat .delegate/dev.log >&2; exit 1; fi
  if ! kill -0 "${pids[1]}" 2>/dev/null; then echo "make run: claims-agent exited:" >&2; cat .delegate/claims-agent.log >&2; exit 1; fi
  if [ "$i" = 300 ]; then echo "make run: timed out waiting for the server; see .delegate/*.log" >&2; exit 1; fi
  sleep 0.2
done

# The sample contract, with a fresh id and the local agent's card (its deadline_in, an hour, is resolved by start).
id="lost-parcel-$(date +%Y%m%d-%H%M%S)"
sed -e "s/\"local_workflow_id\": \"[^\"]*\"/\"local_workflow_id\": \"${id}\"/" \
    -e "s#\"agent_card_url\": \"[^\"]*\"#\"agent_card_url\": \"http://${AGENT_ADDR}/.well-known/agent-card.json\"#" \
    contracts/examples/lost-parcel.json > .delegate/lost-parcel.json
./bin/delegate start --contract .delegate/lost-parcel.json >/dev/null

# Wait until the remote agent asks its question.
for i in $(seq 1 150); do
  state=$(./bin/delegate status "$id" --json 2>/dev/null | sed -n 's/^  "a2a_state": "\(.*\)",$/\1/p')
  [ "$state" = "input-required" ] && break
  sleep 0.2
done

# The UI page of the run, on the tab where the question is: the path
# `delegate status` names while it waits ("in the ui"). A link without the
# run id would open the Timeline tab instead.
page=$( (./bin/delegate status "$id" 2>/dev/null || true) | sed -n 's#^in the ui: *\(/[^ ]*\).*#\1#p')
ui_hint="(the agent's question and how to answer it: this opens its \"User Metadata\" tab, under \"Current Details\")"
if [ -z "$page" ]; then
  page="/namespaces/default/workflows/${id}"
  ui_hint="(the agent's question and how to answer it: open the page's \"User Metadata\" tab, \"Current Details\")"
fi

cat <<MSG

delegate is running.
  Temporal UI      http://127.0.0.1:${UI_PORT}${page}
                   ${ui_hint}
  Temporal server  ${TEMPORAL_ADDRESS} (SQLite: .delegate/temporal.db; logs: .delegate/*.log)
  internal ports   $(sed -n 's/^Internal ports  \([0-9 ]*\) on .*/\1/p' .delegate/dev.log) (the server's own services, chosen at each start)
  claims agent     http://${AGENT_ADDR}/.well-known/agent-card.json

The sample delegation ${id} is ${state:-starting}: the claims agent asks for a photo of the box.
Answer it from the UI (Send Signal or Update "provide-input" with {"text": "photo attached: box.jpg", "answered_by": "you"}),
or in another shell:

  ./bin/delegate answer ${id}${ADDR_FLAG} --text "photo attached: box.jpg" --by "$(whoami)"
  ./bin/delegate status ${id}${ADDR_FLAG}

Waiting for delegations: ./bin/delegate list${ADDR_FLAG} --state input-required
Press Ctrl-C to stop.
MSG
if [ -n "$ADDR_FLAG" ]; then
  echo "(Other ports than the defaults: in another shell, export TEMPORAL_ADDRESS=${TEMPORAL_ADDRESS} and the README's commands reach this server.)"
fi

wait "${pids[0]}"
