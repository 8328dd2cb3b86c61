package cards

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/gowebpki/jcs"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const origin = "https://claims.example"

func TestCanonicalizationVectorOfTheSpec(t *testing.T) {
	// A2A 1.0 §8.4.1, "Example of Default Value Removal".
	in := `{
	  "name": "Example Agent",
	  "description": "",
	  "capabilities": {"streaming": false, "pushNotifications": false, "extensions": []},
	  "skills": []
	}`
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(in), &obj); err != nil {
		t.Fatal(err)
	}
	got, err := CanonicalForSigning(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}`
	if string(got) != want {
		t.Errorf("CanonicalForSigning() =\n%s\nwant\n%s", got, want)
	}
}

type keyPair struct {
	kid  string
	priv jwk.Key
	pub  jwk.Key
}

func newKey(t testing.TB, alg jwa.SignatureAlgorithm, kid string) keyPair {
	t.Helper()
	var raw any
	var err error
	switch alg {
	case jwa.ES256:
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jwa.EdDSA:
		_, raw, err = ed25519.GenerateKey(rand.Reader)
	case jwa.RS256:
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, kid)
	_ = priv.Set(jwk.AlgorithmKey, alg)
	pub, err := jwk.PublicKeyOf(priv)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{kid: kid, priv: priv, pub: pub}
}

func jwks(t testing.TB, keys ...keyPair) json.RawMessage {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		_ = set.AddKey(k.pub)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func trustWith(t *testing.T, at AgentTrust) *TrustStore {
	t.Helper()
	raw, err := json.Marshal(TrustStore{Agents: map[string]*AgentTrust{origin: &at}})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ParseTrustStore(raw, t.TempDir())
	if err != nil {
		t.Fatalf("ParseTrustStore() error = %v", err)
	}
	return ts
}

func sign(t *testing.T, body string, k keyPair, jku string) []byte {
	t.Helper()
	out, err := Sign([]byte(body), k.priv, k.kid, jku)
	if err != nil {
		t.Fatalf("Sign() error = %v", err)
	}
	return out
}

func TestVerifySignedCards(t *testing.T) {
	for _, alg := range []jwa.SignatureAlgorithm{jwa.ES256, jwa.EdDSA, jwa.RS256} {
		t.Run(alg.String(), func(t *testing.T) {
			k := newKey(t, alg, "key-"+alg.String())
			ts := trustWith(t, AgentTrust{JWKS: jwks(t, k)})
			signed := sign(t, card10, k, "")
			v := Verify(context.Background(), signed, origin, ts, nil, now)
			if v.Label() != "verified:"+k.kid {
				t.Fatalf("Verify() = %+v, want verified:%s", v, k.kid)
			}
			// A tampered field fails.
			tampered := strings.Replace(string(signed), `"Claims Agent"`, `"Claims Agent!"`, 1)
			if v := Verify(context.Background(), []byte(tampered), origin, ts, nil, now); v.Status != contracts.SigUnverified {
				t.Errorf("tampered card: %+v, want unverified", v)
			}
		})
	}
}

func TestVerifyRefusals(t *testing.T) {
	k := newKey(t, jwa.ES256, "key-1")
	other := newKey(t, jwa.ES256, "key-other")
	signed := sign(t, card10, k, "")
	ctx := context.Background()

	tests := []struct {
		name   string
		body   []byte
		ts     *TrustStore
		reason string
	}{
		{"unsigned", []byte(card10), trustWith(t, AgentTrust{JWKS: jwks(t, k)}), ""},
		{"unknown kid", signed, trustWith(t, AgentTrust{JWKS: jwks(t, other)}), "not a trusted key"},
		{"no trust entry", signed, nil, "not a trusted key"},
		{"revoked key", signed, trustWith(t, AgentTrust{JWKS: jwks(t, k), Keys: map[string]KeyPolicy{"key-1": {Revoked: true}}}), "revoked"},
		{"expired key", signed, trustWith(t, AgentTrust{JWKS: jwks(t, k), Keys: map[string]KeyPolicy{"key-1": {NotAfter: ptr(now.Add(-time.Hour))}}}), "expired"},
		{"alg none", withHeader(t, signed, `{"alg":"none","kid":"key-1"}`), trustWith(t, AgentTrust{JWKS: jwks(t, k)}), "not allowed"},
		{"alg HS256", withHeader(t, signed, `{"alg":"HS256","kid":"key-1"}`), trustWith(t, AgentTrust{JWKS: jwks(t, k)}), "not allowed"},
		{"crit", withHeader(t, signed, `{"alg":"ES256","kid":"key-1","crit":["exp"]}`), trustWith(t, AgentTrust{JWKS: jwks(t, k)}), "crit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Verify(ctx, tt.body, origin, tt.ts, nil, now)
			if tt.reason == "" {
				if v.Status != contracts.SigUnsigned {
					t.Errorf("Verify() = %+v, want unsigned", v)
				}
				return
			}
			if v.Status != contracts.SigUnverified || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("Verify() = %+v, want unverified with %q", v, tt.reason)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// withHeader replaces the protected header of the first signature.
func withHeader(t *testing.T, signed []byte, header string) []byte {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(signed, &obj); err != nil {
		t.Fatal(err)
	}
	sigs := obj["signatures"].([]any)
	sigs[0].(map[string]any)["protected"] = base64.RawURLEncoding.EncodeToString([]byte(header))
	b, _ := json.Marshal(obj)
	return b
}

func TestTwoSignaturesOneGood(t *testing.T) {
	good := newKey(t, jwa.ES256, "good")
	stranger := newKey(t, jwa.EdDSA, "stranger")
	body := sign(t, card10, stranger, "")
	body, err := Sign(body, good.priv, good.kid, "")
	if err != nil {
		t.Fatal(err)
	}
	v := Verify(context.Background(), body, origin, trustWith(t, AgentTrust{JWKS: jwks(t, good)}), nil, now)
	if v.Label() != "verified:good" {
		t.Errorf("Verify() = %+v, want verified:good", v)
	}
}

func TestJKU(t *testing.T) {
	k := newKey(t, jwa.ES256, "rotating")
	var fetched atomic.Int64
	fetch := func(_ context.Context, url string) ([]byte, error) {
		fetched.Add(1)
		if url != "https://claims.example/.well-known/jwks.json" {
			return nil, errors.New("unexpected jku")
		}
		return jwks(t, k), nil
	}
	off := sign(t, card10, k, "https://evil.example/jwks.json")
	v := Verify(context.Background(), off, origin, trustWith(t, AgentTrust{JKUAllowlist: []string{"https://claims.example/.well-known/jwks.json"}}), fetch, now)
	if v.Status != contracts.SigUnverified || !strings.Contains(v.Reason, "not on its jku_allowlist") || fetched.Load() != 0 {
		t.Errorf("jku off the allowlist: %+v, fetched %d times; want unverified and never fetched", v, fetched.Load())
	}
	on := sign(t, card10, k, "https://claims.example/.well-known/jwks.json")
	v = Verify(context.Background(), on, origin, trustWith(t, AgentTrust{JKUAllowlist: []string{"https://claims.example/.well-known/jwks.json"}}), fetch, now)
	if v.Label() != "verified:rotating" || fetched.Load() != 1 {
		t.Errorf("jku on the allowlist: %+v, fetched %d; want verified", v, fetched.Load())
	}
}

func TestJKUFetchCountedThroughTheFetcher(t *testing.T) {
	k := newKey(t, jwa.ES256, "k1")
	var jwksHits atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case WellKnownPath:
			_, _ = w.Write(sign(t, card10, k, srv.URL+"/jwks.json"))
		case "/jwks.json":
			jwksHits.Add(1)
			_, _ = w.Write(jwks(t, k))
		}
	}))
	defer srv.Close()
	cardOrigin, _ := Origin(srv.URL)
	raw, _ := json.Marshal(TrustStore{Agents: map[string]*AgentTrust{cardOrigin: {}}})
	ts, _ := ParseTrustStore(raw, "")
	c, err := (&Fetcher{Trust: ts}).Fetch(context.Background(), srv.URL)
	if err != nil || c.Verification.Status != contracts.SigUnverified || jwksHits.Load() != 0 {
		t.Fatalf("jku not allowed: %+v, %v; jwks requests %d, want 0", c, err, jwksHits.Load())
	}
	raw, _ = json.Marshal(TrustStore{Agents: map[string]*AgentTrust{cardOrigin: {JKUAllowlist: []string{srv.URL + "/jwks.json"}}}})
	ts, _ = ParseTrustStore(raw, "")
	c, err = (&Fetcher{Trust: ts}).Fetch(context.Background(), srv.URL)
	if err != nil || c.Verification.Label() != "verified:k1" || jwksHits.Load() != 1 {
		t.Fatalf("jku allowed: %+v, %v; jwks requests %d, want 1", c.Verification, err, jwksHits.Load())
	}
}

func TestVerifyPayloadWithoutDefaultsAndAsReceived(t *testing.T) {
	// A card signed over its form as received (no default removal) also
	// verifies: the first candidate payload.
	k := newKey(t, jwa.ES256, "k")
	var obj map[string]json.RawMessage
	_ = json.Unmarshal([]byte(card10), &obj)
	b, _ := json.Marshal(obj)
	payload, _ := jcs.Transform(b)
	ts := trustWith(t, AgentTrust{JWKS: jwks(t, k)})
	signed := signRawPayload(t, card10, payload, k)
	if v := Verify(context.Background(), signed, origin, ts, nil, now); v.Label() != "verified:k" {
		t.Errorf("Verify() = %+v", v)
	}
}

func TestGuard(t *testing.T) {
	ts := trustWith(t, AgentTrust{InterfaceOrigins: []string{"https://api.claims.example"}})
	g := &Guard{Trust: ts}
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://claims.example/a2a", true},
		{"https://api.claims.example/a2a", true},
		{"https://other.example/a2a", false},
		{"http://claims.example/a2a", false},     // plain http off loopback
		{"http://169.254.169.254/latest", false}, // metadata service
		{"https://169.254.169.254/latest", false},
		{"https://10.0.0.1/a2a", false},
		{"ftp://claims.example/a2a", false},
	} {
		err := g.CheckInterface(tt.url, origin)
		if (err == nil) != tt.ok {
			t.Errorf("CheckInterface(%s) error = %v, want ok=%v", tt.url, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrGuard) {
			t.Errorf("CheckInterface(%s) error %v is not ErrGuard", tt.url, err)
		}
	}
	if err := g.CheckURL("http://127.0.0.1:9999/x"); err != nil {
		t.Errorf("loopback http refused: %v", err)
	}
	raw, _ := json.Marshal(TrustStore{Agents: map[string]*AgentTrust{"http://claims.example": {AllowHTTP: true}}})
	httpTrust, err := ParseTrustStore(raw, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Guard{Trust: httpTrust}).CheckURL("http://claims.example/x"); err != nil {
		t.Errorf("allow_http not honoured: %v", err)
	}
}

func TestGuardRefusesInternalAddressesBeforeDialing(t *testing.T) {
	// Literal addresses resolve without DNS; the guard refuses them before
	// any packet is sent.
	c := (&Guard{}).Client("https://claims.example")
	for _, u := range []string{"https://169.254.169.254/latest/meta-data", "https://10.0.0.1/a2a", "https://0.0.0.0/", "https://[fe80::1]/", "https://192.168.1.1/"} {
		_, err := c.Get(u)
		if err == nil || !errors.Is(err, ErrGuard) {
			t.Errorf("GET %s error = %v, want a guard refusal", u, err)
		}
	}
	for _, tt := range []struct {
		ip           string
		allowPrivate bool
		ok           bool
	}{
		{"127.0.0.1", false, true}, {"8.8.8.8", false, true}, {"10.1.2.3", false, false},
		{"10.1.2.3", true, true}, {"169.254.169.254", true, true}, {"0.0.0.0", true, false}, {"fc00::1", false, false},
		{"0.1.2.3", false, false}, {"64:ff9b::a00:1", false, false}, {"2002:a00:1::", false, false}, {"::a00:1", false, false},
	} {
		if err := checkIP(netip.MustParseAddr(tt.ip), tt.allowPrivate); (err == nil) != tt.ok {
			t.Errorf("checkIP(%s, %v) = %v, want ok=%v", tt.ip, tt.allowPrivate, err, tt.ok)
		}
	}
}

func TestSelectInterfaceThroughTheGuard(t *testing.T) {
	body := strings.ReplaceAll(card10, "https://agent.example", "http://169.254.169.254")
	c, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{}
	_, err = SelectInterface(c.Parsed, func(u string) error { return g.CheckInterface(u, "https://agent.example") })
	var ce *Error
	if !errors.As(err, &ce) || ce.Kind != "no_interface" || !strings.Contains(err.Error(), "refused") {
		t.Errorf("SelectInterface() error = %v, want no_interface naming the refusals", err)
	}
}

func TestCaching(t *testing.T) {
	var hits, conditional atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Cache-Control", "max-age=60")
		if r.Header.Get("If-None-Match") == `"v1"` {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(card10))
	}))
	defer srv.Close()
	clock := now
	f := &Fetcher{Now: func() time.Time { return clock }}
	ctx := context.Background()
	first, err := f.Fetch(ctx, srv.URL)
	if err != nil || first.FromCache || hits.Load() != 1 {
		t.Fatalf("first fetch: %v, from cache %v, hits %d", err, first != nil && first.FromCache, hits.Load())
	}
	clock = clock.Add(30 * time.Second)
	again, err := f.Fetch(ctx, srv.URL)
	if err != nil || !again.FromCache || hits.Load() != 1 {
		t.Fatalf("inside max-age: %v, from cache %v, hits %d; want no request", err, again.FromCache, hits.Load())
	}
	clock = clock.Add(time.Minute)
	late, err := f.Fetch(ctx, srv.URL)
	if err != nil || !late.FromCache || hits.Load() != 2 || conditional.Load() != 1 {
		t.Fatalf("after max-age: %v, from cache %v, hits %d, conditional %d; want one conditional request answered 304", err, late.FromCache, hits.Load(), conditional.Load())
	}
	if late.Digest != first.Digest {
		t.Errorf("304 changed the digest")
	}
}

// signRawPayload signs payload (not the default-removed form) and appends
// the signature to body.
func signRawPayload(t *testing.T, body string, payload []byte, k keyPair) []byte {
	t.Helper()
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"JOSE","kid":"` + k.kid + `"}`))
	var raw ecdsa.PrivateKey
	if err := k.priv.Raw(&raw); err != nil {
		t.Fatal(err)
	}
	compact, err := jwsSignDetached(hdr, payload, &raw)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	_ = json.Unmarshal([]byte(body), &obj)
	obj["signatures"] = []any{map[string]any{"protected": hdr, "signature": compact}}
	b, _ := json.Marshal(obj)
	return b
}

