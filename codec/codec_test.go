package codec

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func secret(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, KeySize))
}

func mustKeys(t *testing.T, text string) *Keys {
	t.Helper()
	k, err := ParseKeys(text)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealAndOpen(t *testing.T) {
	k := mustKeys(t, "k1:"+secret(1))
	dc := k.DataConverter()
	p, err := dc.ToPayload(map[string]string{"text": "photo attached: box.jpg"})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata["encoding"]) != MetadataEncoding || string(p.Metadata[MetadataKeyID]) != "k1" {
		t.Fatalf("metadata = %v, want sealed with k1", p.Metadata)
	}
	if bytes.Contains(p.Data, []byte("photo")) || bytes.Contains(p.Data, []byte("json/plain")) {
		t.Fatal("the sealed payload holds the plaintext or its encoding")
	}
	var got map[string]string
	if err := dc.FromPayload(p, &got); err != nil || got["text"] != "photo attached: box.jpg" {
		t.Fatalf("FromPayload = %v, %v", got, err)
	}
	// Two seals of one value differ (fresh nonce).
	q, _ := dc.ToPayload(map[string]string{"text": "photo attached: box.jpg"})
	if bytes.Equal(p.Data, q.Data) {
		t.Error("two seals are equal: the nonce is not fresh")
	}
}

// Rotation: a ring with a new key appended encrypts with it and still
// opens what the old key sealed; a ring without the old key says which
// key it lacks.
func TestRotation(t *testing.T) {
	old := mustKeys(t, "k1:"+secret(1))
	rotated := mustKeys(t, "# rotated\nk1:"+secret(1)+"\nk2:"+secret(2))
	p, _ := old.DataConverter().ToPayload("question")
	var s string
	if err := rotated.DataConverter().FromPayload(p, &s); err != nil || s != "question" {
		t.Fatalf("rotated ring opening a k1 payload: %q, %v", s, err)
	}
	q, _ := rotated.DataConverter().ToPayload("answer")
	if id := string(q.Metadata[MetadataKeyID]); id != "k2" {
		t.Errorf("rotated ring seals with %q, want k2 (the last)", id)
	}
	only2 := mustKeys(t, "k2:"+secret(2))
	err := only2.DataConverter().FromPayload(p, &s)
	if err == nil || !strings.Contains(err.Error(), `key "k1"`) {
		t.Errorf("opening k1 without it: %v, want an error naming k1", err)
	}
}

func TestAlteredAndForeignPayloads(t *testing.T) {
	k := mustKeys(t, "k1:"+secret(1))
	p, _ := k.DataConverter().ToPayload("x")
	p.Data[len(p.Data)-1] ^= 1
	if _, err := k.Codec().Decode([]*commonpb.Payload{p}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("altered payload: %v", err)
	}
	// Another key with the same id: does not open.
	other := mustKeys(t, "k1:"+secret(9))
	q, _ := other.DataConverter().ToPayload("x")
	if _, err := k.Codec().Decode([]*commonpb.Payload{q}); err == nil {
		t.Error("a payload sealed with another k1 opened")
	}
	// A payload written before encryption is read as it is.
	plain, _ := converter.GetDefaultDataConverter().ToPayload("before")
	var s string
	if err := k.DataConverter().FromPayload(plain, &s); err != nil || s != "before" {
		t.Errorf("unsealed payload: %q, %v", s, err)
	}
}

func TestParseKeysErrorsNameTheRuleNotTheSecret(t *testing.T) {
	for text, want := range map[string]string{
		"":                                     "no encryption key",
		"k1" + secret(1):                       "key 1: want ID:BASE64",
		"k1:" + secret(1)[:20]:                 "bytes, an AES-256 key is 32",
		"k1:not base64!!":                      `key 1: the secret (after the colon) is not base64`,
		"bad id:" + secret(1):                  `key 1: the id (before the colon)`,
		"k1:" + secret(1) + ",k1:" + secret(2): `key 2: its id is given twice`,
		secret(1) + ":k1":                      `key 1: the id (before the colon)`, // the wrong way round
	} {
		_, err := ParseKeys(text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%.12q…) = %v, want %q", text, err, want)
			continue
		}
		if strings.Contains(err.Error(), secret(1)[:12]) || strings.Contains(err.Error(), secret(2)[:12]) {
			t.Errorf("error %q shows a secret", err)
		}
	}
	k, err := ParseKeys(" k1 : " + secret(1) + " , k2:" + strings.TrimRight(base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32)), "=") + "\n")
	if err != nil || strings.Join(k.IDs(), ",") != "k1,k2" {
		t.Errorf("ParseKeys(spaces, commas, raw URL base64) = %v, %v", k, err)
	}
}

