package a2aclient

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// A token endpoint's error text is redacted before it is cut: a client
// secret across the 200-byte cut of error_description kept its first
// bytes. And an endpoint echoing the HTTP Basic header (the secret
// form-encoded before base64, RFC 6749 §2.3.1) no longer gives the secret
// back: the base64 of the form-encoded secret was not looked for.
func TestTokenEndpointErrorNeverCarriesTheSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agent := newProtectedAgent(t, func(*http.Request) bool { return true })
	for name, tc := range map[string]struct {
		secret  string
		respond func(w http.ResponseWriter, r *http.Request)
	}{
		"across the cut": {testClientSecret, func(w http.ResponseWriter, r *http.Request) {
			_, sec, _ := r.BasicAuth()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":%q}`, strings.Repeat("x", 190)+" "+sec)
		}},
		"basic header echoed": {"s3cret/with+plus=and space", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad credentials in %s"}`, r.Header.Get("Authorization"))
		}},
		"body echoed": {"s3cret/with+plus=and space", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "no: %s", r.Header.Get("Authorization"))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			te := newTokenEndpoint(t, ptr(3600))
			te.respond = tc.respond
			s := oauth2Secret(te.srv.URL + "/token")
			s.OAuth2.ClientSecret = tc.secret
			c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, s))
			_, err := send(ctx, c)
			if category(err) != contracts.CategoryAuthorization {
				t.Fatalf("error = %v, want authorization", err)
			}
			msg := err.Error()
			if strings.Contains(msg, tc.secret[:8]) || strings.Contains(msg, url.QueryEscape(tc.secret)[:8]) {
				t.Errorf("the error carries the start of the client secret: %s", msg)
			}
			basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(testClientID) + ":" + url.QueryEscape(tc.secret)))
			if strings.Contains(msg, basic[len(basic)/2:]) {
				t.Errorf("the error carries the Basic credentials: %s", msg)
			}
		})
	}
}

// A token this client cannot send as meant is refused at mint time, as
// authorization, and not cached: a token_type other than Bearer (RFC 6749
// §7.1), bytes a header cannot carry (it was cached for its lifetime and
// every call failed "transient"), one too short to be redacted.
func TestTokenRefusedAtMint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct{ name, body, want string }{
		{"crlf", `{"access_token":"abc\r\nX-Evil: 1","token_type":"Bearer","expires_in":3600}`, "b64token"},
		{"space", `{"access_token":"abc def ghi","token_type":"Bearer","expires_in":3600}`, "b64token"},
		{"short", `{"access_token":"ab12Z","token_type":"Bearer","expires_in":3600}`, "under 6"},
		{"mac", `{"access_token":"mac-token-123456","token_type":"mac","expires_in":3600}`, `token_type "mac" is not Bearer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTokenEndpoint(t, nil)
			te.respond = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tc.body)
			}
			agent := newProtectedAgent(t, func(*http.Request) bool { return true })
			c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, oauth2Secret(te.srv.URL+"/token")))
			for i := range 2 {
				_, err := send(ctx, c)
				if category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("call %d: error = %v, want authorization saying %q", i, err, tc.want)
				}
			}
			if te.requests.Load() != 2 || agent.requests.Load() != 0 {
				t.Errorf("token requests %d, agent requests %d; want 2 (not cached), 0", te.requests.Load(), agent.requests.Load())
			}
		})
	}
}

// The token_endpoint of an OpenID Connect discovery document is reached
// only through the HTTP guard: one naming an address the worker must not
// reach (here the unspecified address, which the kernel routes to this
// host, so nothing leaves it) gets no connection and no client secret;
// the call fails as authorization, not as a transient failure retried.
// Before, the secret was POSTed to any address the document named.
func TestOIDCTokenEndpointThroughTheGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var issuer string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":"https://0.0.0.0:%s/token"}`, issuer, port)
	}))
	defer idp.Close()
	issuer = idp.URL
	agent := newProtectedAgent(t, func(*http.Request) bool { return true })
	secret := Secret{OIDC: &OIDC{Issuer: issuer, ClientCredentials: ClientCredentials{ClientID: testClientID, ClientSecret: testClientSecret}}}
	secret.tokens = &tokenCaches{creds: &Credentials{Fetcher: &cards.Fetcher{}}, secret: &secret}
	c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oidc"}, secret))
	_, err = send(ctx, c)
	if category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), "refused by the HTTP guard") {
		t.Errorf("error = %v, want authorization, refused by the guard", err)
	}
	if accepted.Load() != 0 || agent.requests.Load() != 0 {
		t.Errorf("connections to the token endpoint %d, agent requests %d; want none", accepted.Load(), agent.requests.Load())
	}
}

// Over gRPC, a refused token whose refresh fails keeps the category of
// the refresh's failure: authorization when the token endpoint refuses
// the client (the send was refused by the agent: not unknown_outcome),
// transient when it is unavailable (retried, not a protocol error).
func TestGRPCRefreshFailureCategory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gate := &tokenGate{accept: func(string) bool { return false }}
	_, iface := grpcAgent(t, claimsagent.Config{}, gate.opts()...)
	for _, tc := range []struct {
		name   string
		status int
		want   contracts.Category
		call   func(c *Client) error
	}{
		{"send, client refused", http.StatusBadRequest, contracts.CategoryAuthorization, func(c *Client) error { _, err := send(ctx, c); return err }},
		{"read, endpoint unavailable", http.StatusServiceUnavailable, contracts.CategoryTransient, func(c *Client) error { _, err := c.GetTask(ctx, "t-1", ""); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTokenEndpoint(t, ptr(3600))
			mint := te.srv.Config.Handler
			var n atomic.Int64
			te.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) > 1 {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					fmt.Fprint(w, `{"error":"invalid_client"}`)
					return
				}
				mint.ServeHTTP(w, r)
			})
			c, err := Dial(ctx, iface, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, oauth2Secret(te.srv.URL+"/token")))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := tc.call(c); category(err) != tc.want {
				t.Errorf("error = %v (%s), want %s", err, category(err), tc.want)
			}
		})
	}
}