func TestCaseVariantKeysCannotRideOnASignature(t *testing.T) {
	k := newKey(t, jwa.ES256, "k1")
	signed := string(sign(t, card10, k, ""))
	// An added key in another case with a default value would survive the
	// default-removed payload and change what encoding/json parses.
	altered := strings.Replace(signed, `"protocolVersion": "1.0"`, `"protocolVersion": "1.0", "ProtocolVersion": ""`, 1)
	if altered == signed {
		t.Fatal("test card has no protocolVersion to shadow")
	}
	if _, err := Parse([]byte(altered)); err == nil || !strings.Contains(err.Error(), "differ only in case") {
		t.Errorf("Parse(altered) error = %v, want a refusal", err)
	}
	dup := strings.Replace(signed, `"name": "Claims Agent"`, `"name": "Claims Agent", "name": "Evil"`, 1)
	if _, err := Parse([]byte(dup)); err == nil {
		t.Errorf("Parse(duplicate key) accepted")
	}
}

func TestTrustStoreRefusesAnOriginTwice(t *testing.T) {
	raw := []byte(`{"agents": {"http://127.0.0.1:39998": {"require_signature": true}, "HTTP://127.0.0.1:39998/": {}}}`)
	if _, err := ParseTrustStore(raw, ""); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("ParseTrustStore() error = %v, want the duplicate origin refused", err)
	}
}

