package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Enabled reports whether the environment asks for traces:
// OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) while
// OTEL_TRACES_EXPORTER is unset; never with OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none (the OpenTelemetry SDK environment variables).
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if exp == "" {
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	}
	// A list (the specification allows "otlp,console"): otlp is the one
	// exporter this build has.
	for _, e := range strings.Split(exp, ",") {
		if strings.TrimSpace(e) == "otlp" {
			return true
		}
	}
	return false
}

// Setup installs a global tracer provider that exports over OTLP, gRPC or
// HTTP/protobuf as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL say (default http/protobuf, the
// specification's), the exporter reading its other OTEL_EXPORTER_OTLP_*
// settings itself; service is the service.name unless OTEL_SERVICE_NAME
// says otherwise; export errors are logged to logger. It returns the
// function that flushes and stops it.
// Errors: an unknown protocol, or the exporter cannot be made.
func Setup(ctx context.Context, service string, logger *slog.Logger) (shutdown func(context.Context) error, err error) {
	// Export errors go to logger (the SDK's default writes plain lines to
	// stderr, in the middle of JSON logs).
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("traces not exported", "error", err.Error()) }))
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: grpc or http/protobuf", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		res = resource.Default()
	}
	if os.Getenv("OTEL_SERVICE_NAME") != "" {
		res = resource.Default() // it names the service itself
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return tp.Shutdown, nil
}

// Install makes tp the global tracer provider and W3C Trace Context and
// Baggage the global propagator (Setup does; tests install their own
// provider).
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

// Interceptor is the Temporal client interceptor that carries the trace
// through workflows and activities (contrib/opentelemetry), with the
// global tracer provider and propagator. Add it to the client options of
// every client that starts delegations, and of the worker.
func Interceptor() (interceptor.Interceptor, error) {
	return opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{TextMapPropagator: otel.GetTextMapPropagator()})
}
