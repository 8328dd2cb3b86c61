package contracts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

const claimSchema = `{
  "type": "object",
  "properties": {
    "claim_id": {"type": "string"},
    "order_id": {"type": "string", "x-resource-ref": true}
  },
  "required": ["claim_id", "order_id"],
  "additionalProperties": false
}`

func strictContract() Delegation {
	return Delegation{
		LocalWorkflowID: "wf", AgentCardURL: "http://a", Skill: "s", Purpose: "p",
		Message: MessageSpec{Text: "x"}, AllowedOutputs: []string{"claim_opened"},
		Deadline: now.Add(time.Hour), WriteAuthority: "none",
		OutputSchemas: map[string]json.RawMessage{"claim_opened": json.RawMessage(claimSchema)},
		ResourceScope: []string{"A-1001"},
	}
}

func dataPart(s string) Part { return Part{Kind: PartData, Data: json.RawMessage(s)} }

func art(id, name string, parts ...Part) Artifact {
	return Artifact{ArtifactID: id, Name: name, Parts: parts}
}

// TestRejectionReasons is one case per rule of the contract.
func TestRejectionReasons(t *testing.T) {
	good := dataPart(`{"claim_id":"C-1","order_id":"A-1001"}`)
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	tests := []struct {
		name   string
		modify func(*Delegation)
		art    Artifact
		reason string // "" means accepted
	}{
		{"valid", nil, art("a", "claim_opened", good), ""},
		{"kind by metadata", nil, Artifact{ArtifactID: "a", Metadata: json.RawMessage(`{"output_kind":"claim_opened"}`), Parts: []Part{good}}, ""},
		{"unknown kind", nil, art("a", "refund_issued", good), ReasonKindNotAllowed},
		{"kind conflict", nil, Artifact{ArtifactID: "a", Name: "refund", Metadata: json.RawMessage(`{"output_kind":"claim_opened"}`), Parts: []Part{good}}, ReasonKindConflict},
		{"output_kind not a string", nil, Artifact{ArtifactID: "a", Name: "claim_opened", Metadata: json.RawMessage(`{"output_kind":7}`), Parts: []Part{good}}, ReasonKindConflict},
		{"missing id", nil, art("", "claim_opened", good), ReasonMissingID},
		{"no content", nil, art("a", "claim_opened"), ReasonNoContent},
		{"two data parts", nil, art("a", "claim_opened", good, good), ReasonMultipleData},
		{"extra field", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C","order_id":"A-1001","x":1}`)), ReasonSchemaViolation},
		{"malformed type", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C","order_id":[]}`)), ReasonSchemaViolation},
		{"missing field", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C"}`)), ReasonSchemaViolation},
		{"schema needs data", nil, art("a", "claim_opened", Part{Kind: PartText, Text: "hi"}), ReasonSchemaViolation},
		{"out of scope", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C","order_id":"A-2"}`)), ReasonResourceOutOfScope},
		{"claims approval", nil, Artifact{ArtifactID: "a", Name: "claim_opened", Metadata: json.RawMessage(`{"Approved":true}`), Parts: []Part{good}}, ReasonClaimsAuthority},
		{"part claims scope", nil, art("a", "claim_opened", Part{Kind: PartData, Data: good.Data, Metadata: json.RawMessage(`{"scope":"all"}`)}), ReasonClaimsAuthority},
		{"media type", nil, art("a", "claim_opened", good, Part{Kind: PartFile, Raw: []byte("png"), MediaType: "image/png"}), ReasonMediaTypeNotAllowed},
		{"media type allowed by output_modes", func(d *Delegation) {
			d.OutputModes = []string{"application/json", "image/png"}
		}, art("a", "claim_opened", good, Part{Kind: PartFile, Raw: []byte("png"), MediaType: "image/png"}), ""},
		{"file uri recorded", func(d *Delegation) {
			d.OutputModes = []string{"application/json", "application/pdf"}
		}, art("a", "claim_opened", good, Part{Kind: PartFile, URL: "https://x/report.pdf", MediaType: "application/pdf"}), ""},
		{"too large", func(d *Delegation) { d.Limits = &Limits{MaxArtifactBytes: 10} }, art("a", "claim_opened", good), ReasonTooLarge},
		{"too deep", func(d *Delegation) { d.OutputSchemas = nil }, art("a", "claim_opened", dataPart(deep)), ReasonTooDeep},
		{"withheld by the worker", nil, Artifact{ArtifactID: "a", Name: "claim_opened", Withheld: ReasonTooLarge + ": 9 bytes > 1"}, ReasonTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := strictContract()
			if tt.modify != nil {
				tt.modify(&d)
			}
			if err := d.Validate(now); err != nil {
				t.Fatalf("contract invalid: %v", err)
			}
			outs, rej := ValidateArtifacts(d, []Artifact{tt.art})
			if tt.reason == "" {
				if len(outs) != 1 || len(rej) != 0 {
					t.Fatalf("outputs %+v, rejected %+v; want accepted", outs, rej)
				}
				if outs[0].Authority != "none" {
					t.Errorf("authority = %q, want none", outs[0].Authority)
				}
				return
			}
			if len(outs) != 0 || len(rej) != 1 {
				t.Fatalf("outputs %+v, rejected %+v; want rejected with %s", outs, rej, tt.reason)
			}
			if got := strings.SplitN(rej[0].Reason, ":", 2)[0]; got != tt.reason {
				t.Errorf("reason = %q, want %s", rej[0].Reason, tt.reason)
			}
		})
	}
}

func TestSchemaReasonNamesPointer(t *testing.T) {
	_, rej := ValidateArtifacts(strictContract(), []Artifact{art("a", "claim_opened", dataPart(`{"claim_id":5,"order_id":"A-1001"}`))})
	if len(rej) != 1 || !strings.Contains(rej[0].Reason, "/claim_id") {
		t.Fatalf("rejected = %+v, want a reason naming /claim_id", rej)
	}
}

func TestLimitsCountAndTotal(t *testing.T) {
	d := strictContract()
	d.Limits = &Limits{MaxArtifacts: 2, MaxTotalBytes: 90}
	good := func(id string) Artifact {
		return art(id, "claim_opened", dataPart(`{"claim_id":"C-1","order_id":"A-1001"}`)) // 38 bytes
	}
	outs, rej := ValidateArtifacts(d, []Artifact{good("1"), good("2"), good("3")})
	if len(outs) != 2 || len(rej) != 1 || !strings.HasPrefix(rej[0].Reason, ReasonTooManyArtifacts) {
		t.Fatalf("count limit: outputs %d, rejected %+v", len(outs), rej)
	}
	d.Limits = &Limits{MaxTotalBytes: 60}
	outs, rej = ValidateArtifacts(d, []Artifact{good("1"), good("2")})
	if len(outs) != 1 || len(rej) != 1 || !strings.HasPrefix(rej[0].Reason, ReasonTotalTooLarge) {
		t.Fatalf("total limit: outputs %d, rejected %+v", len(outs), rej)
	}
}

func TestCutText(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	got := CutText(long, 51)
	if !strings.HasPrefix(got, strings.Repeat("é", 25)+"…[cut: 200 bytes, sha256:") {
		t.Errorf("CutText() = %q", got)
	}
	if CutText("short", 10) != "short" {
		t.Errorf("CutText(short) changed the text")
	}
}

func TestContractDepthRules(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Delegation)
		field  string
	}{
		{"schema for a kind not allowed", func(d *Delegation) {
			d.OutputSchemas["refund"] = json.RawMessage(`{}`)
		}, "output_schemas.refund"},
		{"schema not a schema", func(d *Delegation) {
			d.OutputSchemas["claim_opened"] = json.RawMessage(`{"type": 12}`)
		}, "output_schemas.claim_opened"},
		{"schema with a remote ref", func(d *Delegation) {
			d.OutputSchemas["claim_opened"] = json.RawMessage(`{"$ref": "http://169.254.169.254/schema"}`)
		}, "output_schemas.claim_opened"},
		{"x-resource-ref not a boolean", func(d *Delegation) {
			d.OutputSchemas["claim_opened"] = json.RawMessage(`{"x-resource-ref": "yes"}`)
		}, "output_schemas.claim_opened"},
		{"bad output mode", func(d *Delegation) { d.OutputModes = []string{"json"} }, "output_modes[0]"},
		{"bad policy", func(d *Delegation) { d.OnInvalidArtifact = "ignore" }, "on_invalid_artifact"},
		{"schema with a reference cycle", func(d *Delegation) {
			d.OutputSchemas["claim_opened"] = json.RawMessage(`{"$ref": "#"}`)
		}, "output_schemas.claim_opened"},
		{"schema that grows exponentially", func(d *Delegation) {
			d.OutputSchemas["claim_opened"] = json.RawMessage(exponentialSchema(22))
		}, "output_schemas.claim_opened"},
		{"limit raised", func(d *Delegation) { d.Limits = &Limits{MaxArtifacts: 1000} }, "limits.max_artifacts"},
		{"limit negative", func(d *Delegation) { d.Limits = &Limits{MaxJSONDepth: -1} }, "limits.max_json_depth"},
		{"empty scope entry", func(d *Delegation) { d.ResourceScope = []string{""} }, "resource_scope[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := strictContract()
			tt.modify(&d)
			err := d.Validate(now)
			var found bool
			if err != nil {
				found = hasFieldError(err, tt.field, "")
			}
			if !found {
				t.Errorf("Validate() error = %v, want one on %s", err, tt.field)
			}
		})
	}
}