// An interface refused at selection is named with its URL and the rule
// (a relative URL); A2A 0.3 over HTTP+JSON, refused while a2a-go's compat
// client sent 1.0 paths, is selected (a2a-go v2.4.0 speaks the 0.3 REST
// wire).
func TestSelectInterfaceNamesWhatItRefuses(t *testing.T) {
	body := strings.ReplaceAll(card10, `"https://agent.example/a2a/jsonrpc"`, `"/a2a/jsonrpc"`)
	body = strings.ReplaceAll(body, `"https://agent.example/a2a/rest"`, `"a2a/rest"`)
	c, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	_, err = SelectInterface(c.Parsed, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "no_interface: no usable interface: refused: ") || !strings.Contains(err.Error(), `"/a2a/jsonrpc"`) || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative URL: error = %v, want one naming \"/a2a/jsonrpc\" and the rule", err)
	}
	only03REST := strings.ReplaceAll(card03, `"preferredTransport": "JSONRPC"`, `"preferredTransport": "HTTP+JSON"`)
	only03REST = strings.ReplaceAll(only03REST, `"additionalInterfaces": [{"url": "https://legacy.example/rest", "transport": "HTTP+JSON"}],`, ``)
	c, err = Parse([]byte(only03REST))
	if err != nil {
		t.Fatal(err)
	}
	if iface, err := SelectInterface(c.Parsed, nil); err != nil || iface.Binding != "HTTP+JSON" || iface.Version != "0.3" || iface.DeclaredVersion != "" {
		t.Errorf("0.3 HTTP+JSON only: %+v, %v; want HTTP+JSON@0.3 selected", iface, err)
	}
	c, err = Parse([]byte(card03))
	if err != nil {
		t.Fatal(err)
	}
	if iface, err := SelectInterface(c.Parsed, nil); err != nil || iface.Binding != "JSONRPC" {
		t.Errorf("0.3 card with JSON-RPC: %+v, %v; want JSON-RPC selected", iface, err)
	}
}

// A card at 0.2.5 (trpc-a2a-go's library constant) is spoken as the 0.3
// wire, its version kept as declared; a version this client does not
// speak at all is still refused, naming what the card offers.
func TestSelectInterfaceSpeaks02As03(t *testing.T) {
	body := strings.ReplaceAll(card03, `"protocolVersion": "0.3.0",`, `"protocolVersion": "0.2.5",`)
	if body == card03 {
		t.Fatal("card03 has no protocolVersion 0.3.0 to replace")
	}
	c, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	iface, err := SelectInterface(c.Parsed, nil)
	if err != nil || iface.Version != "0.3" || iface.DeclaredVersion != "0.2.5" || iface.Binding != "JSONRPC" {
		t.Errorf("0.2.5 card: %+v, %v; want JSONRPC spoken at 0.3, declared 0.2.5", iface, err)
	}
	c, err = Parse([]byte(strings.ReplaceAll(card03, `"protocolVersion": "0.3.0",`, `"protocolVersion": "0.1.0",`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SelectInterface(c.Parsed, nil); err == nil || !strings.Contains(err.Error(), "JSONRPC@0.1") {
		t.Errorf("0.1 card: error = %v, want no_interface naming JSONRPC@0.1", err)
	}
}
