package push

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.temporal.io/api/serviceerror"

	"github.com/a2adelegate/delegate/contracts"
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
	tok := Token(key, "claim-1", "t-1")
	completed := `{"statusUpdate":{"taskId":"t-1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T10:00:02Z"}}}`
	working := `{"task":{"id":"t-1","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T10:00:01Z"}}}`
	for _, tc := range []struct {
		name, wid, header, token, body string
		want                           int
	}{
		{"a notification", "claim-1", "A2A-Notification-Token", tok, completed, 200},
		{"the same again: replayed", "claim-1", "A2A-Notification-Token", tok, completed, 409},
		{"an older one: stale", "claim-1", "A2A-Notification-Token", tok, working, 409},
		{"no token", "claim-1", "", "", completed, 401},
		{"a forged token", "claim-1", "A2A-Notification-Token", "forged", completed, 401},
		{"the token of another delegation", "claim-2", "A2A-Notification-Token", tok, completed, 401},
		{"a push for another task with this task's token", "claim-1", "A2A-Notification-Token", tok, strings.ReplaceAll(completed, `"t-1"`, `"t-2"`), 401},
		{"not JSON", "claim-1", "A2A-Notification-Token", tok, "{", 400},
		{"no task id", "claim-1", "A2A-Notification-Token", tok, `{"statusUpdate":{"status":{}}}`, 400},
		{"too large", "claim-1", "A2A-Notification-Token", tok, `{"task":{"id":"` + strings.Repeat("x", MaxNotificationBytes) + `"}}`, 413},
		{"an ended delegation", "gone", "A2A-Notification-Token", Token(key, "gone", "t-9"), `{"task":{"id":"t-9","status":{"state":"completed"}}}`, 404},
		{"the 0.3 form and header", "claim-3", "X-A2A-Notification-Token", Token(key, "claim-3", "t-3"), `{"kind":"task","id":"t-3","contextId":"c","status":{"state":"completed","timestamp":"2026-11-30T10:00:05Z"}}`, 200},
		{"the token as Authorization: Bearer", "claim-4", "Authorization", "Bearer " + Token(key, "claim-4", "t-4"), `{"task":{"id":"t-4","status":{"state":"TASK_STATE_WORKING"}}}`, 200},
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
	want := map[string]int64{"accepted": 3, "replayed": 1, "stale": 1, "bad_token": 5, "malformed": 2, "too_large": 1, "unknown_delegation": 1}
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
	if err != nil || s.URL("claim 1/x") != "https://hooks.example/a2a/claim%201%2Fx" {
		t.Errorf("URL = %q, %v", s.URL("claim 1/x"), err)
	}
	if Token(s.Key, "a", "bc") == Token(s.Key, "ab", "c") {
		t.Error("tokens of different (workflow, task) pairs collide")
	}
}
