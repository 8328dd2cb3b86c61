# delegate — see README.md. Needs only Go (and make).
GO      ?= go
# go.mod needs Go 1.26.10 or newer (go.temporal.io/server 1.32.2); its
# toolchain line names go1.27.3, which the go command fetches from the module
# proxy (about 76 MB, once) where the machine's own Go is older. A machine's
# Go may default to GOTOOLCHAIN=local, which refuses: make asks for auto.
export GOTOOLCHAIN ?= auto
BIN     := bin
PKGS    := ./...

.PHONY: build build-worker run test test-interop test-browser test-postgres test-rules lint bench bench-postgres clean record-histories deps

.PHONY: build build-worker run test test-interop test-browser test-postgres test-cluster lint bench bench-postgres clean record-histories deps

build:
	$(GO) build -o $(BIN)/delegate ./cmd/delegate
	$(GO) build -o $(BIN)/claims-agent ./cmd/claims-agent

# The worker build: the CLI without the embedded Temporal server, the UI and
# the bench (docs/deployment.md, "The worker image"; the Dockerfile's).
build-worker:
	$(GO) build -tags worker -o $(BIN)/delegate-worker ./cmd/delegate

# Embedded Temporal (SQLite) + UI + worker, the claims agent, and the sample
# delegation; serves until Ctrl-C.
run: build
	./scripts/run.sh

# The tests that need what may be missing here (the interop peers from npm,
# a PostgreSQL server) skip without it, and say so (testutil.SkipGroup): the
# last line names each group skipped and the target that runs it.
test:
	$(GO) vet $(PKGS)
	@log=$$(mktemp); echo "$(GO) test -count=1 -timeout 20m $(PKGS)"; \
	DELEGATE_SKIP_LOG=$$log $(GO) test -count=1 -timeout 20m $(PKGS); rc=$$?; \
	./scripts/test-summary.sh $$log; rm -f $$log; exit $$rc

# Interop with peers this project did not write: agents built on the a2a-js
# SDK 1.x (A2A 1.0) and 0.3.x (A2A 0.3) from npm (interop/), through the
# embedded Temporal server and a worker; the TypeScript backend example
# (examples/typescript: @temporalio/client from npm, type-checked and compiled
# by tsc) against them; a TypeScript workflow that delegates through the
# Nexus endpoint delegate (examples/typescript-nexus: @temporalio/workflow
# and @temporalio/worker from npm, compiled by tsc; its worker runs in
# namespace callers); and an MCP client on the official TypeScript SDK
# driving `delegate mcp` (interop/mcp/; with a human who answers after 70 s,
# TestInteropMCPSlowHuman, about 4 minutes); the official MCP conformance suite
# against `delegate mcp` over HTTP (interop/conformance/, on the Node 22 the npm
# package node ships; TestInteropMCPConformance, with expected-failures.yaml);
# the MCP Inspector's CLI over stdio and HTTP in both protocol eras
# (interop/inspector/, on Node 22 likewise; TestInteropMCPInspector) and the
# TypeScript SDK's OAuth discovery in both HTTP modes (interop/mcp/
# discovery.mjs; TestInteropMCPOAuthDiscovery); and the Agent Skill
# skills/delegate through the agentskills.io validator skills-ref
# (interop/skills/). Needs node and npm; DELEGATE_INTEROP=1 makes a missing
# peer a failure instead of a skip.
test-interop:
	cd interop && npm ci --no-audit --no-fund --loglevel=error
	cd interop/mcp && npm ci --no-audit --no-fund --loglevel=error
	cd interop/conformance && npm ci --no-audit --no-fund --loglevel=error
	cd interop/inspector && npm ci --no-audit --no-fund --loglevel=error
	cd interop/skills && npm ci --no-audit --no-fund --loglevel=error && npx --no-install skills-ref validate ../../skills/delegate
	cd examples/typescript && npm ci --no-audit --no-fund --loglevel=error && npx tsc -p .
	cd examples/typescript-nexus && npm ci --no-audit --no-fund --loglevel=error && npx tsc -p .
	DELEGATE_INTEROP=1 $(GO) test -count=1 -timeout 5m ./internal/interop
	DELEGATE_INTEROP=1 $(GO) test -count=1 -timeout 20m -run 'Interop' ./a2aclient ./e2e

