package mcp

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkclient "go.temporal.io/sdk/client"
)

const (
	aliceToken = "alice-token-0123456789"
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
)

// lazyServer is a Server whose Temporal client dials nothing that listens.
func lazyServer(t *testing.T, o Options) *Server {
	t.Helper()
	c, err := sdkclient.NewLazyClient(sdkclient.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	o.Client = c
	if o.Templates == nil {
		o.Templates = exampleTemplates(t)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// aliceTokens is a tokens file holding alice's token.
func aliceTokens(t *testing.T) (*Tokens, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens": [{"actor": "alice", "token": "`+aliceToken+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := NewTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tokens, path
}

// reply is one HTTP answer of the MCP endpoint.
type reply struct {
	status  int
	header  http.Header
	body    string
	session string
}

// rpcError is the JSON-RPC error of the reply's message (SSE or JSON), nil
// for none.
func (r reply) rpcError(t *testing.T) *jsonrpc.Error {
	t.Helper()
	data := r.body
	if strings.Contains(data, "data: ") {
		sc := bufio.NewScanner(strings.NewReader(data))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = d
			}
		}
	}
	var m struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("reply %d %q: not a JSON-RPC message: %v", r.status, r.body, err)
	}
	return m.Error
}

type request struct {
	method, url, token, session, origin, body string
}

func do(t *testing.T, q request) reply {
	t.Helper()
	if q.method == "" {
		q.method = http.MethodPost
	}
	req, err := http.NewRequest(q.method, q.url, strings.NewReader(q.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if q.token != "" {
		req.Header.Set("Authorization", "Bearer "+q.token)
	}
	if q.session != "" {
		req.Header.Set("Mcp-Session-Id", q.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if q.origin != "" {
		req.Header.Set("Origin", q.origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), session: resp.Header.Get("Mcp-Session-Id")}
}

// metadata GETs a protected resource metadata document.
func metadata(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode, m
}

// TestHTTPDiscoveryTokensMode: with a tokens file only, the RFC 9728
// metadata is served at the path-inserted URL of /mcp and at the root,
// names the resource and no authorization server; a 401 names it in
// WWW-Authenticate (resource_metadata), with error="invalid_token" when
// a token was given (RFC 6750 §3), without when none was.
func TestHTTPDiscoveryTokensMode(t *testing.T) {
	tokens, _ := aliceTokens(t)
	hs := serveHTTP(t, lazyServer(t, Options{}), HTTPOptions{Verify: Verifier(tokens, nil)})
	resource := hs.URL + "/mcp"
	metaURL := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	for _, u := range []string{metaURL, hs.URL + "/.well-known/oauth-protected-resource"} {
		status, m := metadata(t, u)
		if status != http.StatusOK || m["resource"] != resource {
			t.Fatalf("GET %s: %d %v, want 200 naming resource %s", u, status, m, resource)
		}
		if _, ok := m["authorization_servers"]; ok {
			t.Errorf("GET %s: %v names an authorization server; tokens come from the operator", u, m)
		}
		if _, ok := m["scopes_supported"]; ok {
			t.Errorf("GET %s: %v publishes scopes; none is required", u, m)
		}
	}
	if got := MetadataURL(resource); got != metaURL {
		t.Errorf("MetadataURL(%s) = %s, want %s", resource, got, metaURL)
	}

	r := do(t, request{url: resource, body: initialize})
	if want := `Bearer resource_metadata="` + metaURL + `"`; r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != want {
		t.Errorf("no token: %d, WWW-Authenticate %q; want 401 with %q", r.status, r.header.Get("WWW-Authenticate"), want)
	}
	r = do(t, request{url: resource, token: "mallory-token-0123456789", body: initialize})
	if want := `Bearer error="invalid_token", resource_metadata="` + metaURL + `"`; r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != want {
		t.Errorf("unknown token: %d, WWW-Authenticate %q; want 401 with %q", r.status, r.header.Get("WWW-Authenticate"), want)
	}
	if r := do(t, request{url: resource, token: aliceToken, body: initialize}); r.status != http.StatusOK || r.session == "" {
		t.Errorf("alice's token: %d %s, want 200 and a session", r.status, r.body)
	}
}

// testIssuer is an OAuth issuer served over HTTP: a discovery document, a
// JWKS (whose fetches it counts) and RSA keys that sign access tokens.
type testIssuer struct {
	URL     string
	fetches atomic.Int64

	mu       sync.Mutex
	keys     map[string]*rsa.PrivateKey // by kid
	set      jwk.Set
	stranger *rsa.PrivateKey // signs under kids never published
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	iss := &testIssuer{keys: map[string]*rsa.PrivateKey{}, set: jwk.NewSet()}
	mux := http.NewServeMux()
	srv := serveOn(t, mux)
	iss.URL = srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		iss.fetches.Add(1)
		iss.mu.Lock()
		defer iss.mu.Unlock()
		_ = json.NewEncoder(w).Encode(iss.set)
	})
	iss.addKey(t, "k1")
	return iss
}

// addKey publishes a new key under kid.
func (iss *testIssuer) addKey(t *testing.T, kid string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.FromRaw(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, kid)
	_ = pub.Set(jwk.AlgorithmKey, jwa.RS256)
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys[kid] = key
	_ = iss.set.AddKey(pub)
}

// token is a JWT of the issuer for sub and aud, signed with the key of
// kid (one the issuer never published when it holds no such key).
func (iss *testIssuer) token(t *testing.T, sub, aud, kid string) string {
	t.Helper()
	tok, err := jwt.NewBuilder().Issuer(iss.URL).Subject(sub).Audience([]string{aud}).
		IssuedAt(time.Now().Add(-time.Minute)).Expiration(time.Now().Add(time.Hour)).Build()
	if err != nil {
		t.Fatal(err)
	}
	iss.mu.Lock()
	key := iss.keys[kid]
	if key == nil {
		if iss.stranger == nil {
			if iss.stranger, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
				t.Fatal(err)
			}
		}
		key = iss.stranger
	}
	iss.mu.Unlock()
	jk, _ := jwk.FromRaw(key)
	_ = jk.Set(jwk.KeyIDKey, kid)
	b, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256, jk))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHTTPDiscoveryOAuthMode: with --issuer the metadata names the
// issuer; a token whose aud is the resource's URL (what a client asking
// the issuer for this resource gets, RFC 8707) passes as one whose aud is
// --audience does; one for another audience is 401 with
// error="invalid_token" and resource_metadata.
func TestHTTPDiscoveryOAuthMode(t *testing.T) {
	iss := newTestIssuer(t)
	ln := listen(t)
	resource := "http://" + ln.Addr().String() + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := NewOIDC(ctx, iss.URL, "delegate-mcp", resource)
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTPOn(t, ln, lazyServer(t, Options{}), HTTPOptions{ResourceURL: resource, Verify: Verifier(nil, o), Issuer: iss.URL})
	metaURL := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	for _, u := range []string{metaURL, hs.URL + "/.well-known/oauth-protected-resource"} {
		status, m := metadata(t, u)
		as, _ := m["authorization_servers"].([]any)
		if status != http.StatusOK || m["resource"] != resource || len(as) != 1 || as[0] != iss.URL {
			t.Fatalf("GET %s: %d %v, want 200 naming %s and the issuer %s", u, status, m, resource, iss.URL)
		}
	}
	for _, aud := range []string{resource, resource + "/", "delegate-mcp"} {
		if r := do(t, request{url: resource, token: iss.token(t, "carol", aud, "k1"), body: initialize}); r.status != http.StatusOK || r.session == "" {
			t.Errorf("a token for aud %q: %d %s, want 200 and a session", aud, r.status, r.body)
		}
	}
	for _, aud := range []string{"someone-else", hs.URL + "/other"} {
		r := do(t, request{url: resource, token: iss.token(t, "carol", aud, "k1"), body: initialize})
		if want := `Bearer error="invalid_token", resource_metadata="` + metaURL + `"`; r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != want {
			t.Errorf("a token for aud %q: %d, WWW-Authenticate %q; want 401 with %q", aud, r.status, r.header.Get("WWW-Authenticate"), want)
		}
	}
}

// TestHTTPOriginValidated: a request whose Origin is not allowed is 403
// and opens no session (MCP 2025-11-25, Streamable HTTP), even with a good
// token; no Origin (a client that is not a browser), the resource's own
// origin, a loopback origin on a loopback server and one of
// --allowed-origins are served.
func TestHTTPOriginValidated(t *testing.T) {
	tokens, _ := aliceTokens(t)
	s := lazyServer(t, Options{})
	hs := serveHTTP(t, s, HTTPOptions{Verify: Verifier(tokens, nil), AllowedOrigins: []string{"https://App.Example:443"}})
	for _, origin := range []string{"http://evil.example", "null", "http://evil.example, " + hs.URL, hs.URL + "/path", "https://app.example:8443", "file://"} {
		r := do(t, request{url: hs.URL + "/mcp", token: aliceToken, origin: origin, body: initialize})
		if r.status != http.StatusForbidden || r.session != "" {
			t.Errorf("Origin %q: %d, session %q; want 403 and none", origin, r.status, r.session)
			continue
		}
		if e := r.rpcError(t); e == nil || e.Code != jsonrpc.CodeInvalidRequest {
			t.Errorf("Origin %q: body %s, want a JSON-RPC error %d", origin, r.body, jsonrpc.CodeInvalidRequest)
		}
	}
	if r := do(t, request{url: hs.URL + "/mcp", origin: "http://evil.example", body: initialize}); r.status != http.StatusForbidden {
		t.Errorf("Origin http://evil.example without a token: %d, want 403 first", r.status)
	}
	for _, origin := range []string{"", hs.URL, "http://localhost:6274", "http://127.0.0.1:1234", "http://[::1]:80", "https://app.example"} {
		if r := do(t, request{url: hs.URL + "/mcp", token: aliceToken, origin: origin, body: initialize}); r.status != http.StatusOK || r.session == "" {
			t.Errorf("Origin %q: %d %s, want 200 and a session", origin, r.status, r.body)
		}
	}

	// Not bound to loopback: a loopback origin is one like any other.
	ln := listen(t)
	notLoopback, err := s.Mux(HTTPOptions{ResourceURL: "https://mcp.example.com/mcp", Verify: Verifier(tokens, nil)})
	if err != nil {
		t.Fatal(err)
	}
	hs2 := serveOnListener(t, ln, notLoopback)
	for origin, want := range map[string]int{"http://localhost:6274": http.StatusForbidden, "https://mcp.example.com": http.StatusOK} {
		if r := do(t, request{url: hs2.URL + "/mcp", token: aliceToken, origin: origin, body: initialize}); r.status != want {
			t.Errorf("LoopbackOrigins false, Origin %q: %d, want %d", origin, r.status, want)
		}
	}
	if _, err := ParseOrigins([]string{"https://app.example/path"}); err == nil || !strings.Contains(err.Error(), "no path") {
		t.Errorf("ParseOrigins(with a path) error = %v, want a refusal", err)
	}
}

// TestJWKSFetchesBounded: a badly signed JWT never makes the server fetch
// the issuer's keys again when it names a key it holds; JWTs naming
// unknown keys make it fetch them at most once per interval, however many
// arrive at once; a key the issuer adds is picked up by the first token
// that names it once the interval passed.
func TestJWKSFetchesBounded(t *testing.T) {
	iss := newTestIssuer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := NewOIDC(ctx, iss.URL, "delegate-mcp")
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTP(t, lazyServer(t, Options{}), HTTPOptions{Verify: Verifier(nil, o)})
	post := func(tok string) int {
		return do(t, request{url: hs.URL + "/mcp", token: tok, body: initialize}).status
	}
	if st := post(iss.token(t, "carol", "delegate-mcp", "k1")); st != http.StatusOK {
		t.Fatalf("the issuer's own token: %d", st)
	}
	base := iss.fetches.Load()

	// Signed with another key under the issuer's kid.
	forged := iss.token(t, "carol", "delegate-mcp", "k1")
	parts := strings.Split(forged, ".")
	other := strings.Split(iss.token(t, "carol", "delegate-mcp", "never-published"), ".")
	forged = parts[0] + "." + parts[1] + "." + other[2]
	for range 50 {
		if st := post(forged); st != http.StatusUnauthorized {
			t.Fatalf("a forged signature: %d, want 401", st)
		}
	}
	if n := iss.fetches.Load() - base; n != 0 {
		t.Errorf("50 tokens badly signed under a known kid: %d JWKS fetches, want 0", n)
	}

	for i := range 50 {
		if st := post(iss.token(t, "carol", "delegate-mcp", fmt.Sprintf("unknown-%d", i))); st != http.StatusUnauthorized {
			t.Fatalf("an unknown kid: %d, want 401", st)
		}
	}
	if n := iss.fetches.Load() - base; n > 1 {
		t.Errorf("50 tokens of unknown kids: %d JWKS fetches, want at most 1 in %s", n, JWKSRefreshInterval)
	}
	unknown := iss.token(t, "carol", "delegate-mcp", "unknown-parallel")
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(initialize))
			req.Header.Set("Authorization", "Bearer "+unknown)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if n := iss.fetches.Load() - base; n > 1 {
		t.Errorf("then 200 at once: %d JWKS fetches in all, want at most 1 in %s", n, JWKSRefreshInterval)
	}

	// The issuer rotates: once the interval passed, the first token of the
	// new key fetches the keys (once) and passes.
	iss.addKey(t, "k2")
	o.keys.mu.Lock()
	o.keys.tried = o.keys.tried.Add(-JWKSRefreshInterval)
	o.keys.mu.Unlock()
	before := iss.fetches.Load()
	for range 3 {
		if st := post(iss.token(t, "carol", "delegate-mcp", "k2")); st != http.StatusOK {
			t.Fatalf("a token of the issuer's new key: %d, want 200", st)
		}
	}
	if n := iss.fetches.Load() - before; n != 1 {
		t.Errorf("the new key: %d JWKS fetches, want 1", n)
	}
}

// TestTokensRotationSameSizeAndTime: a tokens file rewritten with a token
// of the same length, its size and modification time kept (cp -p, rsync,
// touch -r), is noticed by its content: the old token is refused within
// TokensRecheck, the new one accepted.
func TestTokensRotationSameSizeAndTime(t *testing.T) {
	tokens, path := aliceTokens(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTP(t, lazyServer(t, Options{}), HTTPOptions{Verify: Verifier(tokens, nil)})
	if r := do(t, request{url: hs.URL + "/mcp", token: aliceToken, body: initialize}); r.status != http.StatusOK {
		t.Fatalf("alice's token: %d", r.status)
	}
	rotated := "alice-token-9876543210"
	doc := `{"tokens": [{"actor": "alice", "token": "` + rotated + `"}]}`
	if int64(len(doc)) != fi.Size() {
		t.Fatalf("the rotated file is %d bytes, want %d", len(doc), fi.Size())
	}
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(TokensRecheck + 2*time.Second)
	for {
		r := do(t, request{url: hs.URL + "/mcp", token: aliceToken, body: initialize})
		if r.status == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated-out token after %s: %d, want 401", TokensRecheck+2*time.Second, r.status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := do(t, request{url: hs.URL + "/mcp", token: rotated, body: initialize}); r.status != http.StatusOK {
		t.Errorf("the new token: %d, want 200", r.status)
	}
}

// TestHTTPSessionOpeningNotCharged: opening a session (initialize,
// notifications/initialized, ping, tools/list) is not a tool call: at a
// burst of 2, both tool calls after it pass and the third is limited.
func TestHTTPSessionOpeningNotCharged(t *testing.T) {
	tokens, _ := aliceTokens(t)
	hs := serveHTTP(t, lazyServer(t, Options{Rate: 0.001, Burst: 2}), HTTPOptions{Verify: Verifier(tokens, nil)})
	url := hs.URL + "/mcp"
	r := do(t, request{url: url, token: aliceToken, body: initialize})
	if r.status != http.StatusOK || r.session == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	sid := r.session
	for _, m := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`} {
		if r := do(t, request{url: url, token: aliceToken, session: sid, body: m}); r.status/100 != 2 {
			t.Fatalf("%s: %d %s", m, r.status, r.body)
		}
	}
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delegation_list","arguments":{"nope":1}}}`
	for i := range 2 {
		if r := do(t, request{url: url, token: aliceToken, session: sid, body: call}); !strings.Contains(r.body, "unknown") || strings.Contains(r.body, "rate limit") {
			t.Fatalf("tool call %d after opening the session: %d %s, want the arguments refused, not the rate", i+1, r.status, r.body)
		}
	}
	if r := do(t, request{url: url, token: aliceToken, session: sid, body: call}); !strings.Contains(r.body, "rate limit") {
		t.Fatalf("third tool call: %s, want the rate limit", r.body)
	}
}

// TestHTTPSessionsBounded: an actor holds at most MaxSessionsPerActor
// sessions: an initialize beyond is 429 with Retry-After and a JSON-RPC
// error of code CodeLimited; closing one (DELETE) makes room.
func TestHTTPSessionsBounded(t *testing.T) {
	tokens, _ := aliceTokens(t)
	hs := serveHTTP(t, lazyServer(t, Options{MaxSessionsPerActor: 2}), HTTPOptions{Verify: Verifier(tokens, nil)})
	url := hs.URL + "/mcp"
	var sessions []string
	for range 2 {
		r := do(t, request{url: url, token: aliceToken, body: initialize})
		if r.status != http.StatusOK || r.session == "" {
			t.Fatalf("initialize: %d %s", r.status, r.body)
		}
		sessions = append(sessions, r.session)
	}
	r := do(t, request{url: url, token: aliceToken, body: initialize})
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("a third session: %d (Retry-After %q), want 429 with Retry-After", r.status, r.header.Get("Retry-After"))
	}
	if e := r.rpcError(t); e == nil || e.Code != CodeLimited || !strings.Contains(e.Message, "too many sessions") {
		t.Fatalf("a third session: body %s, want a JSON-RPC error %d", r.body, CodeLimited)
	}
	// An initialize the bound would not see as one: in a batch, under a
	// key given twice, beside _meta spelt in another case, after a
	// 2026-07-28 header.
	for _, body := range []string{
		"[" + initialize + "]",
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"ping","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
	} {
		if r := do(t, request{url: url, token: aliceToken, body: body}); r.status == http.StatusOK || r.session != "" {
			t.Errorf("%s: %d, session %q; want refused", body, r.status, r.session)
		}
	}
	if r := do(t, request{method: http.MethodDelete, url: url, token: aliceToken, session: sessions[0]}); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := do(t, request{url: url, token: aliceToken, body: initialize})
		if r.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a DELETE: %d %s, want a new session", r.status, r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHTTPRefusalsHaveDefinedCodes: no refusal goes out as a JSON-RPC
// error of code 0: a request without a session that is not initialize is
// 400 with Invalid Request (and its id), a second initialize is Invalid
// Request, a resources/read over the rate is CodeLimited, one that
// Temporal fails is Internal error.
func TestHTTPRefusalsHaveDefinedCodes(t *testing.T) {
	tokens, _ := aliceTokens(t)
	hs := serveHTTP(t, lazyServer(t, Options{Rate: 0.001, Burst: 1}), HTTPOptions{Verify: Verifier(tokens, nil)})
	url := hs.URL + "/mcp"
	r := do(t, request{url: url, token: aliceToken, body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`})
	if e := r.rpcError(t); r.status != http.StatusBadRequest || e == nil || e.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(r.body, `"id":7`) {
		t.Errorf("tools/list without a session: %d %s, want 400 with Invalid Request for id 7", r.status, r.body)
	}
	r = do(t, request{url: url, token: aliceToken, body: initialize})
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	sid := r.session
	do(t, request{url: url, token: aliceToken, session: sid, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
	for _, c := range []struct {
		body string
		code int64
	}{
		{initialize, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"delegation://mcp.x.1"}}`, jsonrpc.CodeInternalError}, // Temporal unreachable
		{`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"delegation://mcp.x.1"}}`, CodeLimited},
		{`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, CodeLimited},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"delegation://mcp.x.1"}}`, CodeLimited},
	} {
		r := do(t, request{url: url, token: aliceToken, session: sid, body: c.body})
		if e := r.rpcError(t); e == nil || e.Code != c.code {
			t.Errorf("%s: %d %s, want a JSON-RPC error %d", c.body, r.status, r.body, c.code)
		}
	}
}
