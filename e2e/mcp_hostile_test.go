package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2adelegate/delegate/mcp"
)

// httpTokensServer serves e's MCP server over Streamable HTTP behind a
// tokens file with alice's and bob's tokens; it returns the /mcp URL.
func (e *env) httpTokensServer(t *testing.T, aliceTok, bobTok string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeTokens(t, path, `{"actor": "alice", "token": "`+aliceTok+`"}`, `{"actor": "bob", "token": "`+bobTok+`"}`)
	tokens, err := mcp.NewTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", e.mcpServer(t, "").HTTPHandler(mcp.Verifier(tokens, nil), "", 1<<20))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestMCPUnsubscribeTouchesOnlyItsSession: an unsubscribe from a session
// that never subscribed (bob's, for alice's delegation; or alice's other
// session) leaves alice's subscription alone: she is still told when her
// delegation changes. (It used to drop the server's only watch of it.)
func TestMCPUnsubscribeTouchesOnlyItsSession(t *testing.T) {
	e := setup(t)
	aliceTok, bobTok := "alice-token-0123456789", "bob-token-0123456789ab"
	url := e.httpTokensServer(t, aliceTok, bobTok)
	updated := make(chan string, 16)
	alice := httpSessionWith(t, url, aliceTok, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	res, r := call(t, alice, "claims_scenario", map[string]any{"order_id": "A-7007", "scenario": "slow"})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	id, uri := r.LocalWorkflowID, "delegation://"+r.LocalWorkflowID
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Subscribe once the slow task is working: from then on it changes
	// only when it is canceled.
	for r.A2AState != "working" {
		if ctx.Err() != nil {
			t.Fatalf("the slow task is not working: %+v", r)
		}
		_, r = call(t, alice, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 2})
	}
	if err := alice.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Subscribe error = %v", err)
	}
	bob := httpSession(t, url, bobTok)
	if err := bob.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Logf("bob's Unsubscribe error = %v", err)
	}
	alice2 := httpSession(t, url, aliceTok)
	if err := alice2.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Logf("alice's other session's Unsubscribe error = %v", err)
	}
	if res, _ := call(t, alice, mcp.ToolCancel, map[string]any{"local_workflow_id": id, "reason": "test"}); res.IsError {
		t.Fatalf("cancel: %s", text(res))
	}
	select {
	case u := <-updated:
		if u != uri {
			t.Fatalf("notified of %s, want %s", u, uri)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("alice was not notified that her delegation ended: another session's unsubscribe dropped her subscription")
	}
}
