#!/bin/sh
# Creates the Temporal namespace (when missing) and registers the custom
# search attributes the Delegation workflow sets, all Keyword. It runs on
# the temporalio/admin-tools image (the temporal CLI) once the frontend
# serves: docker-compose.yml (service temporal-setup) and deploy/k8s (Job
# delegate-temporal-setup, which carries a copy of this file). Idempotent:
# run it again after an upgrade that adds a search attribute.
#
# Environment:
#   TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and, for a secured frontend,
#     TEMPORAL_TLS_* or TEMPORAL_API_KEY: the temporal CLI's own
#   DELEGATE_SEARCH_ATTRIBUTES: the names, space-separated (the list
#     contracts.SearchAttributeNames holds; deploy/compose_test.go and
#     deploy/k8s_test.go check it)
#   DELEGATE_NAMESPACE_RETENTION: retention of a namespace this creates
#     (default 72h)
set -eu

ns="${TEMPORAL_NAMESPACE:-default}"
names="${DELEGATE_SEARCH_ATTRIBUTES:?set DELEGATE_SEARCH_ATTRIBUTES to the search attribute names}"

# retry CMD...: runs CMD until it succeeds, 60 times 2s apart at most.
retry() {
	n=0
	until "$@"; do
		n=$((n + 1))
		if [ "$n" -ge 60 ]; then
			echo "gave up after 120s: $*" >&2
			return 1
		fi
		sleep 2
	done
}

retry temporal operator cluster health
if ! temporal operator namespace describe -n "$ns" >/dev/null 2>&1; then
	temporal operator namespace create -n "$ns" --retention "${DELEGATE_NAMESPACE_RETENTION:-72h}"
fi

# listed NAME: the namespace lists the search attribute NAME.
listed() {
	temporal operator search-attribute list -n "$ns" | grep -qw -- "$1"
}
# A namespace created a moment ago may not be served yet: retried.
retry temporal operator search-attribute list -n "$ns" >/dev/null
for name in $names; do
	if listed "$name"; then
		echo "search attribute $name: registered"
		continue
	fi
	retry temporal operator search-attribute create -n "$ns" --name "$name" --type Keyword
	retry listed "$name"
	echo "search attribute $name: registered now"
done
