package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

const kid = "claims-2026"

// signingKey returns a fresh ES256 private JWK.
func signingKey(t *testing.T) jwk.Key {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	_ = k.Set(jwk.AlgorithmKey, jwa.ES256)
	return k
}

// trustFor trusts key for the agent's origin (and for extra origins).
func trustFor(t *testing.T, key jwk.Key, extra ...string) func(string) *cards.TrustStore {
	return func(base string) *cards.TrustStore {
		pub, err := jwk.PublicKeyOf(key)
		if err != nil {
			t.Fatal(err)
		}
		set := jwk.NewSet()
		_ = set.AddKey(pub)
		jwks, _ := json.Marshal(set)
		agents := map[string]*cards.AgentTrust{}
		for _, o := range append([]string{base}, extra...) {
			agents[o] = &cards.AgentTrust{JWKS: jwks}
		}
		raw, _ := json.Marshal(cards.TrustStore{Agents: agents})
		ts, err := cards.ParseTrustStore(raw, "")
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
}

// TestSignedCardVerifiedAndAlteredCardUntrusted: with require_signed_card,
// the lost-parcel delegation against a signed card records
// verified:<kid>; the same card altered in transit ends card_untrusted
// and nothing reaches the agent.
func TestSignedCardVerifiedAndAlteredCardUntrusted(t *testing.T) {
	key := signingKey(t)
	// The tampering proxy is another origin; it is trusted with the same
	// key, so only the signature can tell.
	proxy := httptest.NewUnstartedServer(nil)
	proxyOrigin := "http://" + proxy.Listener.Addr().String()
	e := setup(t, func(o *options) {
		o.agent.SignKey, o.agent.KeyID = key, kid
		o.trust = trustFor(t, key, proxyOrigin)
	})
	proxy.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(e.base + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		// In transit: the interfaces now point at the proxy (an attacker's
		// endpoint), everything else, the signature included, unchanged.
		altered := strings.ReplaceAll(string(body), e.base+"/a2a", proxyOrigin+"/a2a")
		_, _ = w.Write([]byte(altered))
	})
	proxy.Start()
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	d := lostParcel("signed-1", e.base)
	d.RequireSignedCard = true
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"instant"}`)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusCompleted || out.Agent.Signature != "verified:"+kid {
		t.Fatalf("signed card: status %s, signature %q (%+v); want completed, verified:%s", out.Status, out.Agent.Signature, out.Error, kid)
	}
	if e.agent.TaskCount() != 1 {
		t.Fatalf("agent task count = %d, want 1", e.agent.TaskCount())
	}

	d2 := lostParcel("signed-altered", proxyOrigin)
	d2.RequireSignedCard = true
	run, err = startRun(ctx, e.c, d2)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusCardUntrusted || out.Agent.Signature != "unverified" {
		t.Errorf("altered card: status %s, signature %q (%+v); want card_untrusted, unverified", out.Status, out.Agent.Signature, out.Error)
	}
	if out.Error == nil || !strings.Contains(out.Error.Message, "nothing sent") {
		t.Errorf("altered card: error %+v, want nothing sent", out.Error)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("agent task count after the altered card = %d, want still 1 (nothing sent)", n)
	}
}

// TestCardChangeStopsUntilRediscover: while the delegation waits for
// input, a change that touches nothing selected is recorded and does not
// stop it; then the agent drops its JSON-RPC 1.0 interface, so the
// follow-up stops in card-changed with both digests until Signal
// "rediscover", after which the delegation goes on over HTTP+JSON.
func TestCardChangeStopsUntilRediscover(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("changed-1", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitState := func(want string) contracts.State {
		var s contracts.State
		waitFor(t, want, 60*time.Second, func() (bool, string) {
			s, err = dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return s.A2AState == want, s.A2AState
		})
		return s
	}
	before := waitState("input-required")
	e.agent.Update(func(c *a2a.AgentCard) {
		c.Description = "Opens claims. Now with a new description."
		dropJSONRPC10(c)
	})
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo"}); err != nil {
		t.Fatal(err)
	}
	s := waitState("card-changed")
	if len(s.CardChanges) != 1 || !s.CardChanges[0].Matters || s.CardChanges[0].OldDigest != before.Agent.CardDigest ||
		s.CardChanges[0].NewDigest == before.Agent.CardDigest || !strings.Contains(s.CardChanges[0].What, "interface changed") {
		t.Fatalf("card changes = %+v", s.CardChanges)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Fatalf("task count = %d", n)
	}
	if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.SignalRediscover, nil); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusCompleted || out.Protocol.Binding != "HTTP+JSON" || out.InputRounds != 1 {
		t.Fatalf("outcome = %+v, want completed over HTTP+JSON", out)
	}
	if out.Agent.CardDigest == before.Agent.CardDigest {
		t.Errorf("the outcome keeps the old card digest")
	}
	if u, _ := url.Parse(out.Protocol.URL); u == nil || !strings.HasSuffix(u.Path, claimsagent.RESTPath) {
		t.Errorf("protocol url = %s", out.Protocol.URL)
	}
}

// TestCardChangeThatTouchesNothingSelected is recorded and does not stop.
func TestCardChangeThatTouchesNothingSelected(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("changed-2", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "input-required", 60*time.Second, func() (bool, string) {
		s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.Question != nil, s.A2AState
	})
	e.agent.Update(func(c *a2a.AgentCard) { c.Description = "new words" })
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo"}); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.CardChanges) != 1 || s.CardChanges[0].Matters {
		t.Errorf("card changes = %+v, want one that does not matter", s.CardChanges)
	}
}

// dropJSONRPC10 removes the card's JSON-RPC 1.0 interface: a change that
// matters to a delegation using it.
func dropJSONRPC10(c *a2a.AgentCard) {
	var keep []*a2a.AgentInterface
	for _, i := range c.SupportedInterfaces {
		if !(i.ProtocolBinding == a2a.TransportProtocolJSONRPC && i.ProtocolVersion == "1.0") {
			keep = append(keep, i)
		}
	}
	c.SupportedInterfaces = keep
}
