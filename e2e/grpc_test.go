package e2e

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
)

// TestGRPCOnlyCardEndToEnd: a whole delegation (an input round, the
// stream followed over gRPC server streaming) against an agent whose card
// offers only its gRPC interface (A2A 1.0 §10: a2a-go's a2agrpc/v1 handler
// over the claims agent), on its own loopback port, bearer-protected. The
// trust entry allows the interface's origin (its URL form,
// http://127.0.0.1:PORT), the worker's credential for that origin goes as
// "authorization" metadata, and the Outcome says GRPC.
func TestGRPCOnlyCardEndToEnd(t *testing.T) {
	const token = "grpc-e2e-bearer-5d1e"
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := gln.Addr().String()
	grpcOrigin := "http://" + grpcAddr
	e := setup(t, func(o *options) {
		o.agent.GRPCURL = grpcAddr
		o.agent.RequireBearer = token
		o.trust = func(base string) *cards.TrustStore {
			raw, _ := json.Marshal(map[string]any{"agents": map[string]any{base: map[string]any{"interface_origins": []string{grpcOrigin}}}})
			ts, err := cards.ParseTrustStore(raw, "")
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
		o.acts = func(a *activities.Activities, _ string) { a.Credentials = credentialsFile(t, grpcOrigin, token) }
	})
	gctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = e.agent.ServeGRPC(gctx, gln) }()
	t.Cleanup(func() { stop(); <-served })
	e.agent.Update(func(c *a2a.AgentCard) {
		var only []*a2a.AgentInterface
		for _, i := range c.SupportedInterfaces {
			if i.ProtocolBinding == a2a.TransportProtocolGRPC {
				only = append(only, i)
			}
		}
		c.SupportedInterfaces = only
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := e.answeredOnce(t, ctx, lostParcel("grpc-only-e2e", e.base))
	if out.Protocol.Binding != "GRPC" || out.Protocol.Version != "1.0" || out.Protocol.URL != grpcAddr {
		t.Errorf("protocol = %+v, want 1.0 over GRPC at %s", out.Protocol, grpcAddr)
	}
	if out.Outputs[0].Kind != "claim_opened" {
		t.Errorf("outputs = %+v, want claim_opened", out.Outputs)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("agent task count = %d, want 1", n)
	}
	if n := e.agent.Unauthorized.Load(); n != 0 {
		t.Errorf("the agent refused %d calls for their credential, want 0", n)
	}
}
