// Package metrics exposes the Temporal SDK's worker and client metrics on a
// Prometheus endpoint: an adapter from the SDK's metrics handler to a
// uber-go/tally scope with tally's Prometheus reporter. Metric names and
// tags are the SDK's (task queue, workflow and activity types, ...); no
// message body or secret is ever a tag.
package metrics
