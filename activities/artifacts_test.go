package activities

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
)

func art(id, name string, parts ...contracts.Part) contracts.Artifact {
	return contracts.Artifact{ArtifactID: id, Name: name, Parts: parts}
}

func dataPart(s string) contracts.Part {
	return contracts.Part{Kind: contracts.PartData, Data: json.RawMessage(s)}
}

func TestApplyLimitsWithholds(t *testing.T) {
	big := art("big", "claim_opened", contracts.Part{Kind: contracts.PartText, Text: strings.Repeat("x", 100)})
	small := art("small", "claim_opened", contracts.Part{Kind: contracts.PartText, Text: "ok"})
	out := ApplyLimits([]contracts.Artifact{big, small, small}, contracts.Limits{MaxArtifactBytes: 50, MaxArtifacts: 2})
	if out[0].Withheld == "" || len(out[0].Parts) != 0 || out[0].Size != 100 || len(out[0].SHA256) != 64 {
		t.Errorf("big = %+v, want withheld with size and sha256", out[0])
	}
	if out[1].Withheld != "" || out[1].Parts[0].Text != "ok" {
		t.Errorf("small = %+v, want kept", out[1])
	}
	if !strings.HasPrefix(out[2].Withheld, contracts.ReasonTooManyArtifacts) {
		t.Errorf("third = %+v, want withheld (count)", out[2])
	}
}

// Streamed chunks are assembled per artifactId before validation (A2A 1.0
// §4.2.2): appends add parts, a new chunk without append replaces, an
// append to an artifact never started is rejected.
func TestAssemblyOfStreamedChunks(t *testing.T) {
	var as Assembly
	text := func(s string) contracts.Part { return contracts.Part{Kind: contracts.PartText, Text: s} }
	as.Add(a2aclient.ArtifactChunk{Artifact: art("a-1", "claim_opened", text("Claim CLM-1 "))})
	as.Add(a2aclient.ArtifactChunk{Artifact: art("a-2", "claim_opened", dataPart(`{"claim_id":"old"}`))})
	as.Add(a2aclient.ArtifactChunk{Artifact: art("a-1", "", text("opened.")), Append: true, LastChunk: true})
	as.Add(a2aclient.ArtifactChunk{Artifact: art("a-2", "claim_opened", dataPart(`{"claim_id":"C-2","order_id":"A-1001"}`)), LastChunk: true})
	as.Add(a2aclient.ArtifactChunk{Artifact: art("a-9", "", text("stray")), Append: true})
	arts := as.Artifacts()
	if len(arts) != 2 || len(arts[0].Parts) != 2 || len(arts[1].Parts) != 1 || !as.Complete("a-1") || !as.Complete("a-2") {
		t.Fatalf("assembled = %+v", arts)
	}
	if len(as.Rejected) != 1 || as.Rejected[0].ArtifactID != "a-9" || !strings.HasPrefix(as.Rejected[0].Reason, contracts.ReasonOrphanChunk) {
		t.Fatalf("rejected = %+v, want a-9 %s", as.Rejected, contracts.ReasonOrphanChunk)
	}
	d := contracts.Delegation{AllowedOutputs: []string{"claim_opened"}, WriteAuthority: "none"}
	outs, rej := contracts.ValidateArtifacts(d, arts)
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
	as.Add(a2aclient.ArtifactChunk{Artifact: contracts.Artifact{ArtifactID: "big", Name: "claim_opened", Parts: []contracts.Part{{Kind: contracts.PartText, Text: chunk}}}})
	for range 100 {
		as.Add(a2aclient.ArtifactChunk{Append: true, Artifact: contracts.Artifact{ArtifactID: "big", Parts: []contracts.Part{{Kind: contracts.PartText, Text: chunk}}}})
	}
	as.Add(a2aclient.ArtifactChunk{Artifact: contracts.Artifact{ArtifactID: "small", Parts: []contracts.Part{{Kind: contracts.PartText, Text: "ok"}}}})
	kept := 0
	for _, a := range as.arts {
		kept += contracts.ArtifactSize(contracts.Artifact{Parts: a.Parts})
	}
	if kept > 1000+400 {
		t.Errorf("the assembly keeps %d bytes, want at most about MaxArtifactBytes", kept)
	}
	arts := as.Artifacts()
	h := sha256.New()
	for range 101 {
		h.Write([]byte(chunk))
	}
	if big := arts[0]; !strings.HasPrefix(big.Withheld, contracts.ReasonTooLarge) || big.Size != 101*400 || big.SHA256 != hex.EncodeToString(h.Sum(nil)) || len(big.Parts) != 0 {
		t.Errorf("big = %+v, want withheld too_large, size %d and the sha256 of every chunk", big, 101*400)
	}
	if arts[1].Withheld != "" || arts[1].Parts[0].Text != "ok" {
		t.Errorf("small = %+v, want kept", arts[1])
	}
	// New artifacts whose ids (or metadata) are large count too: each is
	// withheld with its id cut, and the assembly does not key on the id.
	big := Assembly{MaxArtifactBytes: 1000}
	for n := range 50 {
		big.Add(a2aclient.ArtifactChunk{Artifact: contracts.Artifact{ArtifactID: fmt.Sprintf("%d-%s", n, strings.Repeat("i", 1<<20)), Parts: []contracts.Part{{Kind: contracts.PartText, Text: "x"}}}})
		big.Add(a2aclient.ArtifactChunk{Artifact: contracts.Artifact{ArtifactID: fmt.Sprintf("m%d", n), Metadata: json.RawMessage(`{"pad":"` + strings.Repeat("m", 1<<20) + `"}`), Parts: []contracts.Part{{Kind: contracts.PartText, Text: "x"}}}})
	}
	held := 0
	for k := range big.index {
		held += len(k)
	}
	for _, a := range big.Artifacts() {
		held += encodedSize(a)
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
		tiny.Add(a2aclient.ArtifactChunk{Artifact: contracts.Artifact{ArtifactID: fmt.Sprintf("t%d", n), Parts: make([]contracts.Part, 15000)}})
		tiny.Add(a2aclient.ArtifactChunk{Artifact: contracts.Artifact{ArtifactID: fmt.Sprintf("w%d", n), Parts: []contracts.Part{{Kind: contracts.PartText, Text: strings.Repeat("w", 200<<10)}}}})
	}
	parts, keptBytes := 0, 0
	for _, a := range tiny.Artifacts() {
		parts += len(a.Parts)
		keptBytes += encodedSize(a)
	}
	if parts > 10 || keptBytes > 1<<20 {
		t.Errorf("the assembly keeps %d parts and %d bytes, want a few within its 1 MiB budget", parts, keptBytes)
	}
	// An orphan chunk's id is cut in what is recorded.
	as.Add(a2aclient.ArtifactChunk{Append: true, Artifact: contracts.Artifact{ArtifactID: strings.Repeat("o", 1<<20)}})
	if r := as.Rejected[len(as.Rejected)-1]; len(r.ArtifactID) > 400 || len(r.Reason) > 600 {
		t.Errorf("orphan chunk recorded with a %d-byte id and a %d-byte reason", len(r.ArtifactID), len(r.Reason))
	}
}

