package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2adelegate/delegate/contracts"
)

// objectTemplate is a template with an object parameter whose fields the
// schema bounds (qty at most 10).
func objectTemplate(t *testing.T) Template {
	t.Helper()
	tp := exampleTemplates(t)[0]
	tp.Name = "order_items"
	tp.Text = "Order {{order_id}}: {{items}}"
	tp.Parameters = json.RawMessage(`{"type":"object","properties":{
		"order_id":{"type":"string","pattern":"^[A-Z]{1,4}-[0-9]{1,10}$"},
		"items":{"type":"object","properties":{"qty":{"type":"integer","maximum":10}}}},
		"required":["order_id"]}`)
	return tp
}

// TestDuplicateKeysRefused: a key given twice, at the top or inside an
// argument's value, is refused naming it: the schema checks one of the
// two values (encoding/json keeps the last), while the raw value forwarded
// as the message's data carries both, and a remote agent whose parser keeps
// the first would act on a value the schema never checked.
func TestDuplicateKeysRefused(t *testing.T) {
	cs := session(t, Options{Templates: append(exampleTemplates(t), objectTemplate(t))})
	cases := []struct {
		name, tool string
		args       json.RawMessage
		want       []string
	}{
		{"nested", "order_items", json.RawMessage(`{"order_id":"A-1","items":{"qty":1000000,"qty":1}}`), []string{`argument "items.qty"`, "given twice"}},
		{"escaped", "order_items", json.RawMessage(`{"order_id":"A-1","items":{"qty":1000000,"\u0071ty":1}}`), []string{`argument "items.qty"`, "given twice"}},
		{"top", "open_parcel_claim", json.RawMessage(`{"order_id":"1001; drop","order_id":"A-1"}`), []string{`argument "order_id"`, "given twice"}},
		{"answer data", ToolAnswer, json.RawMessage(`{"local_workflow_id":"mcp.x.1","text":"t","data":{"ok":false,"ok":true}}`), []string{`argument "data.ok"`, "given twice"}},
		{"status id", ToolStatus, json.RawMessage(`{"local_workflow_id":"a","local_workflow_id":"b"}`), []string{`argument "local_workflow_id"`, "given twice"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := callTool(t, cs, c.tool, c.args)
			if !res.IsError {
				t.Fatalf("want a tool error, got %s", resultText(res))
			}
			for _, w := range c.want {
				if !strings.Contains(resultText(res), w) {
					t.Fatalf("%q does not say %q", resultText(res), w)
				}
			}
		})
	}
}

// TestHostileArgumentShapes: arguments that are not an object, or are
// nested past what a decoder takes, are refusals naming the rule, never a
// crash or a protocol error.
func TestHostileArgumentShapes(t *testing.T) {
	cs := session(t, Options{Templates: append(exampleTemplates(t), objectTemplate(t))})
	cases := []struct {
		name, tool string
		args       json.RawMessage
		want       string
	}{
		{"array", "open_parcel_claim", json.RawMessage(`["A-1"]`), "must be a JSON object"},
		{"string", ToolStatus, json.RawMessage(`"mcp.x.1"`), "must be a JSON object"},
		{"number", ToolList, json.RawMessage(`7`), "must be a JSON object"},
		{"__proto__", "open_parcel_claim", json.RawMessage(`{"order_id":"A-1","__proto__":{"admin":true}}`), `argument "__proto__": unknown`},
		{"case variation", "open_parcel_claim", json.RawMessage(`{"Order_ID":"A-1"}`), `argument "Order_ID": unknown`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := callTool(t, cs, c.tool, c.args)
			if !res.IsError || !strings.Contains(resultText(res), c.want) {
				t.Fatalf("result %q (isError %v), want a tool error saying %q", contracts.Truncate(resultText(res), 300), res.IsError, c.want)
			}
		})
	}
}