func TestCheckInputModes(t *testing.T) {
	if err := CheckInputModes(nil, []string{"application/json"}); err != nil {
		t.Errorf("undeclared modes refused: %v", err)
	}
	if err := CheckInputModes([]string{"text/plain"}, MessageModes("hi", json.RawMessage(`{"a":1}`))); err == nil {
		t.Errorf("data to a text-only skill accepted")
	}
	if err := CheckInputModes([]string{"text/plain; charset=utf-8", "application/json"}, MessageModes("hi", json.RawMessage(`{"a":1}`))); err != nil {
		t.Errorf("CheckInputModes() error = %v", err)
	} // Part kinds for media types, as cards written from trpc-a2a-go's
	// examples give them.
	if err := CheckInputModes([]string{"text", "data"}, MessageModes("hi", json.RawMessage(`{"a":1}`))); err != nil {
		t.Errorf("kinds text and data: %v", err)
	}
	if err := CheckInputModes([]string{"text"}, MessageModes("hi", json.RawMessage(`{"a":1}`))); err == nil {
		t.Errorf("data to a skill of kind text accepted")
	}
}

// TestNarrowContractOfTheSeeds is the read-only delegation about note N-1
// of ../shared/seeds/execution-responsibility.txt: only suggestions about
// N-1 pass; another note, an unknown kind, an extra field and a malformed
// type are rejected, each with its reason.
func TestNarrowContractOfTheSeeds(t *testing.T) {
	d := Delegation{
		LocalWorkflowID: "note-n1", AgentCardURL: "https://organizer.example", Skill: "suggest-categories",
		Purpose: "suggest categories for note N-1", Message: MessageSpec{Text: "Suggest categories for note N-1."},
		AllowedOutputs: []string{"category_suggestion"}, Deadline: now.Add(time.Hour), WriteAuthority: "none",
		ResourceScope: []string{"N-1"},
		OutputSchemas: map[string]json.RawMessage{"category_suggestion": json.RawMessage(`{
			"type": "object",
			"properties": {
				"note_id": {"type": "string", "x-resource-ref": true},
				"categories": {"type": "array", "items": {"type": "string"}, "maxItems": 5}
			},
			"required": ["note_id", "categories"],
			"additionalProperties": false
		}`)},
	}
	if err := d.Validate(now); err != nil {
		t.Fatal(err)
	}
	arts := []Artifact{
		art("ok", "category_suggestion", dataPart(`{"note_id":"N-1","categories":["travel"]}`)),
		art("other-note", "category_suggestion", dataPart(`{"note_id":"N-2","categories":["travel"]}`)),
		art("unknown-kind", "delete_note", dataPart(`{"note_id":"N-1"}`)),
		art("extra-field", "category_suggestion", dataPart(`{"note_id":"N-1","categories":[],"delete":true}`)),
		art("malformed-type", "category_suggestion", dataPart(`{"note_id":["N-1"],"categories":[]}`)),
	}
	outs, rej := ValidateArtifacts(d, arts)
	if len(outs) != 1 || outs[0].ArtifactID != "ok" || outs[0].Authority != "none" {
		t.Fatalf("outputs = %+v, want only ok, as a proposal", outs)
	}
	want := map[string]string{
		"other-note": ReasonResourceOutOfScope, "unknown-kind": ReasonKindNotAllowed,
		"extra-field": ReasonSchemaViolation, "malformed-type": ReasonSchemaViolation,
	}
	if len(rej) != len(want) {
		t.Fatalf("rejected = %+v", rej)
	}
	for _, r := range rej {
		if got := strings.SplitN(r.Reason, ":", 2)[0]; got != want[r.ArtifactID] {
			t.Errorf("%s: reason %q, want %s", r.ArtifactID, r.Reason, want[r.ArtifactID])
		}
	}
}

