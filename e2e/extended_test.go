package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// An agent that lists its skill only in its authenticated extended card
// (A2A 1.0 §3.1.11, capabilities.extendedAgentCard): with credentials for
// its origin the worker fetches the extended card over the selected
// interface, finds the skill there and completes the delegation, recording
// the extended card's digest; without them the skill is "not offered" and
// the refusal says why the extended card was not used. Before the change
// the extended card was never asked for.
func TestExtendedCardSkill(t *testing.T) {
	const token = "ext-card-T0KEN-never-logged"
	ext := func(o *options) {
		o.agent.RequireBearer = token
		o.agent.ExtendedCard = true
	}
	e := setup(t, ext, func(o *options) {
		o.acts = func(a *activities.Activities, base string) { a.Credentials = credentialsFile(t, base, token) }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := e.answeredOnce(t, ctx, lostParcel("extended-card", e.base))
	if !strings.HasPrefix(out.Agent.ExtendedCardDigest, "sha256:") || out.Agent.ExtendedCardDigest == out.Agent.CardDigest {
		t.Errorf("agent = %+v, want the extended card's own digest recorded", out.Agent)
	}
	if out.Agent.ExtendedCardSignature != contracts.SigUnsigned {
		t.Errorf("extended card signature = %q, want unsigned", out.Agent.ExtendedCardSignature)
	}

	e2 := setup(t, ext)
	d := lostParcel("extended-card-no-credentials", e2.base)
	run, err := startRun(ctx, e2.c, d)
	if err != nil {
		t.Fatal(err)
	}
	var o contracts.Outcome
	if err := run.Get(ctx, &o); err != nil || o.Status != contracts.StatusProtocolError || o.Error == nil {
		t.Fatalf("without credentials: outcome = %+v, %v; want protocol_error (skill not offered)", o, err)
	}
	for _, want := range []string{`offers no skill "open-claim"`, claimsagent.PublicSkillID, "extended card was not used", "holds no credentials"} {
		if !strings.Contains(o.Error.Message, want) {
			t.Errorf("error %q does not say %q", o.Error.Message, want)
		}
	}
	if n := e2.agent.MessageCount(); n != 0 {
		t.Errorf("the agent got %d message(s), want none", n)
	}
}
