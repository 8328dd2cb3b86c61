package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

const (
	testClientID     = "delegate-worker"
	testClientSecret = "cl1ent-s3cret-value"
)

// tokenEndpoint is a real OAuth 2.0 token endpoint on 127.0.0.1 (RFC 6749
// §4.4.2, §5.1): client authentication by HTTP Basic, grant_type
// client_credentials, one new token per request.
type tokenEndpoint struct {
	srv      *httptest.Server
	requests atomic.Int64
	// expiresIn is written as "expires_in" unless nil.
	expiresIn *int
	// respond, when set, answers instead.
	respond func(w http.ResponseWriter, r *http.Request)

	mu     sync.Mutex
	minted []string
	scopes []string
	aud    []string
}

func newTokenEndpoint(t *testing.T, expiresIn *int) *tokenEndpoint {
	te := &tokenEndpoint{expiresIn: expiresIn}
	te.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := te.requests.Add(1)
		if te.respond != nil {
			te.respond(w, r)
			return
		}
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != testClientID || secret != testClientSecret || r.PostForm.Get("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		tok := fmt.Sprintf("minted-token-%d-%d", n, time.Now().UnixNano())
		te.mu.Lock()
		te.minted = append(te.minted, tok)
		te.scopes = append(te.scopes, r.PostForm.Get("scope"))
		te.aud = append(te.aud, r.PostForm.Get("audience"))
		te.mu.Unlock()
		body := map[string]any{"access_token": tok, "token_type": "Bearer"}
		if te.expiresIn != nil {
			body["expires_in"] = *te.expiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(te.srv.Close)
	return te
}

func (te *tokenEndpoint) tokens() []string {
	te.mu.Lock()
	defer te.mu.Unlock()
	return append([]string(nil), te.minted...)
}

// protectedAgent is the claims agent behind a check of each request's
// credential; accept decides (nil: any minted token of te).
type protectedAgent struct {
	srv      *httptest.Server
	requests atomic.Int64
	refused  atomic.Int64
	mu       sync.Mutex
	seen     []string
}

func newProtectedAgent(t *testing.T, accept func(r *http.Request) bool) *protectedAgent {
	pa := &protectedAgent{}
	pa.srv = httptest.NewUnstartedServer(nil)
	agent := claimsagent.New(claimsagent.Config{BaseURL: "http://" + pa.srv.Listener.Addr().String()})
	pa.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pa.requests.Add(1)
		pa.mu.Lock()
		pa.seen = append(pa.seen, r.Header.Get("Authorization"))
		pa.mu.Unlock()
		if !accept(r) {
			pa.refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		agent.ServeHTTP(w, r)
	})
	pa.srv.Start()
	t.Cleanup(pa.srv.Close)
	return pa
}

func (pa *protectedAgent) authorizations() []string {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	return append([]string(nil), pa.seen...)
}

func bearerOf(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func oauth2Secret(tokenURL string) Secret {
	return Secret{OAuth2: &OAuth2{TokenURL: tokenURL, ClientCredentials: ClientCredentials{
		ClientID: testClientID, ClientSecret: testClientSecret, Scopes: []string{"tasks.write"}, Audience: "https://agent.example"}}}
}

func dialAgent(t *testing.T, ctx context.Context, agentURL string, opts Options) *Client {
	t.Helper()
	c, err := Dial(ctx, contracts.Interface{URL: agentURL + claimsagent.JSONRPCPath, Binding: "JSONRPC", Version: "1.0"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var sends atomic.Int64

func send(ctx context.Context, c *Client) (contracts.TaskSnapshot, error) {
	return c.SendMessage(ctx, contracts.OutboundMessage{MessageID: fmt.Sprintf("m-%d", sends.Add(1)), Text: "order Z-9 lost"})
}

func category(err error) contracts.Category {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Category
	}
	return ""
}

func ptr(n int) *int { return &n }

// Tokens are cached while valid, and minted anew when they expire: a
// token valid for 1 s (under the early-expiry margin) is not reused; one
// valid for an hour is; the scopes and audience go with the request.
func TestOAuth2TokensMintedAndCached(t *testing.T) {
	for _, tc := range []struct {
		name       string
		expiresIn  *int
		wantMinted int64
	}{
		{"expires fast", ptr(1), 2},
		{"valid an hour", ptr(3600), 1},
		{"expires_in missing", nil, 1},
		{"expires_in 0", ptr(0), 1},
		{"expires_in negative", ptr(-30), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			te := newTokenEndpoint(t, tc.expiresIn)
			agent := newProtectedAgent(t, func(r *http.Request) bool {
				for _, tok := range te.tokens() {
					if bearerOf(r) == tok {
						return true
					}
				}
				return false
			})
			secret := oauth2Secret(te.srv.URL + "/token")
			secret.tokens = &tokenCaches{secret: &secret}
			for i := range 2 {
				// A Dial per call, as the activities do: the cache is the
				// store entry's.
				c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, secret))
				if _, err := send(ctx, c); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if got := te.requests.Load(); got != tc.wantMinted {
				t.Errorf("token requests = %d, want %d", got, tc.wantMinted)
			}
			auths := agent.authorizations()
			if len(auths) != 2 || (tc.wantMinted == 2) != (auths[0] != auths[1]) {
				t.Errorf("the agent saw %q; want %d distinct tokens", auths, tc.wantMinted)
			}
			te.mu.Lock()
			defer te.mu.Unlock()
			if te.scopes[0] != "tasks.write" || te.aud[0] != "https://agent.example" {
				t.Errorf("token request scope %q audience %q, want tasks.write and https://agent.example", te.scopes[0], te.aud[0])
			}
		})
	}
}

// A token without a usable expires_in is kept for a short while, not
// forever, and not re-fetched on every call.
func TestOAuth2ShortLivedWithoutExpiry(t *testing.T) {
	for _, exp := range []*int{nil, ptr(0), ptr(-5)} {
		te := newTokenEndpoint(t, exp)
		m := &minter{oauth2: oauth2Secret(te.srv.URL).OAuth2, cc: oauth2Secret(te.srv.URL).OAuth2.ClientCredentials}
		tok, err := m.Token()
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(tok.Expiry); left <= 0 || left > ShortTokenLifetime {
			t.Errorf("expires_in %v: token expires in %v, want within (0, %v]", exp, left, ShortTokenLifetime)
		}
	}
}

// An agent that refuses a token it no longer accepts (revoked early)
// gets one fresh token and the call succeeds.
func TestOAuth2RefreshAfter401(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := newTokenEndpoint(t, ptr(3600))
	agent := newProtectedAgent(t, func(r *http.Request) bool {
		toks := te.tokens()
		return len(toks) > 1 && bearerOf(r) == toks[len(toks)-1] // only the newest
	})
	secret := oauth2Secret(te.srv.URL + "/token")
	// Mint the token the agent will find stale.
	c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, secret))
	if _, err := send(ctx, c); err != nil {
		t.Fatalf("SendMessage() = %v, want success after one refresh", err)
	}
	if te.requests.Load() != 2 || agent.requests.Load() != 2 || agent.refused.Load() != 1 {
		t.Errorf("token requests %d, agent requests %d (refused %d); want 2, 2 (1)", te.requests.Load(), agent.requests.Load(), agent.refused.Load())
	}
}

