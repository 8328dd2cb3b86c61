package cards

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// jwsSignDetached computes an ES256 JWS signature over
// protected || '.' || base64url(payload) (RFC 7515 §5.1), independently of
// the library under test.
func jwsSignDetached(protected string, payload []byte, key *ecdsa.PrivateKey) (string, error) {
	input := protected + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return base64.RawURLEncoding.EncodeToString(sig), nil
}