# Each direct dependency that is behind the newest version the module proxy
# serves (a report, not a gate: a newer version may need a newer Go, or pull
# a module the proxy does not serve; go.mod says why each one is held).
deps:
	@$(GO) list -m -u -e -f '{{if and (not .Indirect) (not .Main)}}{{if .Update}}{{.Path}} {{.Version}} -> {{.Update.Version}}{{else if .Error}}{{.Path}} {{.Version}}: newer versions not known (the proxy lists none){{end}}{{end}}' all 2>/dev/null | sed '/^$$/d' | sort; \
	echo "(direct dependencies behind the module proxy; go.mod says why one is held back)"

# Record the histories of the end-to-end scenarios into a new folder of
# workflows/testdata/histories (make record-histories NAME=baseline, or
# NAME=<change-id>-v<N> for a version after it: docs/versioning.md);
# make test replays every recorded history with today's workflow code.
record-histories:
	@test -n "$(NAME)" || (echo "usage: make record-histories NAME=folder-name"; exit 2)
	@test ! -e workflows/testdata/histories/$(NAME) || (echo "workflows/testdata/histories/$(NAME) exists: recorded histories are never re-recorded"; exit 2)
	DELEGATE_RECORD_HISTORIES=$(CURDIR)/workflows/testdata/histories/$(NAME) $(GO) test -count=1 -run TestRecordHistories -v ./e2e

# delegate bench with the defaults (about a minute), then the Go benchmarks.
bench: build
	./$(BIN)/delegate bench
	$(GO) test -run '^$$' -bench . -benchmem ./cards ./contracts

# delegate bench on both servers: the in-memory embedded one and a Temporal
# server on a temporary PostgreSQL (Debian's postgresql package; started by
# scripts/with-postgres.sh on a free port, removed after). BENCH_ARGS adds
# flags, e.g. BENCH_ARGS="--waiting 100000 --only postgres" (docs/scaling.md).
BENCH_ARGS ?=
bench-postgres: build
	./scripts/with-postgres.sh ./$(BIN)/delegate bench --server '"$$DELEGATE_POSTGRES_URL"' $(BENCH_ARGS)

# The tests that need PostgreSQL, on a temporary server (Debian's postgresql):
# the production path (Temporal on PostgreSQL with mTLS on its frontend, two
# `delegate worker` processes, one killed), the server and the bench on it,
# and the Temporal part of docker-compose.yml without Docker (deploy).
test-postgres:
	./scripts/with-postgres.sh DELEGATE_REQUIRE_POSTGRES=1 $(GO) test -count=1 -timeout 20m -run Postgres ./internal/devserver ./internal/bench ./e2e ./deploy

# The Prometheus alert rules (deploy/prometheus): promtool check rules and
# promtool test rules (Debian's prometheus package gives promtool), and the
# check that the dashboard and the rules query only metrics the worker
# serves. make test runs them too, and skips promtool where it is missing.
test-rules:
	DELEGATE_REQUIRE_PROMTOOL=1 $(GO) test -count=1 -run 'TestRulesPromtool|TestDashboardAndRulesQueryServedMetrics' ./deploy

# delegate on a Temporal cluster of separate processes on loopback (two
# frontends, two history hosts sharing 8 shards, matching, the worker
# service; PostgreSQL from scripts/with-postgres.sh), two `delegate worker`
# processes and the claims agent, through a history host killed, a frontend
# killed, matching and PostgreSQL restarted, a worker cut off for 30 s and
# the agent down for 60 s (e2e/cluster_test.go; docs/deployment.md, "The
# cluster test"). About 4 minutes; prints the line "cluster: ...".
test-cluster:
	./scripts/with-postgres.sh DELEGATE_CLUSTER=1 $(GO) test -count=1 -timeout 20m -v -run '^TestCluster$$' ./e2e

# The operator's flow in the Temporal UI, in headless Chromium (Debian's
# chromium package; playwright-core from npm, no browser download).
# DELEGATE_UI_SCREENSHOTS=1 make test-browser also retakes the README's
# screenshots (docs/operator-ui-details.png, docs/operator-ui-signal.png)
# from the live page.
test-browser: build
	cd uitest && npm ci --no-audit --no-fund --loglevel=error
	cd uitest && node ui.test.mjs

# workflowcheck: the Delegation workflow's code may not call anything
# non-deterministic (time.Now, goroutines, map order, ...); reviewed
# exceptions are in workflowcheck.config.yaml.
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1)
	$(GO) vet $(PKGS)
	$(GO) run $(WORKFLOWCHECK) -config workflowcheck.config.yaml ./workflows ./child

clean:
	rm -rf $(BIN)