// An agent that refuses every token: exactly one refresh, then the call
// fails as authorization (no loop).
func TestOAuth2RefusedEveryTokenOneRefresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := newTokenEndpoint(t, ptr(3600))
	agent := newProtectedAgent(t, func(*http.Request) bool { return false })
	c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, oauth2Secret(te.srv.URL+"/token")))
	_, err := send(ctx, c)
	if category(err) != contracts.CategoryAuthorization {
		t.Fatalf("SendMessage() error = %v, want category authorization", err)
	}
	if te.requests.Load() != 2 || agent.requests.Load() != 2 {
		t.Errorf("token requests %d, agent requests %d; want exactly 2 and 2", te.requests.Load(), agent.requests.Load())
	}
}

// What a token endpoint answers besides a token: each a clear error of
// the right category, bounded, without the client secret.
func TestTokenEndpointFailures(t *testing.T) {
	var release chan struct{} // closed at the end of each subtest, before its servers close
	for _, tc := range []struct {
		name    string
		respond func(w http.ResponseWriter, r *http.Request)
		want    contracts.Category
		text    string
	}{
		{"client refused", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			// A careless endpoint echoes what it got.
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad secret %s"}`, testClientSecret)
		}, contracts.CategoryAuthorization, "invalid_client"},
		{"401 with a body echoing the secret", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "nope, %s is wrong", testClientSecret)
		}, contracts.CategoryAuthorization, "HTTP 401"},
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}, contracts.CategoryTransient, "HTTP 503"},
		{"HTML", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Sign in</body></html>")
		}, contracts.CategoryAuthorization, "text/html, not application/json"},
		{"huge body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"%s"}`, strings.Repeat("x", 2*MaxTokenResponseBytes))
		}, contracts.CategoryAuthorization, "over 65536 bytes"},
		{"no access_token", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"token_type":"Bearer"}`)
		}, contracts.CategoryAuthorization, "missing access_token"},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			rel := release
			select {
			case <-r.Context().Done():
			case <-rel:
			}
		}, contracts.CategoryTransient, "no token within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			te := newTokenEndpoint(t, nil)
			release = make(chan struct{})
			defer close(release)
			te.respond = tc.respond
			agent := newProtectedAgent(t, func(*http.Request) bool { return true })
			secret := oauth2Secret(te.srv.URL + "/token")
			secret.tokens = &tokenCaches{secret: &secret, hc: newTokenHTTPClient(300*time.Millisecond, nil)}
			c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, secret))
			start := time.Now()
			_, err := send(ctx, c)
			if category(err) != tc.want || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("SendMessage() error = %v, want category %s mentioning %q", err, tc.want, tc.text)
			}
			if strings.Contains(err.Error(), testClientSecret) {
				t.Errorf("the error shows the client secret: %v", err)
			}
			if agent.requests.Load() != 0 {
				t.Errorf("the agent got %d requests without a token", agent.requests.Load())
			}
			t.Logf("error: %v", err)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the call took %v: the token request was not bounded", d)
			}
		})
	}
}

// A card naming another token URL than the store's: refused, the token
// endpoint never contacted, the agent never called.
func TestCardTokenURLElsewhereRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := newTokenEndpoint(t, ptr(3600))
	evil := newTokenEndpoint(t, ptr(3600))
	agent := newProtectedAgent(t, func(*http.Request) bool { return true })
	scheme := &contracts.AuthScheme{Kind: "oauth2", Name: "corp", TokenURL: evil.srv.URL + "/token"}
	c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(scheme, oauth2Secret(te.srv.URL+"/token")))
	_, err := send(ctx, c)
	if category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), evil.srv.URL+"/token") || !strings.Contains(err.Error(), te.srv.URL+"/token") {
		t.Fatalf("SendMessage() error = %v, want authorization naming both token URLs", err)
	}
	if strings.Contains(err.Error(), testClientSecret) {
		t.Errorf("the error shows the client secret: %v", err)
	}
	if te.requests.Load()+evil.requests.Load()+agent.requests.Load() != 0 {
		t.Errorf("requests: store's token endpoint %d, card's %d, agent %d; want none", te.requests.Load(), evil.requests.Load(), agent.requests.Load())
	}
	// The same URL spelled with a trailing slash is the same endpoint.
	scheme.TokenURL = te.srv.URL + "/token/"
	c = dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(scheme, oauth2Secret(te.srv.URL+"/token")))
	if _, err := send(ctx, c); err != nil {
		t.Errorf("card naming the store's token URL: %v", err)
	}
}

// An agent that echoes the minted token in an error: the token is
// redacted from the error.
func TestMintedTokenEchoedIsRedacted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := newTokenEndpoint(t, ptr(3600))
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad request from %s"}}`, r.Header.Get("Authorization"))
	}))
	defer agent.Close()
	c := dialAgent(t, ctx, agent.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, oauth2Secret(te.srv.URL+"/token")))
	_, err := send(ctx, c)
	toks := te.tokens()
	if err == nil || len(toks) != 1 {
		t.Fatalf("SendMessage() error = %v, minted %d; want an error after one token", err, len(toks))
	}
	if strings.Contains(err.Error(), toks[0]) || !strings.Contains(err.Error(), Redacted) {
		t.Errorf("error = %v, want the minted token redacted", err)
	}
}