// exponentialSchema nests anyOf/allOf over $ref n levels deep: validating
// it costs 2^n.
func exponentialSchema(n int) string {
	defs := `"d0": {"type": "number"}`
	for i := 1; i <= n; i++ {
		defs += fmt.Sprintf(`, "d%d": {"anyOf": [{"$ref": "#/$defs/d%d"}, {"allOf": [{"$ref": "#/$defs/d%d"}]}]}`, i, i-1, i-1)
	}
	return fmt.Sprintf(`{"$defs": {%s}, "$ref": "#/$defs/d%d"}`, defs, n)
}

// Two artifacts of one task that share an artifactId: neither becomes an
// output.
func TestDuplicateArtifactIDs(t *testing.T) {
	good := dataPart(`{"claim_id":"C-1","order_id":"A-1001"}`)
	outs, rej := ValidateArtifacts(strictContract(), []Artifact{
		art("a-1", "claim_opened", good), art("a-1", "claim_opened", good), art("a-2", "claim_opened", good),
	})
	if len(outs) != 1 || outs[0].ArtifactID != "a-2" {
		t.Fatalf("outputs = %+v, want only a-2", outs)
	}
	if len(rej) != 2 || !strings.HasPrefix(rej[0].Reason, ReasonDuplicateID) || !strings.HasPrefix(rej[1].Reason, ReasonDuplicateID) {
		t.Fatalf("rejected = %+v, want two %s", rej, ReasonDuplicateID)
	}
}

// Text parts are joined exactly as sent.
func TestTextPartsJoinedAsSent(t *testing.T) {
	d := strictContract()
	d.OutputSchemas = nil
	outs, rej := ValidateArtifacts(d, []Artifact{art("a-1", "claim_opened",
		Part{Kind: PartText, Text: "Claim CLM-1 op"}, Part{Kind: PartText, Text: "ened for A-1001."})})
	if len(rej) != 0 || len(outs) != 1 || outs[0].Text != "Claim CLM-1 opened for A-1001." {
		t.Fatalf("outputs = %+v, rejected %+v", outs, rej)
	}
}
