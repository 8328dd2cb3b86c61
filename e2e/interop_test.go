package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/interop"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// requireInterop skips when the a2a-js agents are not installed, unless
// DELEGATE_INTEROP=1 (make test-interop), which makes that a failure.
func requireInterop(t *testing.T) string {
	t.Helper()
	dir, err := interop.DefaultDir()
	if err == nil {
		err = interop.Available(dir)
	}
	if err != nil {
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("interop peers unavailable: %v", err)
		}
		testutil.SkipGroup(t, testutil.GroupInterop, fmt.Sprintf("interop peers unavailable (make test-interop installs them): %v", err))
	}
	return dir
}

// peer is one independent agent: an a2a-js SDK line over one binding.
type peer struct {
	name     string
	sdk      string
	bindings []string
	signed   bool
	card03   bool
	agent    *interop.Agent
}

// jsContract is a contract for the a2a-js claims agent, choosing its
// scenario by the first message's data.
func jsContract(id, cardURL, scenario string, extra map[string]any) contracts.Delegation {
	data := map[string]any{"scenario": scenario, "order_id": "A-1001"}
	for k, v := range extra {
		data[k] = v
	}
	raw, _ := json.Marshal(data)
	d := lostParcel(id, strings.TrimSuffix(cardURL, "/.well-known/agent-card.json"))
	d.Message.Data = raw
	return d
}

