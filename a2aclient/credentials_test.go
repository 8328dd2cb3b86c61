package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
)

func loadStore(t *testing.T, doc string) (*Credentials, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadCredentials(path)
}

// A ref is bound to the origins it may be sent to; a store whose ref names
// none is refused, and a ref asked for by another origin is not handed out.
func TestRefsAreBoundToOrigins(t *testing.T) {
	if _, err := loadStore(t, `{"refs": {"claims-prod": {"bearer": "s3cret"}}}`); err == nil || !strings.Contains(err.Error(), `refs["claims-prod"].origins`) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("ref without origins: %v, want an error naming refs[\"claims-prod\"].origins (without the secret)", err)
	}
	c, err := loadStore(t, `{"refs": {"claims-prod": {"bearer": "s3cret", "origins": ["https://Claims.example:443/x"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.ForRef("claims-prod", "https://claims.example"); err != nil || s.Bearer != "s3cret" {
		t.Errorf("ForRef(bound origin) = %v, %v", s, err)
	}
	_, err = c.ForRef("claims-prod", "https://evil.example")
	if !errors.Is(err, ErrRefNotAllowed) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("ForRef(other origin) error = %v, want ErrRefNotAllowed without the secret", err)
	}
	if _, err := c.ForRef("nope", "https://claims.example"); !errors.Is(err, ErrRefUnknown) {
		t.Errorf("ForRef(unknown) error = %v, want ErrRefUnknown", err)
	}
}

// The store refuses what it cannot use, naming the entry and the field,
// never quoting a secret.
func TestLoadCredentialsValidates(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("file-s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown field", `{"origins": {"https://a.example": {"oauth2": {"token_url": "https://idp.example/t", "client_id": "c", "client_secret": "s3cret-value", "scope": "x"}}}}`, `unknown field "scope"`},
		{"both secrets", `{"origins": {"https://a.example": {"oauth2": {"token_url": "https://idp.example/t", "client_id": "c", "client_secret": "s3cret-value", "client_secret_file": "` + secretFile + `"}}}}`, `origins["https://a.example"].oauth2: give exactly one of client_secret, client_secret_file`},
		{"no secret", `{"origins": {"https://a.example": {"oauth2": {"token_url": "https://idp.example/t", "client_id": "c"}}}}`, `give exactly one of client_secret, client_secret_file`},
		{"no client id", `{"origins": {"https://a.example": {"oidc": {"issuer": "https://idp.example", "client_secret": "s3cret-value"}}}}`, `origins["https://a.example"].oidc.client_id: required`},
		{"http token url", `{"origins": {"https://a.example": {"oauth2": {"token_url": "http://idp.example/t", "client_id": "c", "client_secret": "s3cret-value"}}}}`, `oauth2.token_url: http://idp.example/t: https is required`},
		{"relative token url", `{"origins": {"https://a.example": {"oauth2": {"token_url": "/t", "client_id": "c", "client_secret": "s3cret-value"}}}}`, `oauth2.token_url: "/t" is not an absolute URL`},
		{"bad scope", `{"origins": {"https://a.example": {"oauth2": {"token_url": "https://idp.example/t", "client_id": "c", "client_secret": "s3cret-value", "scopes": ["a b"]}}}}`, `oauth2.scopes[0]`},
		{"missing secret file", `{"origins": {"https://a.example": {"oauth2": {"token_url": "https://idp.example/t", "client_id": "c", "client_secret_file": "nope"}}}}`, `oauth2.client_secret_file:`},
		{"two kinds", `{"origins": {"https://a.example": {"bearer": "s3cret-value", "oauth2": {"token_url": "https://idp.example/t", "client_id": "c", "client_secret": "s3cret-value"}}}}`, `give exactly one of bearer, api_key, oauth2, oidc`},
		{"cert without key", `{"origins": {"https://a.example": {"tls": {"cert_file": "c.pem"}}}}`, `tls: give both cert_file and key_file`},
		{"ref kind", `{"refs": {"r": {"oidc": {"issuer": "ftp://idp.example", "client_id": "c", "client_secret": "s3cret-value"}, "origins": ["https://a.example"]}}}`, `refs["r"].oidc.issuer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadStore(t, tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadCredentials() error = %v, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-value") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
	c, err := loadStore(t, `{"origins": {"https://a.example": {"oauth2": {"token_url": "http://127.0.0.1:9/t", "client_id": "c", "client_secret_file": "`+secretFile+`", "scopes": ["tasks"]}}},
		"refs": {"r": {"oidc": {"issuer": "https://idp.example", "client_id": "c", "client_secret": "s3cret-value"}, "origins": ["https://b.example"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c.ForOrigin("https://a.example")
	if got, err := s.OAuth2.secret(); err != nil || got != "file-s3cret-value" {
		t.Errorf("client_secret_file read as %q, %v", got, err)
	}
	if !c.Satisfies("https://a.example", "oauth2") || !c.Satisfies("https://a.example", "bearer") || c.Satisfies("https://a.example", "api_key") {
		t.Error("an oauth2 entry must satisfy oauth2 and bearer schemes, not api_key")
	}
	if r, err := c.ForRef("r", "https://b.example"); err != nil || r.OIDC == nil || r.tokens == nil {
		t.Errorf("ForRef(oidc ref) = %v, %v; want the entry with its token cache", r, err)
	}
	if fmt.Sprint(s) != "[secret]" || strings.Contains(fmt.Sprintf("%+v %#v", *s.OAuth2, s.OAuth2), "s3cret") {
		t.Error("a secret's formatting shows it")
	}
}

// An API key goes where the card's apiKey scheme says (A2A 1.0 §4.5.2): a
// query parameter or a cookie; an agent echoing it (in its error, with the
// URL) has it redacted.
func TestAPIKeyInQueryAndCookie(t *testing.T) {
	const key = "k-api-s3cret-42"
	for _, tc := range []struct {
		in  string
		got func(r *http.Request) string
	}{
		{"query", func(r *http.Request) string { return r.URL.Query().Get("api_key") }},
		{"cookie", func(r *http.Request) string {
			c, err := r.Cookie("api_key")
			if err != nil {
				return ""
			}
			return c.Value
		}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			agent := newProtectedAgent(t, func(r *http.Request) bool { return tc.got(r) == key && r.Header.Get("X-API-Key") == "" })
			scheme := &contracts.AuthScheme{Kind: "api_key", In: tc.in, Param: "api_key"}
			c := dialAgent(t, ctx, agent.srv.URL, Options{}.WithCredential(scheme, Secret{APIKey: key}))
			if _, err := send(ctx, c); err != nil {
				t.Fatalf("SendMessage() = %v", err)
			}
			echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"refused %s %s"}}`, r.URL.RequestURI(), r.Header.Get("Cookie"))
			}))
			defer echo.Close()
			c = dialAgent(t, ctx, echo.URL, Options{}.WithCredential(scheme, Secret{APIKey: key}))
			_, err := send(ctx, c)
			if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), Redacted) {
				t.Errorf("echoed key: error = %v, want the key redacted", err)
			}
			// A closed port: the transport's error names the URL.
			c = dialAgent(t, ctx, "http://127.0.0.1:1", Options{}.WithCredential(scheme, Secret{APIKey: key}))
			if _, err := send(ctx, c); err == nil || strings.Contains(err.Error(), key) {
				t.Errorf("unreachable agent: error = %v, want no key in it", err)
			}
		})
	}
}