// OpenID Connect: the token endpoint comes from the issuer's discovery
// document, fetched through the card guard (and cached); the card's
// openIdConnectUrl must name the store's issuer.
func TestOIDCDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := newTokenEndpoint(t, ptr(1)) // a new token each call
	var discoveries atomic.Int64
	var issuer string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/realms/a/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		discoveries.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":%q}`, issuer, te.srv.URL+"/token")
	}))
	defer idp.Close()
	issuer = idp.URL + "/realms/a"
	agent := newProtectedAgent(t, func(r *http.Request) bool { return strings.HasPrefix(bearerOf(r), "minted-token-") })
	f := &cards.Fetcher{}
	creds := &Credentials{Fetcher: f}
	secret := Secret{OIDC: &OIDC{Issuer: issuer, ClientCredentials: ClientCredentials{ClientID: testClientID, ClientSecret: testClientSecret}}}
	secret.tokens = &tokenCaches{creds: creds, secret: &secret}
	scheme := &contracts.AuthScheme{Kind: "oidc", Name: "sso", OpenIDConnectURL: issuer + "/.well-known/openid-configuration"}
	for range 2 {
		c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(scheme, secret))
		if _, err := send(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if discoveries.Load() != 1 || te.requests.Load() != 2 || f.Requests.Load() != 1 {
		t.Errorf("discovery requests %d (through the fetcher %d), token requests %d; want 1 (1), 2", discoveries.Load(), f.Requests.Load(), te.requests.Load())
	}

	// Another issuer in the card: refused, naming both.
	other := *scheme
	other.OpenIDConnectURL = "https://login.elsewhere.example/.well-known/openid-configuration"
	c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&other, secret))
	_, err := send(ctx, c)
	if category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), "login.elsewhere.example") || !strings.Contains(err.Error(), issuer) {
		t.Errorf("card naming another issuer: %v, want authorization naming both", err)
	}

	// A discovery document naming another issuer (OpenID Connect
	// Discovery 1.0 §4.3): refused, nothing minted.
	bad := Secret{OIDC: &OIDC{Issuer: idp.URL + "/realms/a/", ClientCredentials: secret.OIDC.ClientCredentials}}
	issuer = "https://impostor.example"
	f2 := &cards.Fetcher{}
	bad.tokens = &tokenCaches{creds: &Credentials{Fetcher: f2}, secret: &bad}
	before := te.requests.Load()
	c = dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oidc"}, bad))
	if _, err := send(ctx, c); category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), "impostor.example") {
		t.Errorf("discovery naming another issuer: %v, want authorization", err)
	}
	if te.requests.Load() != before {
		t.Error("a token was requested after a discovery document naming another issuer")
	}
}

