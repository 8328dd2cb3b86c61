package contracts

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeDelegation: decoding any bytes returns a contract or an error,
// never a panic; a decoded contract validates.
func FuzzDecodeDelegation(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"output_schemas": {"a": {"$ref": "#/x"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDelegation(data, now)
		if err != nil {
			return
		}
		if err := d.Validate(now); err != nil {
			t.Fatalf("decoded contract does not validate: %v", err)
		}
	})
}

// FuzzValidateArtifacts: any artifact JSON is either an output or a
// rejection, exactly once, never a panic (activities has the same fuzz
// with the worker's ApplyLimits first).
func FuzzValidateArtifacts(f *testing.F) {
	f.Add([]byte(`[{"artifact_id":"a","name":"claim_opened","parts":[{"kind":"data","data":{"claim_id":"C","order_id":"A-1001"}}]}]`))
	f.Add([]byte(`[{"artifact_id":"a","name":"x","metadata":{"output_kind":1},"parts":[{"kind":"file","raw":"AAAA","media_type":"image/png"}]}]`))
	f.Add([]byte(`[{"artifact_id":"","parts":[{"kind":"data","data":[[[[[[]]]]]]}]}]`))
	d := strictContract()
	v, err := NewValidator(d)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var arts []Artifact
		if json.Unmarshal(data, &arts) != nil {
			return
		}
		outs, rej := v.Validate(arts)
		if len(outs)+len(rej) != len(arts) {
			t.Fatalf("%d artifacts gave %d outputs and %d rejections", len(arts), len(outs), len(rej))
		}
	})
}
