package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
)

// TestMixedArtifactsOnTheWorkflowPath: the claims agent returns one valid
// claim and seven artifacts that each break one rule of the contract; the
// Outcome lists exactly the one output and the seven rejections with their
// reasons. With on_invalid_artifact "drop" the same run completes.
func TestMixedArtifactsOnTheWorkflowPath(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	want := map[string]string{
		"extra-field":     contracts.ReasonSchemaViolation,
		"wrong-kind":      contracts.ReasonKindNotAllowed,
		"wrong-type":      contracts.ReasonSchemaViolation,
		"out-of-scope":    contracts.ReasonResourceOutOfScope,
		"claims-approval": contracts.ReasonClaimsAuthority,
		"kind-conflict":   contracts.ReasonKindConflict,
		"image-part":      contracts.ReasonMediaTypeNotAllowed,
	}
	for _, policy := range []string{contracts.OnInvalidFail, contracts.OnInvalidDrop} {
		t.Run(policy, func(t *testing.T) {
			d := lostParcel("mixed-"+policy, e.base)
			d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"mixed"}`)
			d.OutputSchemas = map[string]json.RawMessage{"claim_opened": json.RawMessage(`{
				"type": "object",
				"properties": {"claim_id": {"type": "string"}, "order_id": {"type": "string", "x-resource-ref": true}},
				"required": ["claim_id", "order_id"], "additionalProperties": false}`)}
			d.ResourceScope = []string{"A-1001"}
			d.OnInvalidArtifact = policy
			run, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			var out contracts.Outcome
			if err := run.Get(ctx, &out); err != nil {
				t.Fatal(err)
			}
			wantStatus := contracts.StatusInvalidOutput
			if policy == contracts.OnInvalidDrop {
				wantStatus = contracts.StatusCompleted
			}
			if out.Status != wantStatus {
				t.Errorf("status = %s (%+v), want %s", out.Status, out.Error, wantStatus)
			}
			if len(out.Outputs) != 1 || out.Outputs[0].ArtifactID != "good" || out.Outputs[0].Authority != "none" {
				t.Errorf("outputs = %+v, want only the good claim, as a proposal", out.Outputs)
			}
			if len(out.RejectedArtifacts) != len(want) {
				t.Fatalf("rejected = %+v, want %d", out.RejectedArtifacts, len(want))
			}
			for _, r := range out.RejectedArtifacts {
				if got := strings.SplitN(r.Reason, ":", 2)[0]; got != want[r.ArtifactID] {
					t.Errorf("%s: reason %q, want %s", r.ArtifactID, r.Reason, want[r.ArtifactID])
				}
			}
		})
	}
}

// TestInputModesCheckedBeforeSending: a message whose data the skill does
// not accept is refused before anything reaches the agent.
func TestInputModesCheckedBeforeSending(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := lostParcel("modes-1", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001"}`)
	e.agent.SetInputModes([]string{"text/plain"})
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusProtocolError || out.Error == nil || !strings.Contains(out.Error.Message, "nothing sent") {
		t.Errorf("outcome = %+v, want protocol_error, nothing sent", out)
	}
	if n := e.agent.TaskCount(); n != 0 {
		t.Errorf("agent task count = %d, want 0", n)
	}
}

// A skill the card does not offer is refused before anything is sent, and
// the refusal names the skills the card does offer.
func TestWrongSkillNamesTheOffered(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := lostParcel("wrong-skill-1", e.base)
	d.Skill = "open-clam"
	out := e.outcomeOf(t, ctx, d)
	if out.Error == nil || !strings.Contains(out.Error.Message, `offers no skill "open-clam"; it offers "open-claim"`) {
		t.Fatalf("outcome = %s %+v, want the refusal naming the offered skill", out.Status, out.Error)
	}
	if e.agent.MessageCount() != 0 {
		t.Errorf("agent got %d messages, want none", e.agent.MessageCount())
	}
}