// FuzzApplyLimitsThenValidate: whatever the agent sent, what the worker
// keeps of it (ApplyLimits) is either an output or a rejection, exactly
// once, never a panic.
func FuzzApplyLimitsThenValidate(f *testing.F) {
	f.Add([]byte(`[{"artifact_id":"a","name":"claim_opened","parts":[{"kind":"data","data":{"claim_id":"C","order_id":"A-1001"}}]}]`))
	f.Add([]byte(`[{"artifact_id":"a","name":"x","metadata":{"output_kind":1},"parts":[{"kind":"file","raw":"AAAA","media_type":"image/png"}]}]`))
	f.Add([]byte(`[{"artifact_id":"","parts":[{"kind":"data","data":[[[[[[]]]]]]}]}]`))
	d := contracts.Delegation{AllowedOutputs: []string{"claim_opened"}, WriteAuthority: "none", Limits: &contracts.Limits{MaxArtifacts: 2, MaxArtifactBytes: 64, MaxJSONDepth: 4}}
	v, err := contracts.NewValidator(d)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var arts []contracts.Artifact
		if json.Unmarshal(data, &arts) != nil {
			return
		}
		arts = ApplyLimits(arts, d.EffectiveLimits())
		outs, rej := v.Validate(arts)
		if len(outs)+len(rej) != len(arts) {
			t.Fatalf("%d artifacts gave %d outputs and %d rejections", len(arts), len(outs), len(rej))
		}
	})
}
