package contracts

import (
	"crypto/sha256"
	"encoding/hex"
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
		{"kind by metadata", nil, Artifact{ArtifactID: "a", Metadata: map[string]any{"output_kind": "claim_opened"}, Parts: []Part{good}}, ""},
		{"unknown kind", nil, art("a", "refund_issued", good), ReasonKindNotAllowed},
		{"kind conflict", nil, Artifact{ArtifactID: "a", Name: "refund", Metadata: map[string]any{"output_kind": "claim_opened"}, Parts: []Part{good}}, ReasonKindConflict},
		{"output_kind not a string", nil, Artifact{ArtifactID: "a", Name: "claim_opened", Metadata: map[string]any{"output_kind": 7.0}, Parts: []Part{good}}, ReasonKindConflict},
		{"missing id", nil, art("", "claim_opened", good), ReasonMissingID},
		{"no content", nil, art("a", "claim_opened"), ReasonNoContent},
		{"two data parts", nil, art("a", "claim_opened", good, good), ReasonMultipleData},
		{"extra field", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C","order_id":"A-1001","x":1}`)), ReasonSchemaViolation},
		{"malformed type", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C","order_id":[]}`)), ReasonSchemaViolation},
		{"missing field", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C"}`)), ReasonSchemaViolation},
		{"schema needs data", nil, art("a", "claim_opened", Part{Kind: PartText, Text: "hi"}), ReasonSchemaViolation},
		{"out of scope", nil, art("a", "claim_opened", dataPart(`{"claim_id":"C","order_id":"A-2"}`)), ReasonResourceOutOfScope},
		{"claims approval", nil, Artifact{ArtifactID: "a", Name: "claim_opened", Metadata: map[string]any{"Approved": true}, Parts: []Part{good}}, ReasonClaimsAuthority},
		{"part claims scope", nil, art("a", "claim_opened", Part{Kind: PartData, Data: good.Data, Metadata: map[string]any{"scope": "all"}}), ReasonClaimsAuthority},
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

func TestApplyLimitsWithholds(t *testing.T) {
	big := art("big", "claim_opened", Part{Kind: PartText, Text: strings.Repeat("x", 100)})
	small := art("small", "claim_opened", Part{Kind: PartText, Text: "ok"})
	out := ApplyLimits([]Artifact{big, small, small}, Limits{MaxArtifactBytes: 50, MaxArtifacts: 2})
	if out[0].Withheld == "" || len(out[0].Parts) != 0 || out[0].Size != 100 || len(out[0].SHA256) != 64 {
		t.Errorf("big = %+v, want withheld with size and sha256", out[0])
	}
	if out[1].Withheld != "" || out[1].Parts[0].Text != "ok" {
		t.Errorf("small = %+v, want kept", out[1])
	}
	if !strings.HasPrefix(out[2].Withheld, ReasonTooManyArtifacts) {
		t.Errorf("third = %+v, want withheld (count)", out[2])
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

// Streamed chunks are assembled per artifactId before validation (A2A 1.0
// §4.2.2): appends add parts, a new chunk without append replaces, an
// append to an artifact never started is rejected.
func TestAssemblyOfStreamedChunks(t *testing.T) {
	var as Assembly
	text := func(s string) Part { return Part{Kind: PartText, Text: s} }
	as.Add(ArtifactChunk{Artifact: art("a-1", "claim_opened", text("Claim CLM-1 "))})
	as.Add(ArtifactChunk{Artifact: art("a-2", "claim_opened", dataPart(`{"claim_id":"old"}`))})
	as.Add(ArtifactChunk{Artifact: art("a-1", "", text("opened.")), Append: true, LastChunk: true})
	as.Add(ArtifactChunk{Artifact: art("a-2", "claim_opened", dataPart(`{"claim_id":"C-2","order_id":"A-1001"}`)), LastChunk: true})
	as.Add(ArtifactChunk{Artifact: art("a-9", "", text("stray")), Append: true})
	arts := as.Artifacts()
	if len(arts) != 2 || len(arts[0].Parts) != 2 || len(arts[1].Parts) != 1 || !as.Complete("a-1") || !as.Complete("a-2") {
		t.Fatalf("assembled = %+v", arts)
	}
	if len(as.Rejected) != 1 || as.Rejected[0].ArtifactID != "a-9" || !strings.HasPrefix(as.Rejected[0].Reason, ReasonOrphanChunk) {
		t.Fatalf("rejected = %+v, want a-9 %s", as.Rejected, ReasonOrphanChunk)
	}
	d := strictContract()
	d.OutputSchemas = nil
	outs, rej := ValidateArtifacts(d, arts)
	if len(rej) != 0 || len(outs) != 2 || outs[0].Text != "Claim CLM-1 opened." || string(outs[1].Data) != `{"claim_id":"C-2","order_id":"A-1001"}` {
		t.Fatalf("outputs = %+v, rejected = %+v", outs, rej)
	}
}

// An artifact streamed past MaxArtifactBytes is withheld there and then:
// what is kept stops growing (it held every chunk: 500 MB in the worker
// for one agent), while its size and sha256 still cover every chunk.
func TestAssemblyBoundsWhatItKeeps(t *testing.T) {
	as := Assembly{MaxArtifactBytes: 1000}
	chunk := strings.Repeat("x", 400)
	as.Add(ArtifactChunk{Artifact: Artifact{ArtifactID: "big", Name: "claim_opened", Parts: []Part{{Kind: PartText, Text: chunk}}}})
	for range 100 {
		as.Add(ArtifactChunk{Append: true, Artifact: Artifact{ArtifactID: "big", Parts: []Part{{Kind: PartText, Text: chunk}}}})
	}
	as.Add(ArtifactChunk{Artifact: Artifact{ArtifactID: "small", Parts: []Part{{Kind: PartText, Text: "ok"}}}})
	kept := 0
	for _, a := range as.arts {
		for _, p := range a.Parts {
			kept += p.size()
		}
	}
	if kept > 1000+400 {
		t.Errorf("the assembly keeps %d bytes, want at most about MaxArtifactBytes", kept)
	}
	arts := as.Artifacts()
	h := sha256.New()
	for range 101 {
		h.Write([]byte(chunk))
	}
	if big := arts[0]; !strings.HasPrefix(big.Withheld, ReasonTooLarge) || big.Size != 101*400 || big.SHA256 != hex.EncodeToString(h.Sum(nil)) || len(big.Parts) != 0 {
		t.Errorf("big = %+v, want withheld too_large, size %d and the sha256 of every chunk", big, 101*400)
	}
	if arts[1].Withheld != "" || arts[1].Parts[0].Text != "ok" {
		t.Errorf("small = %+v, want kept", arts[1])
	}
	// New artifacts whose ids (or metadata) are large count too: each is
	// withheld with its id cut, and the assembly does not key on the id.
	big := Assembly{MaxArtifactBytes: 1000}
	for n := range 50 {
		big.Add(ArtifactChunk{Artifact: Artifact{ArtifactID: fmt.Sprintf("%d-%s", n, strings.Repeat("i", 1<<20)), Parts: []Part{{Kind: PartText, Text: "x"}}}})
		big.Add(ArtifactChunk{Artifact: Artifact{ArtifactID: fmt.Sprintf("m%d", n), Metadata: map[string]any{"pad": strings.Repeat("m", 1<<20)}, Parts: []Part{{Kind: PartText, Text: "x"}}}})
	}
	held := 0
	for k := range big.index {
		held += len(k)
	}
	for _, a := range big.Artifacts() {
		held += encodedLen(a)
		if a.Withheld == "" {
			t.Errorf("artifact %.20q kept whole", a.ArtifactID)
		}
	}
	if held > 100*2000 {
		t.Errorf("100 artifacts of 1 MiB ids or metadata hold %d bytes, want a few hundred each", held)
	}
	// Many empty parts cost memory their encoding does not show (15,000
	// per artifact took a worker to 4.3 GB), and the whole stream has a
	// budget: past it, new artifacts are withheld as they come.
	tiny := Assembly{MaxArtifactBytes: 256 << 10, MaxTotalBytes: 1 << 20}
	for n := range 40 {
		tiny.Add(ArtifactChunk{Artifact: Artifact{ArtifactID: fmt.Sprintf("t%d", n), Parts: make([]Part, 15000)}})
		tiny.Add(ArtifactChunk{Artifact: Artifact{ArtifactID: fmt.Sprintf("w%d", n), Parts: []Part{{Kind: PartText, Text: strings.Repeat("w", 200<<10)}}}})
	}
	parts, keptBytes := 0, 0
	for _, a := range tiny.Artifacts() {
		parts += len(a.Parts)
		keptBytes += encodedLen(a)
	}
	if parts > 10 || keptBytes > 1<<20 {
		t.Errorf("the assembly keeps %d parts and %d bytes, want a few within its 1 MiB budget", parts, keptBytes)
	}
	// An orphan chunk's id is cut in what is recorded.
	as.Add(ArtifactChunk{Append: true, Artifact: Artifact{ArtifactID: strings.Repeat("o", 1<<20)}})
	if r := as.Rejected[len(as.Rejected)-1]; len(r.ArtifactID) > 400 || len(r.Reason) > 600 {
		t.Errorf("orphan chunk recorded with a %d-byte id and a %d-byte reason", len(r.ArtifactID), len(r.Reason))
	}
}
