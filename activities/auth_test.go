package activities

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// An agent whose card asks for OAuth 2.0 client credentials (A2A 1.0
// §4.5.4): ResolveCard records the scheme (no secret), SendMessage mints a
// token at call time from the store's origin entry, or from a
// credential_ref bound to the agent's origin; history holds no secret.
func TestOAuth2AgentThroughTheActivities(t *testing.T) {
	const clientSecret = "act1vities-client-secret"
	var mu sync.Mutex
	var minted []string
	var tokenRequests atomic.Int64
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenRequests.Add(1)
		if id, s, ok := r.BasicAuth(); !ok || id != "worker" || s != clientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		mu.Lock()
		tok := fmt.Sprintf("act-token-%d", len(minted)+1)
		minted = append(minted, tok)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	}))
	defer idp.Close()
	tokenURL := idp.URL + "/oauth2/token"

	srv := httptest.NewUnstartedServer(nil)
	agent := claimsagent.New(claimsagent.Config{BaseURL: "http://" + srv.Listener.Addr().String()})
	agent.Update(func(c *a2a.AgentCard) {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{
			"corp": a2a.OAuth2SecurityScheme{Flows: a2a.ClientCredentialsOAuthFlow{TokenURL: tokenURL, Scopes: map[string]string{"claims": "open claims"}}},
		}
		c.SecurityRequirements = a2a.SecurityRequirementsOptions{{"corp": {"claims"}}}
	})
	var refused atomic.Int64
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/a2a/") {
			mu.Lock()
			ok := len(minted) > 0 && r.Header.Get("Authorization") == "Bearer "+minted[len(minted)-1]
			mu.Unlock()
			if !ok {
				refused.Add(1)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		agent.ServeHTTP(w, r)
	})
	srv.Start()
	defer srv.Close()

	store := filepath.Join(t.TempDir(), "credentials.json")
	doc := fmt.Sprintf(`{"origins": {%q: {"oauth2": {"token_url": %q, "client_id": "worker", "client_secret": %q, "scopes": ["claims"]}}},
		"refs": {"claims-ops": {"oauth2": {"token_url": %q, "client_id": "worker", "client_secret": %q}, "origins": [%q]},
		         "elsewhere": {"oauth2": {"token_url": %q, "client_id": "worker", "client_secret": %q}, "origins": ["https://other.example"]}}}`,
		srv.URL, tokenURL, clientSecret, tokenURL, clientSecret, srv.URL, tokenURL, clientSecret)
	if err := os.WriteFile(store, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := a2aclient.LoadCredentials(store)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Logger: quiet, Credentials: creds, SettleWindow: -1}
	env := activityEnv(t, a)
	v, err := env.ExecuteActivity(a.ResolveCard, contracts.ResolveCardInput{CardURL: srv.URL, Skill: claimsagent.SkillID})
	if err != nil {
		t.Fatal(err)
	}
	var card contracts.ResolvedCard
	if err := v.Get(&card); err != nil {
		t.Fatal(err)
	}
	auth := card.Interface.Auth
	if auth == nil || auth.Kind != "oauth2" || auth.Name != "corp" || auth.TokenURL != tokenURL || len(auth.Scopes) != 1 {
		t.Fatalf("ResolveCard() auth = %+v, want the card's oauth2 scheme", auth)
	}
	for _, ref := range []string{"", "claims-ops"} {
		in := contracts.SendInput{Interface: card.Interface, CredentialRef: ref, Message: contracts.OutboundMessage{MessageID: "m-" + ref, Text: "order A-5 lost"}}
		v, err = env.ExecuteActivity(a.SendMessage, in)
		if err != nil {
			t.Fatalf("SendMessage(credential_ref %q) error = %v", ref, err)
		}
		var snap contracts.TaskSnapshot
		if err := v.Get(&snap); err != nil || snap.TaskID == "" {
			t.Fatalf("SendMessage(credential_ref %q) = %+v, %v", ref, snap, err)
		}
		in.CredentialRef = ref
		b, _ := json.Marshal([]any{card, in, snap})
		mu.Lock()
		for _, s := range append([]string{clientSecret}, minted...) {
			if strings.Contains(string(b), s) {
				t.Errorf("a secret is in what history keeps: %s", s)
			}
		}
		mu.Unlock()
	}
	// The ref entry has its own token: two entries, two tokens; none refused.
	if tokenRequests.Load() != 2 || refused.Load() != 0 {
		t.Errorf("token requests %d, refused calls %d; want 2 and 0", tokenRequests.Load(), refused.Load())
	}
	_, err = env.ExecuteActivity(a.SendMessage, contracts.SendInput{Interface: card.Interface, CredentialRef: "elsewhere", Message: contracts.OutboundMessage{MessageID: "m-x", Text: "x"}})
	if category(err) != contracts.ErrTypeCredentialRefNotAllowed {
		t.Errorf("SendMessage(ref bound elsewhere) error = %v, want %s", err, contracts.ErrTypeCredentialRefNotAllowed)
	}
}
