package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/interop"
)

// securedPeer is one a2a-js 1.x agent of TestInteropSecuredAgents.
type securedPeer struct {
	name  string
	opts  interop.Options
	agent *interop.Agent
}

// credentialOrigin is the origin the worker's credential must be filed
// under for the interface the peer's card offers: the gRPC target's for a
// gRPC-only peer (cards.InterfaceOrigin), else the agent's.
func (p *securedPeer) credentialOrigin() string {
	if len(p.opts.Bindings) == 1 && p.opts.Bindings[0] == interop.BindingGRPC {
		return "http://" + p.agent.GRPCAddr
	}
	return p.agent.URL
}

// TestInteropSecuredAgents runs delegations against agents built on
// @a2a-js/sdk 1.3 (not by this project) that organizations would run in
// production: secured with OAuth 2.0 client credentials (their own token
// endpoint), with cards in the proto JSON form of securityRequirements
// and in the map form, gRPC-only, and with the skill only in the
// authenticated extended card. Hostile: a card whose tokenUrl points
// elsewhere, and an agent that refuses every token. Each was refused or
// unreachable before (protocol_error malformed card, authorization_denied,
// no_interface, skill not offered).
func TestInteropSecuredAgents(t *testing.T) {
	dir := requireInterop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const clientID, secret = "delegate-worker", "s3cret-of-the-interop-client"
	oauth := func(o interop.Options) interop.Options {
		o.SDK, o.Dir, o.OAuth, o.ClientID, o.ClientSecret = interop.SDK1, dir, true, clientID, secret
		o.WorkDelay = 50 * time.Millisecond
		if len(o.Bindings) == 0 {
			o.Bindings = []string{interop.BindingJSONRPC}
		}
		return o
	}
	peers := []*securedPeer{
		// Tokens live 3 s: the follow-up after the operator's answer needs
		// a new one.
		{name: "oauth-proto", opts: oauth(interop.Options{SecurityForm: interop.SecurityFormProto, TokenTTL: 3 * time.Second})},
		{name: "oauth-map", opts: oauth(interop.Options{SecurityForm: interop.SecurityFormMap})},
		{name: "oauth-grpc-only", opts: oauth(interop.Options{Bindings: []string{interop.BindingGRPC}})},
		{name: "grpc-only", opts: interop.Options{SDK: interop.SDK1, Dir: dir, Bindings: []string{interop.BindingGRPC}, WorkDelay: 50 * time.Millisecond}},
		{name: "extended-card", opts: oauth(interop.Options{ExtendedCard: true})},
		{name: "token-url-elsewhere", opts: oauth(interop.Options{TokenURLOverride: "https://idp.elsewhere.example/oauth/token"})},
		{name: "refuses-tokens", opts: oauth(interop.Options{RefuseTokens: true})},
	}
	origins := map[string]any{}
	trust := map[string]any{}
	for _, p := range peers {
		a, err := interop.Start(ctx, p.opts)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		t.Cleanup(a.Stop)
		p.agent = a
		if a.GRPCAddr != "" {
			// The gRPC port is an origin of its own: the trust entry of the
			// card's origin allows it (docs/trust.md).
			trust[a.URL] = map[string]any{"interface_origins": []string{"http://" + a.GRPCAddr}}
		}
		if p.opts.OAuth {
			origins[p.credentialOrigin()] = map[string]any{"oauth2": map[string]any{
				"token_url": a.TokenURL, "client_id": clientID, "client_secret": secret, "scopes": []string{interop.OAuthScope}}}
		}
	}
	credPath := filepath.Join(t.TempDir(), "credentials.json")
	doc, _ := json.Marshal(map[string]any{"origins": origins})
	if err := os.WriteFile(credPath, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(o *options) {
		o.trust = func(string) *cards.TrustStore {
			raw, _ := json.Marshal(map[string]any{"agents": trust})
			ts, err := cards.ParseTrustStore(raw, "")
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
		o.acts = func(a *activities.Activities, _ string) {
			creds, err := a2aclient.LoadCredentials(credPath)
			if err != nil {
				t.Fatal(err)
			}
			a.Credentials = creds
		}
	})
	byName := map[string]*securedPeer{}
	for _, p := range peers {
		byName[p.name] = p
	}
	counts := func(t *testing.T, p *securedPeer) interop.Counts {
		t.Helper()
		c, err := p.agent.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// answered runs the lost-parcel scenario with one answered round.
	answered := func(t *testing.T, p *securedPeer, beforeAnswer func()) contracts.Outcome {
		t.Helper()
		d := jsContract("secured-"+p.name, p.agent.CardURL, "lost-parcel", nil)
		r, err := startRun(ctx, e.c, d)
		if err != nil {
			t.Fatal(err)
		}
		waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
		if beforeAnswer != nil {
			beforeAnswer()
		}
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached", AnsweredBy: "interop"}); err != nil {
			t.Fatal(err)
		}
		var out contracts.Outcome
		if err := r.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 || out.InputRounds != 1 {
			t.Fatalf("outcome = %s %+v (outputs %d, rounds %d), want completed after one round", out.Status, out.Error, len(out.Outputs), out.InputRounds)
		}
		return out
	}
	stateAuth := func(t *testing.T, id string) *contracts.AuthScheme {
		t.Helper()
		return stateOf(t, ctx, e.c, id).Interface.Auth
	}

	t.Run("peers", func(t *testing.T) {
		t.Run("oauth-proto-token-expires-during-the-round", func(t *testing.T) {
			t.Parallel()
			p := byName["oauth-proto"]
			out := answered(t, p, func() {
				// Every token granted so far has expired at the agent when the
				// follow-up goes: one reused would be refused (Unauthorized).
				asked := time.Now()
				waitFor(t, "the tokens granted before the question to expire", 20*time.Second, func() (bool, string) {
					return time.Since(asked) > p.opts.TokenTTL+500*time.Millisecond, "waiting"
				})
			})
			c := counts(t, p)
			if c.TokenGrants < 2 || c.Messages != 2 || c.Tasks != 1 || c.Unauthorized != 0 {
				t.Errorf("counts = %+v, want at least 2 grants, 2 messages, 1 task, no expired token sent", c)
			}
			if a := stateAuth(t, "secured-"+p.name); a == nil || a.Kind != "oauth2" || a.Name != interop.OAuthScheme || a.TokenURL != p.agent.TokenURL {
				t.Errorf("recorded scheme = %+v, want oauth2 %s at %s", a, interop.OAuthScheme, p.agent.TokenURL)
			}
			if out.Protocol.Binding != "JSONRPC" {
				t.Errorf("binding = %s", out.Protocol.Binding)
			}
		})
		t.Run("oauth-map-form", func(t *testing.T) {
			t.Parallel()
			p := byName["oauth-map"]
			out := e.outcomeOf(t, ctx, jsContract("secured-"+p.name, p.agent.CardURL, "instant", nil))
			if out.Status != contracts.StatusCompleted {
				t.Fatalf("outcome = %s %+v", out.Status, out.Error)
			}
			if c := counts(t, p); c.Unauthorized != 0 || c.TokenGrants != 1 {
				t.Errorf("counts = %+v, want one grant, no refusal", c)
			}
		})
		for _, name := range []string{"grpc-only", "oauth-grpc-only"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				p := byName[name]
				out := answered(t, p, nil)
				if out.Protocol.Binding != "GRPC" || out.Protocol.URL != p.agent.GRPCAddr {
					t.Errorf("protocol = %+v, want GRPC at %s", out.Protocol, p.agent.GRPCAddr)
				}
				c := counts(t, p)
				if c.Messages != 2 || c.Tasks != 1 || c.Unauthorized != 0 {
					t.Errorf("counts = %+v, want 2 messages, 1 task, no refusal", c)
				}
				if p.opts.OAuth && c.TokenGrants < 1 {
					t.Errorf("counts = %+v, want a token granted", c)
				}
			})
		}
		t.Run("extended-card", func(t *testing.T) {
			t.Parallel()
			p := byName["extended-card"]
			out := answered(t, p, nil)
			if !strings.HasPrefix(out.Agent.ExtendedCardDigest, "sha256:") || out.Agent.ExtendedCardDigest == out.Agent.CardDigest {
				t.Errorf("agent = %+v, want the extended card's digest", out.Agent)
			}
			if c := counts(t, p); c.ExtendedCardRequests < 1 || c.Unauthorized != 0 {
				t.Errorf("counts = %+v, want the extended card asked for with a token", c)
			}
		})
		t.Run("token-url-elsewhere", func(t *testing.T) {
			t.Parallel()
			p := byName["token-url-elsewhere"]
			out := e.outcomeOf(t, ctx, jsContract("secured-"+p.name, p.agent.CardURL, "instant", nil))
			if out.Status != contracts.StatusAuthorizationDenied || out.Error == nil || !strings.Contains(out.Error.Message, "idp.elsewhere.example") ||
				!strings.Contains(out.Error.Message, p.agent.TokenURL) {
				t.Errorf("outcome = %s %+v, want authorization_denied naming both token URLs", out.Status, out.Error)
			}
			if c := counts(t, p); c.TokenRequests != 0 || c.Messages != 0 || c.Unauthorized != 0 {
				t.Errorf("counts = %+v, want no token request and nothing sent", c)
			}
		})
		t.Run("refuses-tokens", func(t *testing.T) {
			t.Parallel()
			p := byName["refuses-tokens"]
			out := e.outcomeOf(t, ctx, jsContract("secured-"+p.name, p.agent.CardURL, "instant", nil))
			if out.Status != contracts.StatusAuthorizationDenied {
				t.Errorf("outcome = %s %+v, want authorization_denied", out.Status, out.Error)
			}
			if c := counts(t, p); c.TokenGrants != 2 || c.Unauthorized != 2 || c.Tasks != 0 {
				t.Errorf("counts = %+v, want one refresh (2 grants, 2 refusals), no task", c)
			}
		})

	})

	t.Cleanup(func() {
		// The client secret and every minted token stay out of history.
		for _, p := range peers {
			h := exportHistory(t, context.Background(), e.c, "secured-"+p.name)
			if strings.Contains(h, secret) {
				t.Errorf("%s: the client secret is in the workflow history", p.name)
			}
		}
	})
}
