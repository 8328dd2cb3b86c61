package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/interceptor"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/tracing"
)

// One trace from a backend's span to the agent: the backend starts a
// delegation inside its span; StartWorkflow, the workflow and its
// activities are spans of the same trace, and the HTTP requests the agent
// received carry a traceparent of that trace.
func TestTraceReachesTheAgent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracing.Install(tp)
	defer func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	}()
	ic, err := tracing.Interceptor()
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(o *options) { o.interceptors = []interceptor.ClientInterceptor{ic} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	sctx, span := tp.Tracer("backend").Start(ctx, "backend: open a claim")
	d := lostParcel("trace-1", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"instant"}`)
	run, err := startRun(sctx, e.c, d)
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	trace := span.SpanContext().TraceID().String()

	tps := e.agent.TraceParents()
	if len(tps) == 0 {
		t.Fatal("the agent received no traceparent")
	}
	for _, tp := range tps {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || parts[1] != trace {
			t.Errorf("traceparent %q: want one of trace %s", tp, trace)
		}
	}
	names := map[string]bool{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() == trace {
			names[s.Name] = true
		}
	}
	for _, want := range []string{"StartWorkflow:Delegation", "RunWorkflow:Delegation", "RunActivity:CheckAndSend"} {
		if !names[want] {
			t.Errorf("no span %q in the backend's trace; spans: %v", want, names)
		}
	}
}