// TestRenderIsOnePass: a parameter value that holds a placeholder is text,
// not a template: it is not expanded again (no value reaches another
// parameter's place, no template text is injected).
func TestRenderIsOnePass(t *testing.T) {
	ts, err := compileTemplates([]Template{exampleTemplates(t)[0]}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := ts["open_parcel_claim"].render(map[string]json.RawMessage{
		"order_id": json.RawMessage(`"A-1"`), "note": json.RawMessage(`"{{order_id}} {{ note }} {{agent_card_url}}"`),
	})
	if want := "Customer note: {{order_id}} {{ note }} {{agent_card_url}}"; !strings.HasSuffix(got, want) {
		t.Fatalf("render = %q, want the note verbatim (%q)", got, want)
	}
}

// TestOIDCRefusesHostileJWTs: in OAuth resource-server mode only a JWT the
// issuer signed, for this audience, unexpired, passes; alg "none", an HMAC
// signed with the issuer's public key (algorithm confusion), another key,
// another issuer, another audience and an expired token are refused, and
// the refusal quotes no token.
func TestOIDCRefusesHostileJWTs(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := jwk.FromRaw(key)
	_ = priv.Set(jwk.KeyIDKey, "k1")
	_ = priv.Set(jwk.AlgorithmKey, jwa.RS256)
	pub, _ := priv.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(set) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := NewOIDC(ctx, srv.URL, "delegate-mcp")
	if err != nil {
		t.Fatal(err)
	}
	verify := Verifier(nil, o)

	claims := func(iss, aud string, exp time.Time) jwt.Token {
		tok, err := jwt.NewBuilder().Issuer(iss).Subject("alice").Audience([]string{aud}).IssuedAt(time.Now().Add(-time.Hour)).Expiration(exp).Build()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	sign := func(tok jwt.Token, k any, kid string) string {
		jk, _ := jwk.FromRaw(k)
		_ = jk.Set(jwk.KeyIDKey, kid)
		b, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256, jk))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	b64 := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	good := claims(srv.URL, "delegate-mcp", time.Now().Add(time.Hour))
	body := map[string]any{"iss": srv.URL, "sub": "alice", "aud": "delegate-mcp", "exp": time.Now().Add(time.Hour).Unix()}
	none := b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(body) + "."
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hsInput := b64(map[string]string{"alg": "HS256", "typ": "JWT", "kid": "k1"}) + "." + b64(body)
	mac := hmac.New(sha256.New, pubPEM)
	mac.Write([]byte(hsInput))
	confused := hsInput + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	if ti, err := verify(ctx, sign(good, key, "k1"), nil); err != nil || ti.UserID != "alice" {
		t.Fatalf("the issuer's own token: %+v, %v; want alice", ti, err)
	}
	for name, tok := range map[string]string{
		"alg none":       none,
		"alg confusion":  confused,
		"another key":    sign(good, other, "k1"),
		"another issuer": sign(claims("https://evil.example", "delegate-mcp", time.Now().Add(time.Hour)), key, "k1"),
		"another aud":    sign(claims(srv.URL, "someone-else", time.Now().Add(time.Hour)), key, "k1"),
		"expired":        sign(claims(srv.URL, "delegate-mcp", time.Now().Add(-time.Minute)), key, "k1"),
		"not a JWT":      "alice",
		"no exp": func() string {
			tok, _ := jwt.NewBuilder().Issuer(srv.URL).Subject("alice").Audience([]string{"delegate-mcp"}).Build()
			return sign(tok, key, "k1")
		}(),
		"sub not an actor": func() string {
			tok, _ := jwt.NewBuilder().Issuer(srv.URL).Subject(`al"ice`).Audience([]string{"delegate-mcp"}).Expiration(time.Now().Add(time.Hour)).Build()
			return sign(tok, key, "k1")
		}(),
		"payload altered": strings.Join([]string{strings.Split(sign(good, key, "k1"), ".")[0], b64(map[string]any{"iss": srv.URL, "sub": "bob", "aud": "delegate-mcp", "exp": time.Now().Add(time.Hour).Unix()}), strings.Split(sign(good, key, "k1"), ".")[2]}, "."),
	} {
		ti, err := verify(ctx, tok, nil)
		if err == nil {
			t.Errorf("%s: accepted as %+v", name, ti)
			continue
		}
		if !errors.Is(err, auth.ErrInvalidToken) || strings.Contains(err.Error(), tok) {
			t.Errorf("%s: error %v, want auth.ErrInvalidToken without the token", name, err)
		}
	}
}

// TestTemplateSchemaReadsNothing: a template's parameters cannot make the
// server read a file or the network ($ref outside the schema, also through
// $id): refused at start.
func TestTemplateSchemaReadsNothing(t *testing.T) {
	for name, params := range map[string]string{
		"file":      `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
		"http":      `{"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:1/schema.json"}}}`,
		"$id trick": `{"$id":"http://127.0.0.1:1/base/","type":"object","properties":{"a":{"$ref":"other.json"}}}`,
	} {
		tp := exampleTemplates(t)[0]
		tp.Text = "{{order_id}}"
		tp.Parameters = json.RawMessage(strings.Replace(params, `"properties":{`, `"properties":{"order_id":{"type":"string"},`, 1))
		if err := CheckTemplates([]Template{tp}); err == nil || !strings.Contains(err.Error(), "parameters") {
			t.Errorf("%s: CheckTemplates() error = %v, want a refusal of parameters", name, err)
		}
	}
}

// TestOIDCIssuerMustBeHTTPS: the issuer's keys decide who every request
// is: fetched over plain http from a host that is not loopback, anyone on
// the path could serve their own. Refused before anything is fetched.
func TestOIDCIssuerMustBeHTTPS(t *testing.T) {
	for _, iss := range []string{"http://id.example.com", "http://10.0.0.1:8080/realms/x", "ftp://id.example.com", "id.example.com"} {
		_, err := NewOIDC(context.Background(), iss, "delegate-mcp")
		if err == nil || !strings.Contains(err.Error(), "--issuer") || !strings.Contains(err.Error(), "https") {
			t.Errorf("NewOIDC(%q) error = %v, want a refusal naming --issuer and https", iss, err)
		}
	}
}

// TestTextArgumentsNoControlCharacters: a value that fills the message's
// text carries no control character (but tab, newline and carriage
// return) and no bidirectional override, embedding or isolate (U+202A to
// U+202E, U+2066 to U+2069), which make what an operator or an agent
// reads differ from what was sent; refused naming the argument.
func TestTextArgumentsNoControlCharacters(t *testing.T) {
	cs := session(t, Options{})
	for name, note := range map[string]string{
		"NUL": "a\x00b", "ESC": "a\x1b[2Jb", "DEL": "a\x7fb", "C1": "a\u0085b", "RLO": "refund \u202e001$", "isolate": "a\u2066b",
	} {
		res := callTool(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1", "note": note})
		if !res.IsError || !strings.Contains(resultText(res), `argument "note"`) || !strings.Contains(resultText(res), "U+") {
			t.Errorf("%s: %s, want a refusal naming argument note and the character", name, resultText(res))
		}
	}
	// Tab, newline, emoji with a zero-width joiner: text, passed (the
	// call then fails on the unreachable Temporal, after every check).
	res := callTool(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1", "note": "line 1\n\tline 2 \U0001F469\u200D\U0001F4BB"})
	if !strings.Contains(resultText(res), "nothing was refused") {
		t.Errorf("plain text refused: %s", resultText(res))
	}
}

// TestResourceURIControlCharacters: a resource URI holding a control
// character is refused as invalid params and the session goes on. (The
// go-sdk's "resource not found" error formats the URI with %q, "\x00",
// which is not JSON: the response could not be written and the session
// ended.) At MCP 2026-07-28 a subscription is a subscriptions/listen,
// whose refusal the go-sdk client does not return from Subscribe: the
// connection must live on.
func TestResourceURIControlCharacters(t *testing.T) {
	for _, version := range []string{"2025-11-25", ModernProtocol} {
		t.Run(version, func(t *testing.T) {
			cs := sessionAt(t, Options{}, version)
			ctx := context.Background()
			for _, u := range []string{"delegation://x\x00", "other://x\x01", "delegation://x\x7f", "delegation://x\u0085"} {
				_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: u})
				if err == nil || !strings.Contains(err.Error(), "control character") {
					t.Errorf("ReadResource(%q) error = %v, want a refusal naming the control character", u, err)
				}
				err = cs.Subscribe(ctx, &sdk.SubscribeParams{URI: u})
				if version == ModernProtocol {
					_ = cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: u})
				} else if err == nil || !strings.Contains(err.Error(), "control character") {
					t.Errorf("Subscribe(%q) error = %v, want a refusal naming the control character", u, err)
				}
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Fatalf("after %q the session is gone: %v", u, err)
				}
			}
		})
	}
}
