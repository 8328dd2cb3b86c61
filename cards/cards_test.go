package cards

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2aproject/a2a-go/v2/a2a"
)

const card10 = `{
  "name": "Claims Agent", "description": "d", "version": "1.0.0",
  "supportedInterfaces": [
    {"url": "https://agent.example/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    {"url": "https://agent.example/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "https://agent.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
  ],
  "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["application/json"],
  "skills": [{"id": "open-claim", "name": "Open", "description": "d", "tags": []}]
}`

const card03 = `{
  "protocolVersion": "0.3.0",
  "name": "Legacy Agent", "description": "d", "version": "2.1",
  "url": "https://legacy.example/a2a",
  "preferredTransport": "JSONRPC",
  "additionalInterfaces": [{"url": "https://legacy.example/rest", "transport": "HTTP+JSON"}],
  "capabilities": {"streaming": false},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "open-claim", "name": "Open", "description": "d", "tags": []}]
}`

func TestParse10(t *testing.T) {
	c, err := Parse([]byte(card10))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if c.Parsed.Name != "Claims Agent" || !c.Parsed.Capabilities.Streaming {
		t.Errorf("parsed %+v", c.Parsed)
	}
	iface, err := SelectInterface(c.Parsed, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := contracts.Interface{URL: "https://agent.example/a2a/jsonrpc", Binding: "JSONRPC", Version: "1.0"}
	if iface != want {
		t.Errorf("SelectInterface() = %+v, want %+v (JSONRPC preferred over HTTP+JSON and GRPC)", iface, want)
	}
}

func TestParse03(t *testing.T) {
	c, err := Parse([]byte(card03))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	iface, err := SelectInterface(c.Parsed, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := contracts.Interface{URL: "https://legacy.example/a2a", Binding: "JSONRPC", Version: "0.3"}
	if iface != want {
		t.Errorf("SelectInterface() = %+v, want %+v", iface, want)
	}
	if _, ok := FindSkill(c.Parsed, "open-claim"); !ok {
		t.Errorf("skill open-claim not found")
	}
}

func TestParse03DefaultTransport(t *testing.T) {
	// A2A 0.3: preferredTransport defaults to JSONRPC.
	body := strings.Replace(card03, `"preferredTransport": "JSONRPC",`, "", 1)
	body = strings.Replace(body, `"additionalInterfaces": [{"url": "https://legacy.example/rest", "transport": "HTTP+JSON"}],`, "", 1)
	c, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	iface, err := SelectInterface(c.Parsed, nil)
	if err != nil || iface.Binding != "JSONRPC" || iface.Version != "0.3" {
		t.Errorf("SelectInterface() = %+v, %v", iface, err)
	}
}

func TestSelectPrefersNewestVersion(t *testing.T) {
	card := &a2a.AgentCard{SupportedInterfaces: []*a2a.AgentInterface{
		{URL: "https://a/old", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		{URL: "https://a/new", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"},
	}}
	iface, err := SelectInterface(card, nil)
	if err != nil || iface.URL != "https://a/new" {
		t.Errorf("SelectInterface() = %+v, %v; want the 1.0 interface", iface, err)
	}
}

func TestSelectNoSupportedInterface(t *testing.T) {
	card := &a2a.AgentCard{SupportedInterfaces: []*a2a.AgentInterface{
		// A gRPC url with a path: gRPC methods are called at the root.
		{URL: "https://a/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
		{URL: "a", ProtocolBinding: "GRPC", ProtocolVersion: "0.3"},
		{URL: "https://a/v2", ProtocolBinding: "JSONRPC", ProtocolVersion: "2.0"},
		{URL: "ftp://a/x", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
	}}
	_, err := SelectInterface(card, nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != "no_interface" {
		t.Errorf("SelectInterface() error = %v, want no_interface", err)
	}
}

func TestDigestIgnoresSignaturesAndFormatting(t *testing.T) {
	a, err := Digest([]byte(`{"b": 1, "a": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest([]byte(`{"a":"x","b":1.0,"signatures":[{"protected":"p","signature":"s"}]}`))
	if a != b {
		t.Errorf("digests differ: %s vs %s", a, b)
	}
	c, _ := Digest([]byte(`{"a":"y","b":1}`))
	if a == c {
		t.Errorf("different cards give the same digest")
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != 71 {
		t.Errorf("digest %q is not sha256:<64 hex>", a)
	}
}

func TestParseMalformed(t *testing.T) {
	for _, body := range []string{`[]`, `{"name": 5}`, `{"description": "no name"}`, `not json`} {
		_, err := Parse([]byte(body))
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != "malformed" {
			t.Errorf("Parse(%s) error = %v, want malformed", body, err)
		}
	}
}

func TestFetch(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		switch r.URL.Path {
		case WellKnownPath:
			_, _ = w.Write([]byte(card10))
		case "/big":
			_, _ = w.Write([]byte(`{"name":"` + strings.Repeat("x", 2<<20) + `"}`))
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/redirect":
			http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	f := &Fetcher{}

	c, err := f.Fetch(ctx, srv.URL) // no path: the well-known path
	if err != nil {
		t.Fatalf("Fetch() error = %v", err)
	}
	if c.URL != srv.URL+WellKnownPath || c.Parsed.Name != "Claims Agent" || c.Digest == "" {
		t.Errorf("Fetch() = %+v", c)
	}

	tests := []struct {
		path      string
		kind      string
		transient bool
	}{
		{"/big", "too_large", false},
		{"/down", "http_status_transient", true},
		{"/missing", "http_status", false},
		{"/redirect", "redirect_refused", false},
	}
	for _, tt := range tests {
		_, err := f.Fetch(ctx, srv.URL+tt.path)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != tt.kind {
			t.Errorf("Fetch(%s) error = %v, want kind %s", tt.path, err, tt.kind)
			continue
		}
		if ce.Transient() != tt.transient {
			t.Errorf("Fetch(%s) Transient() = %v, want %v", tt.path, ce.Transient(), tt.transient)
		}
		if tt.path == "/redirect" && !strings.Contains(err.Error(), "another origin") {
			t.Errorf("redirect error = %v, want a refusal of the other origin", err)
		}
	}
	if _, err := f.Fetch(ctx, "file:///etc/passwd"); err == nil {
		t.Errorf("Fetch(file://) error = nil")
	}
}

// A worker handed 10,000 card URLs keeps at most DefaultCacheEntries cards
// (the least recently used go first), and one guarded client per origin: it
// no longer grows with every URL it has seen. A card used again is still
// served from the cache.
func TestCacheIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		io.WriteString(w, card10)
	}))
	defer srv.Close()
	f := &Fetcher{}
	ctx := context.Background()
	hot := srv.URL + "/hot/.well-known/agent-card.json"
	for i := 0; i < 10000; i++ {
		if _, err := f.Fetch(ctx, fmt.Sprintf("%s/agents/%d/.well-known/agent-card.json", srv.URL, i)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if _, err := f.Fetch(ctx, hot); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, clients := f.CacheLen()
	if entries > DefaultCacheEntries || clients != 1 {
		t.Errorf("cache holds %d cards and %d clients after 10,000 card URLs, want at most %d and 1", entries, clients, DefaultCacheEntries)
	}
	before := f.Requests.Load()
	c, err := f.Fetch(ctx, hot)
	if err != nil || !c.FromCache || f.Requests.Load() != before {
		t.Errorf("the card used every 100 fetches was not kept: from cache %v, %v", c != nil && c.FromCache, err)
	}
	// By bytes too: 64 KiB of cache holds only a few cards.
	small := &Fetcher{MaxCacheBytes: 64 << 10}
	for i := 0; i < 200; i++ {
		if _, err := small.Fetch(ctx, fmt.Sprintf("%s/agents/%d/.well-known/agent-card.json", srv.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := small.CacheLen(); n*2*len(card10) > 64<<10+2*len(card10) {
		t.Errorf("a 64 KiB cache holds %d cards of %d bytes", n, len(card10))
	}
}
