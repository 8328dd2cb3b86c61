// Package metrics is what a delegate worker serves on --metrics-addr
// (path /metrics, Prometheus text format), from one Prometheus registry:
//
//   - the Temporal SDK's worker and client metrics, through an adapter from
//     the SDK's metrics handler to a uber-go/tally scope with tally's
//     Prometheus reporter (names and tags are the SDK's);
//   - delegate's own (Names): delegations ended (counted by Interceptor),
//     calls to agents, token requests and card verifications (the
//     observers of packages cards, a2aclient and activities), and the
//     waiting gauges (WatchWaiting, from visibility).
//
// Label values are bounded: origins are folded to scheme://host:port and
// capped (Options.MaxOrigins, then "other"); no workflow id, task id, URL
// path, message body or secret is ever a label. docs/operations.md,
// "Watching delegate", describes each metric.
package metrics
