package mcp

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/internal/testutil"
)

// TestHTTPHostileRequests: over Streamable HTTP, a body over the bound is
// 413; an oversize or unknown token is 401 whose body quotes no token;
// bob's token on alice's session is refused; a token removed from the file
// is refused on the session's next request; the log names no token.
func TestHTTPHostileRequests(t *testing.T) {
	c, err := sdkclient.NewLazyClient(sdkclient.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var logs testutil.LockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	aliceTok, bobTok := "alice-token-0123456789", "bob-token-0123456789ab"
	path := filepath.Join(t.TempDir(), "tokens.json")
	write := func(doc string) {
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tokens": [{"actor": "alice", "token": "` + aliceTok + `"}, {"actor": "bob", "token": "` + bobTok + `"}]}`)
	tokens, err := NewTokens(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Client: c, Templates: exampleTemplates(t), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTP(t, s, HTTPOptions{Verify: Verifier(tokens, nil)})

	post := func(token, session, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return resp, string(b)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delegation_list","arguments":{"nope":1}}}`

	resp, _ := post(aliceTok, "", initialize)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, session)
	}
	post(aliceTok, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp, body := post(aliceTok, session, list); resp.StatusCode != http.StatusOK || !strings.Contains(body, `unknown`) {
		t.Fatalf("alice's call: %d %s", resp.StatusCode, body)
	}

	big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"delegation_list","arguments":{"state":"` + strings.Repeat("x", 2<<20) + `"}}}`
	if resp, _ := post(aliceTok, session, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB body: status %d, want 413", resp.StatusCode)
	}
	huge := strings.Repeat("t", 20<<10)
	for name, tok := range map[string]string{"oversize": huge, "unknown": "mallory-token-0123456789"} {
		resp, body := post(tok, session, list)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, tok) {
			t.Errorf("%s token: status %d body %q, want 401 without the token", name, resp.StatusCode, body)
		}
	}
	if resp, body := post(bobTok, session, list); resp.StatusCode == http.StatusOK {
		t.Errorf("bob's token on alice's session: status %d %s, want refused", resp.StatusCode, body)
	}

	write(`{"tokens": [{"actor": "bob", "token": "` + bobTok + `"}]}`)
	if resp, body := post(aliceTok, session, list); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice's revoked token mid-session: status %d %s, want 401", resp.StatusCode, body)
	}
	for _, tok := range []string{aliceTok, bobTok, "mallory-token-0123456789"} {
		if strings.Contains(logs.String(), tok) {
			t.Errorf("the log holds token %q:\n%s", tok, logs.String())
		}
	}
}

// listen is a listener on 127.0.0.1.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serveOnListener serves h over real HTTP on ln.
func serveOnListener(t *testing.T, ln net.Listener, h http.Handler) *httptest.Server {
	t.Helper()
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	hs.Start()
	t.Cleanup(hs.Close)
	return hs
}

// serveOn serves h over real HTTP on 127.0.0.1.
func serveOn(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	return serveOnListener(t, listen(t), h)
}

// serveHTTP serves s.Mux(o) on 127.0.0.1 (real HTTP), o.ResourceURL
// being the listener's /mcp when not given, and loopback origins allowed.
func serveHTTP(t *testing.T, s *Server, o HTTPOptions) *httptest.Server {
	t.Helper()
	return serveHTTPOn(t, listen(t), s, o)
}

// serveHTTPOn is serveHTTP on ln.
func serveHTTPOn(t *testing.T, ln net.Listener, s *Server, o HTTPOptions) *httptest.Server {
	t.Helper()
	if o.ResourceURL == "" {
		o.ResourceURL = "http://" + ln.Addr().String() + "/mcp"
	}
	o.LoopbackOrigins = true
	if o.MaxBody == 0 {
		o.MaxBody = 1 << 20
	}
	mux, err := s.Mux(o)
	if err != nil {
		t.Fatal(err)
	}
	return serveOnListener(t, ln, mux)
}
