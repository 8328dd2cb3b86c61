package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2adelegate/delegate/cards"
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

// A log line's agent_origin is the metrics' agent_origin label of the same
// call (cards.LabelOrigin), so that an alert's label finds the delegation's
// lines: for a gRPC interface, one on another origin than its card, and a
// default port the card left out. The card's origin, when it differs, is
// card_origin. (Before, the lines carried the card's origin: an alert on
// grpc://127.0.0.1:9495 found no line, which said http://127.0.0.1:9496.)
func TestLogOriginIsTheMetricsLabel(t *testing.T) {
	for _, tc := range []struct {
		iface            contracts.Interface
		origin, cardOrig string
	}{
		{contracts.Interface{URL: "127.0.0.1:9495", Binding: "GRPC", CardOrigin: "http://127.0.0.1:9496"}, "grpc://127.0.0.1:9495", "http://127.0.0.1:9496"},
		{contracts.Interface{URL: "https://Agent.Example/a2a", Binding: "JSONRPC", CardOrigin: "https://agent.example"}, "https://agent.example:443", ""},
		{contracts.Interface{URL: "https://api.example:8443/a2a", Binding: "JSONRPC", CardOrigin: "https://agent.example"}, "https://api.example:8443", "https://agent.example"},
	} {
		var buf bytes.Buffer
		a := &Activities{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
		a.log(withDelegation(context.Background(), "t", tc.iface, "")).Info("x")
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if got := cards.LabelOrigin(tc.iface.URL); line["agent_origin"] != got || got != tc.origin {
			t.Errorf("%s: agent_origin %v, metric label %s, want %s", tc.iface.URL, line["agent_origin"], got, tc.origin)
		}
		if co, _ := line["card_origin"].(string); co != tc.cardOrig {
			t.Errorf("%s: card_origin %q, want %q", tc.iface.URL, co, tc.cardOrig)
		}
	}
}
