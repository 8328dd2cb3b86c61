package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2adelegate/delegate/contracts"
)

// The activities' log lines carry the remote task id and the agent
// origin once noted, and the trace id when the context has one.
func TestLogCarriesTheDelegationsIDs(t *testing.T) {
	var buf bytes.Buffer
	a := &Activities{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	ctx = withDelegation(ctx, "", contracts.Interface{}, "https://agent.example/.well-known/agent-card.json?k=v")
	ctx = withDelegation(ctx, "task-1", contracts.Interface{URL: "https://agent.example:8443/a2a/jsonrpc", Binding: "JSONRPC"}, "")
	a.log(ctx).Info("x")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"remote_task_id": "task-1", "agent_origin": "https://agent.example:8443", "trace_id": tid.String()}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %s (line %v)", k, line[k], v, line)
		}
	}
}
