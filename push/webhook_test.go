package push

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

func TestWebhook(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	var relayed []contracts.TaskUpdate
	h := NewHandler(key, func(_ context.Context, wid string, u contracts.TaskUpdate) error {
		if wid == "gone" {
			return serviceerror.NewNotFound("workflow not found")
		}
		relayed = append(relayed, u)
		return nil
	}, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(wid, header, token, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/"+wid, strings.NewReader(body))
		if header != "" {
			req.Header.Set(header, token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tok := Token(key, "claim-1", "t-1", "")
	completed := `{"statusUpdate":{"taskId":"t-1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T10:00:02Z"}}}`
	working := `{"task":{"id":"t-1","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T10:00:01Z"}}}`
	for _, tc := range []struct {
		name, wid, header, token, body string
		want                           int
	}{
		{"a notification", "claim-1", "A2A-Notification-Token", tok, completed, 200},
		{"the same again: replayed", "claim-1", "A2A-Notification-Token", tok, completed, 409},
		{"the same written another way: replayed", "claim-1", "A2A-Notification-Token", tok, " " + strings.ReplaceAll(completed, `,"`, `, "`), 409},
		{"from the future", "claim-1", "A2A-Notification-Token", tok, strings.ReplaceAll(completed, "2026-11-30T10:00:02Z", "2099-01-01T00:00:00Z"), 409},
		{"an older one: stale", "claim-1", "A2A-Notification-Token", tok, working, 409},
		{"no token", "claim-1", "", "", completed, 401},
		{"a forged token", "claim-1", "A2A-Notification-Token", "forged", completed, 401},
		{"the token of another delegation", "claim-2", "A2A-Notification-Token", tok, completed, 401},
		{"a push for another task with this task's token", "claim-1", "A2A-Notification-Token", tok, strings.ReplaceAll(completed, `"t-1"`, `"t-2"`), 401},
		{"not JSON", "claim-1", "A2A-Notification-Token", tok, "{", 400},
		{"no task id", "claim-1", "A2A-Notification-Token", tok, `{"statusUpdate":{"status":{}}}`, 400},
		{"too large", "claim-1", "A2A-Notification-Token", tok, `{"task":{"id":"` + strings.Repeat("x", MaxNotificationBytes) + `"}}`, 413},
		{"an ended delegation", "gone", "A2A-Notification-Token", Token(key, "gone", "t-9", ""), `{"task":{"id":"t-9","status":{"state":"completed"}}}`, 404},
		{"the 0.3 form and header", "claim-3", "X-A2A-Notification-Token", Token(key, "claim-3", "t-3", ""), `{"kind":"task","id":"t-3","contextId":"c","status":{"state":"completed","timestamp":"2026-11-30T10:00:05Z"}}`, 200},
		{"the token as Authorization: Bearer", "claim-4", "Authorization", "Bearer " + Token(key, "claim-4", "t-4", ""), `{"task":{"id":"t-4","status":{"state":"TASK_STATE_WORKING"}}}`, 200},
		{"Authorization with a forged bearer", "claim-4", "Authorization", "Bearer forged", `{"task":{"id":"t-4","status":{"state":"TASK_STATE_COMPLETED"}}}`, 401},
	} {
		if got := post(tc.wid, tc.header, tc.token, tc.body); got != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, got, tc.want)
		}
	}
	if len(relayed) != 3 || relayed[0] != (contracts.TaskUpdate{TaskID: "t-1", State: "TASK_STATE_COMPLETED", Timestamp: "2026-11-30T10:00:02Z"}) || relayed[1].TaskID != "t-3" || relayed[2].TaskID != "t-4" {
		t.Errorf("relayed = %+v, want the three accepted ones", relayed)
	}
	c := h.Counts()
	want := map[string]int64{"accepted": 3, "replayed": 2, "future": 1, "stale": 1, "bad_token": 5, "malformed": 2, "too_large": 1, "unknown_delegation": 1}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("count %s = %d, want %d (all: %v)", k, c[k], v, c)
		}
	}
	resp, _ := http.Get(srv.URL + "/hooks/claim-1")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

func TestSettings(t *testing.T) {
	if _, err := NewSettings("hooks.example/a2a", make([]byte, 32)); err == nil {
		t.Error("a relative URL was accepted")
	}
	if _, err := NewSettings("https://hooks.example/a2a", make([]byte, 16)); err == nil {
		t.Error("a 16-byte key was accepted")
	}
	s, err := NewSettings("https://hooks.example/a2a/", []byte(strings.Repeat("k", 32)))
	if u := s.URL("claim 1/x", "http://agent.example:8080"); err != nil || u != "https://hooks.example/a2a/claim%201%2Fx?agent=http%3A%2F%2Fagent.example%3A8080" {
		t.Errorf("URL = %q, %v", u, err)
	}
	if Token(s.Key, "a", "bc", "o") == Token(s.Key, "ab", "c", "o") || Token(s.Key, "a", "b", "http://x") == Token(s.Key, "a", "b", "http://y") {
		t.Error("tokens of different (workflow, task) pairs collide")
	}
}

// An agent that signs its notifications (a JWT in Authorization, with
// iat and request_body_sha256, as the a2a-python SDK does) is checked
// against the keys the trust store lists for its origin; where the trust
// store requires signatures, an unsigned notification is refused.
func TestSignedNotifications(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := jwk.FromRaw(priv)
	_ = key.Set(jwk.KeyIDKey, "push-1")
	pub, _ := key.PublicKey()
	pubJSON, _ := json.Marshal(pub)
	origin := "http://agent.example"
	ts, err := cards.ParseTrustStore([]byte(`{"agents":{"`+origin+`":{"jwks":{"keys":[`+string(pubJSON)+`]},"require_signature":true}}}`), ".")
	if err != nil {
		t.Fatal(err)
	}
	f := &cards.Fetcher{Trust: ts}
	hkey := []byte(strings.Repeat("k", 32))
	var relayed int
	h := NewHandler(hkey, func(context.Context, string, contracts.TaskUpdate) error { relayed++; return nil }, nil).
		WithSignatures(Signatures{Verify: f.VerifyJWT, Required: func(o string) bool { return ts.For(o).RequireSignature }})
	srv := httptest.NewServer(h)
	defer srv.Close()
	sign := func(claims map[string]any, k jwk.Key) string {
		b, _ := json.Marshal(claims)
		out, err := jws.Sign(b, jws.WithKey(jwa.ES256, k))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	post := func(n int, auth string) int {
		body := fmt.Sprintf(`{"task":{"id":"t-%d","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T10:00:0%dZ"}}}`, n, n)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/claim-9?agent="+url.QueryEscape(origin), strings.NewReader(body))
		req.Header.Set("A2A-Notification-Token", Token(hkey, "claim-9", fmt.Sprintf("t-%d", n), origin))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	bodySum := func(n int) string {
		sum := sha256.Sum256([]byte(fmt.Sprintf(`{"task":{"id":"t-%d","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T10:00:0%dZ"}}}`, n, n)))
		return hex.EncodeToString(sum[:])
	}
	now := time.Now().Unix()
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherKey, _ := jwk.FromRaw(other)
	_ = otherKey.Set(jwk.KeyIDKey, "push-1")
	for _, tc := range []struct {
		name string
		n    int
		auth string
		want int
	}{
		{"signed over this body", 1, sign(map[string]any{"iat": now, "request_body_sha256": bodySum(1)}, key), 200},
		{"unsigned, where signatures are required", 2, "", 401},
		{"signed over another body", 3, sign(map[string]any{"iat": now, "request_body_sha256": bodySum(4)}, key), 401},
		{"signed an hour ago", 5, sign(map[string]any{"iat": now - 3600, "request_body_sha256": bodySum(5)}, key), 401},
		{"signed by an untrusted key with the same kid", 6, sign(map[string]any{"iat": now, "request_body_sha256": bodySum(6)}, otherKey), 401},
	} {
		if got := post(tc.n, tc.auth); got != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, got, tc.want)
		}
	}
	if relayed != 1 || h.Counts()["bad_signature"] != 4 {
		t.Errorf("relayed %d, counts %v", relayed, h.Counts())
	}
}

// A push whose status timestamp is not a string (an epoch number, as some
// servers send) is still relayed: the relay needs the task id and state.
func TestParseToleratesTimestampsOfAnyShape(t *testing.T) {
	for _, body := range []string{
		`{"statusUpdate":{"taskId":"t-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":1733076000}}}`,
		`{"kind":"task","id":"t-1","status":{"state":"completed","timestamp":{"seconds":1}}}`,
	} {
		n, err := parse([]byte(body))
		if err != nil || n.taskID != "t-1" || n.timestamp != "" {
			t.Errorf("parse(%s) = %+v, %v; want task t-1, no timestamp", body, n, err)
		}
	}
	n, err := parse([]byte(`{"statusUpdate":{"taskId":"t-1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-01T18:00:00Z"}}}`))
	if err != nil || n.timestamp != "2026-12-01T18:00:00Z" {
		t.Errorf("parse: %+v, %v; want the RFC 3339 timestamp kept", n, err)
	}
}
