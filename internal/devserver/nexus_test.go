package devserver

import (
	"context"
	"net"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
)

// The frontend's HTTP API listens on a port chosen at the start (Nexus
// completions go through it); a second namespace can be registered; the
// Nexus endpoint is created once, left alone when asked again with the
// same target, and updated to a new target.
func TestNexusEndpointAndNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Config{Memory: true, UIPort: -1, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if srv.HTTPAddr() == "" {
		t.Fatal("no HTTP address")
	}
	if c, err := net.DialTimeout("tcp", srv.HTTPAddr(), 5*time.Second); err != nil {
		t.Errorf("the frontend's HTTP API at %s: %v", srv.HTTPAddr(), err)
	} else {
		_ = c.Close()
	}
	if err := srv.EnsureNamespace(ctx, "callers"); err != nil {
		t.Fatal(err)
	}
	if err := srv.EnsureNamespace(ctx, "callers"); err != nil {
		t.Errorf("EnsureNamespace again: %v", err)
	}
	for _, tq := range []string{"delegate", "delegate", "other"} {
		if err := srv.EnsureNexusEndpoint(ctx, "delegate", srv.Namespace(), tq); err != nil {
			t.Fatalf("EnsureNexusEndpoint(%s): %v", tq, err)
		}
	}
	c, err := srv.dial(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.OperatorService().ListNexusEndpoints(ctx, &operatorservice.ListNexusEndpointsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eps := l.GetEndpoints()
	if len(eps) != 1 {
		t.Fatalf("%d endpoints, want 1: %v", len(eps), eps)
	}
	w := eps[0].GetSpec().GetTarget().GetWorker()
	if eps[0].GetSpec().GetName() != "delegate" || w.GetNamespace() != srv.Namespace() || w.GetTaskQueue() != "other" {
		t.Errorf("endpoint %v, want delegate → %s/other", eps[0].GetSpec(), srv.Namespace())
	}
}
