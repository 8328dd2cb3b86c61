// Package tracing wires OpenTelemetry traces through a delegation: a
// backend's span, StartWorkflow, the workflow, its activities and the HTTP
// requests to the agent, which carry W3C traceparent (the Temporal SDK's
// go.temporal.io/sdk/contrib/opentelemetry interceptor, and otelhttp in
// package a2aclient). It is off unless the standard OTEL_* environment asks
// for an OTLP exporter.
package tracing
