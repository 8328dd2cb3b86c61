package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/a2adelegate/delegate/contracts"
)

// The bounds of the issuer's key set (keySet).
const (
	// JWKSRefreshInterval is the least time between two fetches of the
	// issuer's JWKS: a JWT naming a key the set does not hold makes the
	// server fetch it again at most this often.
	JWKSRefreshInterval = 30 * time.Second
	// JWKSMaxAge is the age of the fetched keys past which a JWT whose kid
	// the set holds, but whose signature that key does not verify, may
	// make the server fetch them again (within JWKSRefreshInterval): an
	// issuer that put new key material under an old kid.
	JWKSMaxAge = time.Hour
	// MaxJWKSBytes bounds the issuer's JWKS document.
	MaxJWKSBytes = 1 << 20
)

// keySet is the issuer's JWKS, the one seam where delegate decides when
// to fetch it. go-oidc's RemoteKeySet (v3.21) fetches the JWKS again
// every time a signature does not verify, whatever its kid: every
// request with a badly signed JWT was a request to the issuer (50 bad
// tokens, 50 fetches), before any rate limit applies, since the actor is
// only known once a token is verified. Here a fetch happens only for a
// kid the set does not hold (or a JWT without kid), or, for a kid it
// holds, once the keys are JWKSMaxAge old; and at most once every
// JWKSRefreshInterval, however many requests ask at once (those that
// arrive while a fetch runs wait for it).
type keySet struct {
	url    string
	client *http.Client
	every  time.Duration
	maxAge time.Duration

	fetchMu sync.Mutex // held for a fetch: one at a time

	mu      sync.Mutex
	byKid   map[string][]crypto.PublicKey
	all     []crypto.PublicKey
	fetched time.Time // the last successful fetch
	tried   time.Time // the last fetch, successful or not
	fetches int       // fetches made (tests)
}

var _ oidc.KeySet = (*keySet)(nil)

func newKeySet(url string) *keySet {
	return &keySet{url: url, every: JWKSRefreshInterval, maxAge: JWKSMaxAge, client: &http.Client{
		Timeout: 10 * time.Second,
		// The keys decide who every request is: a redirect may not leave
		// https (or loopback, as the issuer's own URL).
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			return checkKeyURL(req.URL.String())
		},
	}}
}

// VerifySignature verifies jwt's signature with the key its kid names
// (with every key when it names none) and returns its payload. The
// verifier (oidc.IDTokenVerifier) checked its algorithm before.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	kid, err := kidOf(jwt)
	if err != nil {
		return nil, err
	}
	keys, known, fresh := k.lookup(kid)
	if payload, err := verifyWith(jwt, keys); err == nil {
		return payload, nil
	}
	if known && fresh {
		// A key of that kid is held and was fetched lately: the token is
		// wrong, not the keys.
		return nil, errors.New("signature does not verify with the issuer's key " + quoteKid(kid))
	}
	if !k.refresh() {
		return nil, fmt.Errorf("no key of the issuer verifies the signature (kid %s; keys fetched again at most every %s)", quoteKid(kid), k.every)
	}
	keys, _, _ = k.lookup(kid)
	if payload, err := verifyWith(jwt, keys); err == nil {
		return payload, nil
	}
	return nil, fmt.Errorf("no key of the issuer verifies the signature (kid %s)", quoteKid(kid))
}

// lookup returns the keys a JWT with kid is tried with, whether the set
// holds kid, and whether the keys are younger than maxAge.
func (k *keySet) lookup(kid string) (keys []crypto.PublicKey, known, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fresh = !k.fetched.IsZero() && time.Since(k.fetched) < k.maxAge
	if kid == "" {
		return k.all, false, fresh
	}
	keys, known = k.byKid[kid]
	return keys, known, fresh
}

// refresh fetches the JWKS unless it was fetched (or tried) less than
// every ago, and reports whether keys newer than the caller's are held.
func (k *keySet) refresh() bool {
	asked := time.Now()
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.Lock()
	tried, fetched := k.tried, k.fetched
	k.mu.Unlock()
	if fetched.After(asked) {
		return true // fetched while this one waited
	}
	if !tried.IsZero() && time.Since(tried) < k.every {
		return false
	}
	byKid, all, err := k.fetch()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tried = time.Now()
	k.fetches++
	if err != nil {
		return false
	}
	k.byKid, k.all, k.fetched = byKid, all, k.tried
	return true
}

func (k *keySet) fetch() (map[string][]crypto.PublicKey, []crypto.PublicKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.client.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: HTTP %d", k.url, resp.StatusCode)
	}
	if len(b) > MaxJWKSBytes {
		return nil, nil, fmt.Errorf("GET %s: over %d bytes", k.url, MaxJWKSBytes)
	}
	// A key of a type or curve this build does not read is skipped (RFC
	// 7517 §5), not the whole set.
	set, err := jwk.Parse(b, jwk.WithIgnoreParseError(true))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", k.url, err)
	}
	byKid := map[string][]crypto.PublicKey{}
	var all []crypto.PublicKey
	for i := range set.Len() {
		key, _ := set.Key(i)
		if key.KeyUsage() == string(jwk.ForEncryption) {
			continue
		}
		var raw any
		if err := key.Raw(&raw); err != nil {
			continue
		}
		pub, ok := publicKey(raw)
		if !ok {
			continue // a symmetric or private key has no place in a JWKS
		}
		all = append(all, pub)
		byKid[key.KeyID()] = append(byKid[key.KeyID()], pub)
	}
	return byKid, all, nil
}

// publicKey is raw when it is a public key oidc.StaticKeySet verifies
// with (RSA, ECDSA, Ed25519).
func publicKey(raw any) (crypto.PublicKey, bool) {
	switch raw.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return raw, true
	}
	return nil, false
}

func verifyWith(jwt string, keys []crypto.PublicKey) ([]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	return (&oidc.StaticKeySet{PublicKeys: keys}).VerifySignature(context.Background(), jwt)
}

// kidOf reads the kid of a compact JWS's protected header ("" for none).
func kidOf(jwt string) (string, error) {
	head, _, ok := strings.Cut(jwt, ".")
	if !ok || len(head) > 8<<10 {
		return "", errors.New("not a compact JWS")
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", errors.New("not a compact JWS: its header is not base64url")
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return "", errors.New("not a compact JWS: its header is not a JSON object with a string kid")
	}
	return h.Kid, nil
}

func quoteKid(kid string) string {
	if kid == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", contracts.Truncate(kid, 64))
}