func TestServer(t *testing.T) {
	k := mustKeys(t, "k1:"+secret(1))
	srv := httptest.NewServer(Handler(k, ServerOptions{Origins: []string{"http://ui.example"}, Token: "t0k"}))
	defer srv.Close()
	sealed, _ := k.DataConverter().ToPayload("the question")
	req := func(method, path, origin, auth, body string) *http.Response {
		r, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	payloads := `{"payloads":[{"metadata":{"encoding":"` + base64.StdEncoding.EncodeToString([]byte(MetadataEncoding)) +
		`","encryption-key-id":"` + base64.StdEncoding.EncodeToString([]byte("k1")) +
		`","encryption-cipher":"` + base64.StdEncoding.EncodeToString([]byte(CipherAES256GCM)) +
		`"},"data":"` + base64.StdEncoding.EncodeToString(sealed.Data) + `"}]}`

	resp := req("POST", "/decode", "http://ui.example", "Bearer t0k", payloads)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(`"the question"`))) {
		t.Errorf("decode: %d %s", resp.StatusCode, b)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "http://ui.example" {
		t.Errorf("CORS origin = %q", got)
	}
	if resp := req("POST", "/decode", "http://evil.example", "Bearer t0k", payloads); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("another origin got CORS headers")
	}
	if resp := req("POST", "/decode", "http://ui.example", "", payloads); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	if resp := req("POST", "/decode", "http://ui.example", "Bearer wrong", payloads); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", resp.StatusCode)
	}
	if resp := req("OPTIONS", "/decode", "http://ui.example", "", ""); resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	big := `{"payloads":[{"data":"` + strings.Repeat("A", MaxRequestBytes) + `"}]}`
	if resp := req("POST", "/encode", "", "Bearer t0k", big); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("oversized body: %d, want 400", resp.StatusCode)
	}
}

// A payload the ring cannot open, decoded into a converter.RawValue (how
// the workflow receives every Signal), is handed over sealed instead of
// failing: go.temporal.io/sdk dropped such a Signal (a revoke sealed with
// a key the worker lacked stopped nothing). Into anything else it fails as
// before.
func TestUnopenedPayloadIsHandedOverRaw(t *testing.T) {
	k1 := mustKeys(t, "k1:"+secret(1))
	k2 := mustKeys(t, "k2:"+secret(2))
	p, err := k2.DataConverter().ToPayloads(map[string]string{"reason": "stop"})
	if err != nil {
		t.Fatal(err)
	}
	var raw converter.RawValue
	if err := k1.DataConverter().FromPayloads(p, &raw); err != nil || !Sealed(raw.Payload()) || KeyID(raw.Payload()) != "k2" {
		t.Errorf("into a RawValue: %v, %v; want the payload sealed with k2", raw.Payload().GetMetadata(), err)
	}
	if err := k1.DataConverter().FromPayload(p.Payloads[0], &raw); err != nil || !Sealed(raw.Payload()) {
		t.Errorf("FromPayload into a RawValue: %v", err)
	}
	var m map[string]string
	if err := k1.DataConverter().FromPayloads(p, &m); err == nil || !strings.Contains(err.Error(), `"k2"`) {
		t.Errorf("into a map: %v, want the error naming k2", err)
	}
	// What the ring opens is opened, into a RawValue too.
	if err := k2.DataConverter().FromPayloads(p, &raw); err != nil || Sealed(raw.Payload()) {
		t.Errorf("k2 into a RawValue: %v", err)
	}
}
