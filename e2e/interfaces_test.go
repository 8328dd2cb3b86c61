package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/cards"
)

// TestA2AGoEveryInterface: the claims agent (a2a-go v2.4.0's a2asrv, an
// implementation this client does not wrap on the server side) offers each
// of its six interfaces in turn, alone on its card: JSON-RPC, HTTP+JSON
// and gRPC, at A2A 1.0 and at 0.3 (a2acompat/a2av0 and a2agrpc/v0; 0.3
// HTTP+JSON is a2a-go#371's REST wire, once refused at selection). A whole
// delegation with one input round passes through each, the agent sees one
// task, and the Outcome records the interface spoken.
func TestA2AGoEveryInterface(t *testing.T) {
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := gln.Addr().String()
	e := setup(t, func(o *options) {
		o.agent.GRPCURL = grpcAddr
		o.trust = func(base string) *cards.TrustStore {
			raw, _ := json.Marshal(map[string]any{"agents": map[string]any{base: map[string]any{"interface_origins": []string{"http://" + grpcAddr}}}})
			ts, err := cards.ParseTrustStore(raw, "")
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
	})
	gctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = e.agent.ServeGRPC(gctx, gln) }()
	t.Cleanup(func() { stop(); <-served })
	var all []*a2a.AgentInterface
	e.agent.Update(func(c *a2a.AgentCard) { all = append(all, c.SupportedInterfaces...) })
	if len(all) != 6 {
		t.Fatalf("the claims agent offers %d interfaces, want 6", len(all))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, iface := range all {
		version := cards.MajorMinor(string(iface.ProtocolVersion))
		name := fmt.Sprintf("%s@%s", iface.ProtocolBinding, version)
		t.Run(name, func(t *testing.T) {
			only := *iface
			e.agent.Update(func(c *a2a.AgentCard) { c.SupportedInterfaces = []*a2a.AgentInterface{&only} })
			before := e.agent.TaskCount()
			id := "every-interface-" + strings.NewReplacer("+", "-", "@", "-", ".", "-").Replace(strings.ToLower(name))
			out := e.answeredOnce(t, ctx, lostParcel(id, e.base))
			if out.Protocol.Binding != string(iface.ProtocolBinding) || out.Protocol.Version != version || out.Protocol.URL != iface.URL {
				t.Errorf("protocol = %+v, want %s at %s", out.Protocol, name, iface.URL)
			}
			if out.Outputs[0].Kind != "claim_opened" {
				t.Errorf("outputs = %+v, want claim_opened", out.Outputs)
			}
			if n := e.agent.TaskCount() - before; n != 1 {
				t.Errorf("the agent made %d tasks, want 1", n)
			}
		})
	}
}
