package contracts

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeDelegation decodes and validates a contract strictly.
func BenchmarkDecodeDelegation(b *testing.B) {
	doc := []byte(valid)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeDelegation(doc, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateArtifacts validates a result of 8 artifacts against a
// contract with an output schema and a resource scope.
func BenchmarkValidateArtifacts(b *testing.B) {
	d := strictContract()
	arts := make([]Artifact, 8)
	for i := range arts {
		arts[i] = Artifact{ArtifactID: "a", Name: "claim_opened", Parts: []Part{{Kind: PartData, Data: json.RawMessage(`{"claim_id":"C-1","order_id":"A-1001"}`)}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if outs, _ := ValidateArtifacts(d, arts); len(outs) != 8 {
			b.Fatal("rejected")
		}
	}
}