// The discovery document is fetched through the card guard: an issuer
// that resolves to a private address is refused like a card would be.
func TestOIDCDiscoveryGuarded(t *testing.T) {
	m := &minter{creds: &Credentials{Fetcher: &cards.Fetcher{}}, oidc: &OIDC{Issuer: "http://10.1.2.3:8080/realm"}}
	_, err := m.tokenURL(context.Background())
	if authCategory(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("tokenURL(private http issuer) = %v, want the guard's refusal", err)
	}
}

type countingSource struct{ n atomic.Int64 }

func (c *countingSource) Token() (*oauth2.Token, error) {
	n := c.n.Add(1)
	return &oauth2.Token{AccessToken: fmt.Sprintf("tok-%d", n), Expiry: time.Now().Add(time.Hour)}, nil
}

// Calls refused together with the same token mint one new token, not one
// each; a later refusal of the new token mints again.
func TestTokenCacheRefreshOncePerGeneration(t *testing.T) {
	src := &countingSource{}
	c := newTokenCache(src)
	tok, gen, err := c.token()
	if err != nil || tok.AccessToken != "tok-1" {
		t.Fatal(tok, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if tok, _, err := c.refresh(gen); err != nil || tok.AccessToken != "tok-2" {
				t.Errorf("refresh() = %v, %v; want tok-2", tok, err)
			}
		})
	}
	wg.Wait()
	if src.n.Load() != 2 {
		t.Errorf("minted %d tokens, want 2", src.n.Load())
	}
	if tok, _, _ := c.refresh(gen + 1); tok.AccessToken != "tok-3" {
		t.Errorf("refresh of the second generation = %v, want tok-3", tok)
	}
}

// A client_secret_file is read at every mint: a rotated secret is used
// without a restart.
func TestClientSecretFileRotates(t *testing.T) {
	te := newTokenEndpoint(t, ptr(1))
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("old-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &minter{oauth2: &OAuth2{TokenURL: te.srv.URL}, cc: ClientCredentials{ClientID: testClientID, ClientSecretFile: path}}
	if _, err := m.Token(); authCategory(err) != contracts.CategoryAuthorization || strings.Contains(err.Error(), "old-secret-value") {
		t.Fatalf("Token() with the old secret = %v, want authorization without the secret", err)
	}
	if err := os.WriteFile(path, []byte(testClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Token(); err != nil {
		t.Fatalf("Token() after the rotation = %v", err)
	}
}
