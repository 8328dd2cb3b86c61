// Package bench measures what durability costs: in one process and one
// run it starts an in-memory embedded Temporal server, a worker and the
// claims agent, then times the same exchange three ways, at concurrency 1
// (latency) and at a higher concurrency (throughput):
//
//   - raw: the a2a-go client directly (send, GetTask until done);
//   - trivial: Temporal workflows with one no-op activity, same server and
//     worker settings;
//   - delegate: delegations (the claims agent's "instant" scenario).
//
// It also counts history events per delegation (plain, and with one
// INPUT_REQUIRED round answered by the bench) and measures a worker process
// holding many delegations waiting in INPUT_REQUIRED. With Config.Postgres
// it measures the same on a Temporal server on PostgreSQL, beside the
// embedded one (`make bench-postgres`). Run returns the figures and
// whether each target held (Result; docs/performance.md).
package bench
