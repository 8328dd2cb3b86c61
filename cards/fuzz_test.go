package cards

import (
	"context"
	"testing"
)

// FuzzParseCard: parsing, digesting, verifying and selecting an interface
// for any bytes never panics.
func FuzzParseCard(f *testing.F) {
	f.Add([]byte(card10))
	f.Add([]byte(card03))
	f.Add([]byte(`{"name":"x","signatures":[{"protected":"e30","signature":""}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := Parse(body)
		if err != nil {
			return
		}
		_ = Verify(context.Background(), body, "https://a.example", nil, nil, now)
		_, _ = SelectInterface(c.Parsed, (&Guard{}).CheckURL)
		if c.Digest == "" {
			t.Fatal("parsed card without a digest")
		}
	})
}