// TestInteropA2AJS runs delegations against agents built on @a2a-js/sdk
// 1.x (A2A 1.0, JSON-RPC and HTTP+JSON) and 0.3.x (A2A 0.3, JSON-RPC),
// through every scenario, and asserts the Outcome and the agent's own
// counts. Each item of the issue "Follow independent A2A agents exactly"
// that these peers show is a case here.
func TestInteropA2AJS(t *testing.T) {
	dir := requireInterop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	key := signingKey(t)
	keyJSON, err := json.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	peers := []*peer{
		{name: "js1-jsonrpc", sdk: interop.SDK1, bindings: []string{interop.BindingJSONRPC}},
		{name: "js1-rest", sdk: interop.SDK1, bindings: []string{interop.BindingREST}},
		{name: "js03-jsonrpc", sdk: interop.SDK03, bindings: []string{interop.BindingJSONRPC}},
		{name: "js03-rest-only", sdk: interop.SDK03, bindings: []string{interop.BindingREST}},
		{name: "js1-signed", sdk: interop.SDK1, bindings: []string{interop.BindingJSONRPC}, signed: true},
		{name: "js1-signed-03-fields", sdk: interop.SDK1, bindings: []string{interop.BindingJSONRPC}, signed: true, card03: true},
	}
	var origins []string
	for _, p := range peers {
		o := interop.Options{SDK: p.sdk, Bindings: p.bindings, Dir: dir, Card03Fields: p.card03, WorkDelay: 50 * time.Millisecond}
		if p.signed {
			o.SignJWK = keyJSON
		}
		a, err := interop.Start(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		t.Cleanup(a.Stop)
		p.agent = a
		origins = append(origins, a.URL)
	}
	e := setup(t, func(o *options) { o.trust = trustFor(t, key, origins...) })

	run := func(t *testing.T, _ *peer, d contracts.Delegation) contracts.Outcome {
		t.Helper()
		return e.outcomeOf(t, ctx, d)
	}
	counts := func(t *testing.T, p *peer) interop.Counts {
		t.Helper()
		c, err := p.agent.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	wantCounts := func(t *testing.T, p *peer, messages, tasks, cancels int) {
		t.Helper()
		c := counts(t, p)
		if c.Messages != messages || c.Tasks != tasks || c.Cancels != cancels {
			t.Errorf("agent counts = %+v, want messages %d, tasks %d, cancels %d", c, messages, tasks, cancels)
		}
	}
	waitQuestion := func(t *testing.T, id string) contracts.State {
		t.Helper()
		var s contracts.State
		waitFor(t, "input-required", time.Minute, func() (bool, string) {
			var err error
			s, err = dclient.Get(e.c, id).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return s.Question != nil, s.A2AState
		})
		return s
	}
	claim := func(t *testing.T, out contracts.Outcome) {
		t.Helper()
		if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 || out.Outputs[0].Kind != "claim_opened" {
			t.Fatalf("outcome = %s %+v (outputs %+v), want completed with one claim_opened", out.Status, out.Error, out.Outputs)
		}
		var c struct {
			ClaimID string `json:"claim_id"`
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal(out.Outputs[0].Data, &c); err != nil || c.OrderID != "A-1001" || !strings.HasPrefix(c.ClaimID, "CLM-") {
			t.Errorf("claim = %s (%v)", out.Outputs[0].Data, err)
		}
	}

	t.Run("peers", func(t *testing.T) {
		for _, p := range peers {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				id := func(s string) string { return fmt.Sprintf("interop-%s-%s", p.name, s) }
				reset := func(t *testing.T) {
					if err := p.agent.ResetCounts(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if p.signed {
					// The card signed by the a2a-js signer verifies through
					// the trust store (with 0.3 fields too).
					reset(t)
					d := jsContract(id("signed"), p.agent.CardURL, "instant", nil)
					d.RequireSignedCard = true
					out := run(t, p, d)
					claim(t, out)
					if out.Agent.Signature != "verified:"+kid {
						t.Errorf("signature = %q, want verified:%s", out.Agent.Signature, kid)
					}
					wantCounts(t, p, 1, 1, 0)
					return
				}
				t.Run("lost-parcel", func(t *testing.T) {
					reset(t)
					d := jsContract(id("lost-parcel"), p.agent.CardURL, "lost-parcel", nil)
					r, err := startRun(ctx, e.c, d)
					if err != nil {
						t.Fatal(err)
					}
					s := waitQuestion(t, d.LocalWorkflowID)
					if !strings.Contains(s.Question.Text, "photo of the box") || s.Question.Round != 1 {
						t.Errorf("question = %+v", s.Question)
					}
					if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "interop"}); err != nil {
						t.Fatalf("Answer() error = %v", err)
					}
					var out contracts.Outcome
					if err := r.Get(ctx, &out); err != nil {
						t.Fatal(err)
					}
					claim(t, out)
					if out.InputRounds != 1 {
						t.Errorf("input rounds = %d, want 1 (the republished question is not a new one)", out.InputRounds)
					}
					wantCounts(t, p, 2, 1, 0)
				})
				t.Run("instant", func(t *testing.T) {
					reset(t)
					claim(t, run(t, p, jsContract(id("instant"), p.agent.CardURL, "instant", nil)))
					wantCounts(t, p, 1, 1, 0)
				})
				// Numbers no float64 holds, written by the agent as exact
				// texts, reach the Outcome, the Query state and the
				// history digit for digit.
				t.Run("big-numbers", func(t *testing.T) {
					reset(t)
					d := jsContract(id("big-numbers"), p.agent.CardURL, interop.ScenarioBigNumbers, nil)
					out := run(t, p, d)
					claim(t, out)
					s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
					if err != nil {
						t.Fatal(err)
					}
					hist := exportHistory(t, ctx, e.c, d.LocalWorkflowID)
					for k, v := range interop.BigNumbers {
						member := fmt.Sprintf("%q:%s", k, v)
						if !strings.Contains(string(out.Outputs[0].Data), member) {
							t.Errorf("outcome data %s does not hold %s as the agent wrote it", out.Outputs[0].Data, member)
						}
						if s.Outcome == nil || len(s.Outcome.Outputs) != 1 || !strings.Contains(string(s.Outcome.Outputs[0].Data), member) {
							t.Errorf("the Query state's Outcome does not hold %s", member)
						}
						if !strings.Contains(hist, v) {
							t.Errorf("the history does not hold %s", v)
						}
					}
					wantCounts(t, p, 1, 1, 0)
				})
				for _, tc := range []struct {
					scenario string
					status   contracts.Status
					reason   string
				}{
					{"fail", contracts.StatusFailed, "the order is unknown"},
					{"reject", contracts.StatusRejected, "claims for this skill are closed"},
				} {
					t.Run(tc.scenario, func(t *testing.T) {
						reset(t)
						out := run(t, p, jsContract(id(tc.scenario), p.agent.CardURL, tc.scenario, nil))
						if out.Status != tc.status || out.Error == nil || out.Error.Category != contracts.CategoryRemoteBusiness || !strings.Contains(out.Error.Message, tc.reason) {
							t.Errorf("outcome = %s %+v, want %s with %q", out.Status, out.Error, tc.status, tc.reason)
						}
						wantCounts(t, p, 1, 1, 0)
					})
				}
				t.Run("cancel-mid-task", func(t *testing.T) {
					reset(t)
					d := jsContract(id("cancel"), p.agent.CardURL, "slow", nil)
					r, err := startRun(ctx, e.c, d)
					if err != nil {
						t.Fatal(err)
					}
					waitFor(t, "working", time.Minute, func() (bool, string) {
						s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
						if err != nil {
							return false, err.Error()
						}
						return s.A2AState == "working" && s.RemoteTaskID != "", s.A2AState
					})
					if err := dclient.Get(e.c, d.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "interop"); err != nil {
						t.Fatal(err)
					}
					var out contracts.Outcome
					if err := r.Get(ctx, &out); err != nil {
						t.Fatal(err)
					}
					if out.Status != contracts.StatusCanceled || out.Error == nil || out.Error.Category != contracts.CategoryCanceled {
						t.Errorf("outcome = %s %+v, want canceled (local, confirmed)", out.Status, out.Error)
					}
					wantCounts(t, p, 1, 1, 1)
				})
				// The agent ends the task itself while the operator thinks:
				// the delegation ends with the agent's state and reason, and
				// no answer is ever sent.
				for _, tc := range []struct {
					scenario string
					status   contracts.Status
					reason   string
				}{
					{"self-cancel", contracts.StatusCanceled, "the agent gave up waiting"},
					{"self-fail", contracts.StatusFailed, "the agent timed out"},
					{"self-complete", contracts.StatusCompleted, ""},
				} {
					t.Run(tc.scenario, func(t *testing.T) {
						reset(t)
						d := jsContract(id(tc.scenario), p.agent.CardURL, tc.scenario, map[string]any{"after_ms": 1500})
						d.WaitingPollSeconds = 1
						out := run(t, p, d)
						if tc.status == contracts.StatusCompleted {
							claim(t, out)
						} else if out.Status != tc.status || out.Error == nil || out.Error.Category != contracts.CategoryRemoteBusiness || !strings.Contains(out.Error.Message, tc.reason) {
							t.Errorf("outcome = %s %+v, want %s (remote_business) with %q", out.Status, out.Error, tc.status, tc.reason)
						}
						if out.InputRounds != 0 {
							t.Errorf("input rounds = %d, want 0", out.InputRounds)
						}
						wantCounts(t, p, 1, 1, 0)
					})
				}
			})
		}
	})
}
