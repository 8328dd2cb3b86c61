package cards

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/lestrrat-go/jwx/v2/jwa"
)

// BenchmarkVerifySignedCard canonicalizes (RFC 8785) and verifies (ES256)
// a signed card against a trust store. Target: ≤ 200 µs.
func BenchmarkVerifySignedCard(b *testing.B) {
	k := newKey(b, jwa.ES256, "bench")
	raw, _ := json.Marshal(TrustStore{Agents: map[string]*AgentTrust{origin: {JWKS: jwks(b, k)}}})
	ts, err := ParseTrustStore(raw, "")
	if err != nil {
		b.Fatal(err)
	}
	signed, err := Sign([]byte(card10), k.priv, k.kid, "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(ctx, signed, origin, ts, nil, now); v.Status != contracts.SigVerified {
			b.Fatal(v.Reason)
		}
	}
}

// BenchmarkParseCard parses and digests a card.
func BenchmarkParseCard(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(card10)); err != nil {
			b.Fatal(err)
		}
	}
}
