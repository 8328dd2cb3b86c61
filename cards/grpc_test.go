package cards

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// The forms peers write a gRPC interface url in (a2a-go's examples:
// "127.0.0.1:PORT"), each read as a target with TLS unless it is a
// loopback host:port or says plaintext.
func TestParseGRPCTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    GRPCTarget
		wantURL string
	}{
		{"127.0.0.1:50051", GRPCTarget{Host: "127.0.0.1", Port: "50051"}, "http://127.0.0.1:50051"},
		{"localhost:50051", GRPCTarget{Host: "localhost", Port: "50051"}, "http://localhost:50051"},
		{"[::1]:50051", GRPCTarget{Host: "::1", Port: "50051"}, "http://[::1]:50051"},
		{"agent.example:443", GRPCTarget{Host: "agent.example", Port: "443", TLS: true}, "https://agent.example:443"},
		{"dns:///Agent.Example:8443", GRPCTarget{Host: "agent.example", Port: "8443", TLS: true}, "https://agent.example:8443"},
		{"dns:agent.example:8443", GRPCTarget{Host: "agent.example", Port: "8443", TLS: true}, "https://agent.example:8443"},
		{"grpcs://agent.example", GRPCTarget{Host: "agent.example", Port: "443", TLS: true}, "https://agent.example:443"},
		{"grpcs://127.0.0.1:9443", GRPCTarget{Host: "127.0.0.1", Port: "9443", TLS: true}, "https://127.0.0.1:9443"},
		{"https://agent.example:8443/", GRPCTarget{Host: "agent.example", Port: "8443", TLS: true}, "https://agent.example:8443"},
		{"grpc://127.0.0.1:50051", GRPCTarget{Host: "127.0.0.1", Port: "50051"}, "http://127.0.0.1:50051"},
		{"http://agent.example:50051", GRPCTarget{Host: "agent.example", Port: "50051"}, "http://agent.example:50051"},
	}
	for _, tt := range tests {
		got, err := ParseGRPCTarget(tt.in)
		if err != nil || got != tt.want || got.URL() != tt.wantURL {
			t.Errorf("ParseGRPCTarget(%q) = %+v (%s), %v; want %+v (%s)", tt.in, got, got.URL(), err, tt.want, tt.wantURL)
		}
	}
	for _, bad := range []string{"", "agent.example", "agent.example:0", "agent.example:http", "https://agent.example/a2a/grpc",
		"grpcs://user:pw@agent.example", "https://agent.example?x=1", "dns://8.8.8.8/agent.example:443", "unix:///tmp/sock", "ftp://agent.example:21"} {
		if got, err := ParseGRPCTarget(bad); err == nil {
			t.Errorf("ParseGRPCTarget(%q) = %+v, want an error", bad, got)
		}
	}
}

// A card that offers only gRPC gets its gRPC interface, checked by the
// guard in its URL form; the interface keeps the url as written.
func TestSelectGRPCOnlyCard(t *testing.T) {
	card := &a2a.AgentCard{SupportedInterfaces: []*a2a.AgentInterface{
		{URL: "grpcs://agent.example:8443", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
	}}
	var checked []string
	iface, err := SelectInterface(card, func(u string) error {
		checked = append(checked, u)
		return (&Guard{}).CheckInterface(u, "https://agent.example:8443")
	})
	want := contracts.Interface{URL: "grpcs://agent.example:8443", Binding: "GRPC", Version: "1.0"}
	if err != nil || iface != want {
		t.Fatalf("SelectInterface() = %+v, %v; want %+v", iface, err, want)
	}
	if len(checked) != 1 || checked[0] != "https://agent.example:8443" {
		t.Errorf("the guard checked %v, want [https://agent.example:8443]", checked)
	}
	if o, err := InterfaceOrigin(iface); err != nil || o != "https://agent.example:8443" {
		t.Errorf("InterfaceOrigin() = %q, %v", o, err)
	}

	// gRPC comes after the HTTP bindings.
	card.SupportedInterfaces = append(card.SupportedInterfaces, &a2a.AgentInterface{URL: "https://agent.example/rest", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"})
	if iface, err := SelectInterface(card, nil); err != nil || iface.Binding != "HTTP+JSON" {
		t.Errorf("SelectInterface(gRPC and HTTP+JSON) = %+v, %v; want HTTP+JSON", iface, err)
	}

	// Plaintext gRPC to another host is what plain http would be: refused.
	card.SupportedInterfaces = []*a2a.AgentInterface{{URL: "grpc://agent.example:50051", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"}}
	_, err = SelectInterface(card, func(u string) error { return (&Guard{}).CheckInterface(u, "http://agent.example:50051") })
	if err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("plaintext gRPC to a remote host: error = %v, want the guard's refusal", err)
	}
}

// The gRPC dialer applies the guard: a name that resolves to a private
// address is refused before any connection; loopback is allowed.
func TestGuardDialerRefusesPrivateAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := (&Guard{}).Dialer("https://agent.example")
	c, err := dial(ctx, ln.Addr().String())
	if err != nil {
		t.Fatalf("dial(loopback) error = %v", err)
	}
	c.Close()
	for _, addr := range []string{"10.1.2.3:443", "192.168.0.1:443", "169.254.169.254:80", "[fd00::1]:443"} {
		if _, err := dial(ctx, addr); !errors.Is(err, ErrGuard) {
			t.Errorf("dial(%s) error = %v, want ErrGuard", addr, err)
		}
	}
}
