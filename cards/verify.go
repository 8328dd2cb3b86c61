package cards

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/gowebpki/jcs"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// AllowedAlgorithms are the JWS algorithms accepted on an Agent Card
// signature: asymmetric only; never "none", never HMAC.
var AllowedAlgorithms = []string{"ES256", "ES384", "ES512", "EdDSA", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}

// JWKSFetcher fetches a JWK Set from a jku URL (through the HTTP guard).
type JWKSFetcher func(ctx context.Context, url string) ([]byte, error)

// Verify checks the signatures of a card body as received (A2A 1.0
// §8.4.3). For each entry of "signatures": the protected header's alg must
// be in AllowedAlgorithms and carry a kid; the key is looked up by kid in
// the trust store entry of origin, or, when the header names a jku on the
// entry's jku_allowlist, in the JWK Set fetched from it (a jku off the
// allowlist is never fetched); a revoked key or one past its not_after is
// not used. The payload is the RFC 8785 form of the card without
// "signatures", and, if that does not verify, of the card with its
// default-valued fields removed (§8.4.1, see RemoveDefaults); it is
// verified as a detached JWS payload (lestrrat-go/jwx/v2). One valid
// signature by a trusted key is enough.
func Verify(ctx context.Context, body []byte, origin string, ts *TrustStore, fetch JWKSFetcher, now time.Time) contracts.CardVerification {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return contracts.CardVerification{Status: contracts.SigUnverified, Reason: "card is not a JSON object"}
	}
	var sigs []struct {
		Protected string         `json:"protected"`
		Signature string         `json:"signature"`
		Header    map[string]any `json:"header"`
	}
	if raw, ok := obj["signatures"]; ok {
		if err := json.Unmarshal(raw, &sigs); err != nil {
			return contracts.CardVerification{Status: contracts.SigUnverified, Reason: "signatures: " + err.Error()}
		}
	}
	if len(sigs) == 0 {
		return contracts.CardVerification{Status: contracts.SigUnsigned}
	}
	payloads, err := signingPayloads(obj)
	if err != nil {
		return contracts.CardVerification{Status: contracts.SigUnverified, Reason: err.Error()}
	}
	at := ts.For(origin)
	var reasons []string
	for i, sig := range sigs {
		kid, payload, err := verifyOne(ctx, sig.Protected, sig.Signature, payloads, at, fetch, now)
		if err == nil {
			return contracts.CardVerification{Status: contracts.SigVerified, KeyID: kid, Payload: payload}
		}
		reasons = append(reasons, fmt.Sprintf("signatures[%d]: %v", i, err))
	}
	return contracts.CardVerification{Status: contracts.SigUnverified, Reason: strings.Join(reasons, "; ")}
}

type protectedHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Jku  string   `json:"jku"`
	Typ  string   `json:"typ"`
	Crit []string `json:"crit"`
}

func verifyOne(ctx context.Context, protected, signature string, payloads [][]byte, at *AgentTrust, fetch JWKSFetcher, now time.Time) (string, []byte, error) {
	hb, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(protected, "="))
	if err != nil {
		return "", nil, fmt.Errorf("protected header is not base64url: %w", err)
	}
	var h protectedHeader
	if err := json.Unmarshal(hb, &h); err != nil {
		return "", nil, fmt.Errorf("protected header is not JSON: %w", err)
	}
	if !slices.Contains(AllowedAlgorithms, h.Alg) {
		return "", nil, fmt.Errorf("alg %q is not allowed (asymmetric algorithms only: %v)", h.Alg, AllowedAlgorithms)
	}
	if len(h.Crit) > 0 {
		return "", nil, fmt.Errorf("crit %v is not understood", h.Crit)
	}
	if h.Kid == "" {
		return "", nil, errors.New("protected header has no kid")
	}
	if p, ok := at.Keys[h.Kid]; ok {
		if p.Revoked {
			return "", nil, fmt.Errorf("key %q is revoked", h.Kid)
		}
		if p.NotAfter != nil && now.After(*p.NotAfter) {
			return "", nil, fmt.Errorf("key %q expired at %s", h.Kid, p.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	key, found := at.keys.LookupKeyID(h.Kid)
	if !found && h.Jku != "" {
		if !slices.Contains(at.JKUAllowlist, h.Jku) {
			return "", nil, fmt.Errorf("kid %q is not in the trust store and jku %s is not on its jku_allowlist (not fetched)", h.Kid, h.Jku)
		}
		if fetch == nil {
			return "", nil, errors.New("no JWKS fetcher")
		}
		b, err := fetch(ctx, h.Jku)
		if err != nil {
			return "", nil, fmt.Errorf("jku %s: %w", h.Jku, err)
		}
		set, err := jwk.Parse(b)
		if err != nil {
			return "", nil, fmt.Errorf("jku %s: not a JWK Set: %w", h.Jku, err)
		}
		key, found = set.LookupKeyID(h.Kid)
	}
	if !found {
		return "", nil, fmt.Errorf("kid %q is not a trusted key", h.Kid)
	}
	if _, sym := key.(jwk.SymmetricKey); sym {
		return "", nil, fmt.Errorf("key %q is symmetric", h.Kid)
	}
	compact := []byte(protected + ".." + signature)
	var last error
	for _, payload := range payloads {
		if _, err := jws.Verify(compact, jws.WithKey(jwa.SignatureAlgorithm(h.Alg), key), jws.WithDetachedPayload(payload)); err == nil {
			return h.Kid, payload, nil
		} else {
			last = err
		}
	}
	return "", nil, fmt.Errorf("signature by %q does not verify: %v", h.Kid, last)
}

// signingPayloads returns the candidate payloads: the RFC 8785 form of the
// card without "signatures"; then without default values; then, for a card
// that also carries fields outside the A2A 1.0 AgentCard message (a server
// that speaks 0.3 too publishes "url", "preferredTransport", ...), the 1.0
// fields alone without default values: the a2a-js SDK's signer
// (generateAgentCardSignature) signs its 1.0 form of the card. Each is
// tried; the payload that verifies is the card that is used, so fields
// outside it are never trusted.
func signingPayloads(obj map[string]json.RawMessage) ([][]byte, error) {
	first, err := canonicalWithout(obj)
	if err != nil {
		return nil, err
	}
	out := [][]byte{first}
	add := func(p []byte) {
		for _, q := range out {
			if string(q) == string(p) {
				return
			}
		}
		out = append(out, p)
	}
	second, err := CanonicalForSigning(obj)
	if err != nil {
		return nil, err
	}
	add(second)
	v1 := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		if cardFields10[k] {
			v1[k] = v
		}
	}
	if len(v1) != len(obj) {
		third, err := CanonicalForSigning(v1)
		if err != nil {
			return nil, err
		}
		add(third)
	}
	return out, nil
}

// cardFields10 are the fields of the A2A 1.0 AgentCard message (proto
// AgentCard, JSON names).
var cardFields10 = set("name", "description", "supportedInterfaces", "provider", "version", "documentationUrl", "capabilities",
	"securitySchemes", "securityRequirements", "defaultInputModes", "defaultOutputModes", "skills", "signatures", "iconUrl")

func canonicalWithout(obj map[string]json.RawMessage) ([]byte, error) {
	clone := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		if k != "signatures" {
			clone[k] = v
		}
	}
	b, err := json.Marshal(clone)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// CanonicalForSigning is the signing payload of A2A 1.0 §8.4.2: the card
// without "signatures", default values removed (RemoveDefaults), in RFC
// 8785 form.
func CanonicalForSigning(obj map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	delete(v, "signatures")
	b, err = json.Marshal(RemoveDefaults(v))
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// Fields kept even at their default value (A2A 1.0 §8.4.1): REQUIRED and
// `optional` fields of the proto messages of an Agent Card.
var (
	keepCard       = set("name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills", "documentationUrl", "iconUrl")
	keepInterface  = set("url", "protocolBinding", "protocolVersion")
	keepProvider   = set("url", "organization")
	keepCapability = set("streaming", "pushNotifications", "extendedAgentCard")
	keepSkill      = set("id", "name", "description", "tags")
)

func set(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// RemoveDefaults removes, from a decoded Agent Card, the fields that hold
// their default value ("", false, 0, [], {}, null) unless the field is
// REQUIRED or marked optional in the A2A 1.0 proto (A2A 1.0 §8.4.1).
func RemoveDefaults(card map[string]any) map[string]any {
	return pruneObject(card, keepCard, func(key string) (map[string]bool, bool) {
		switch key {
		case "supportedInterfaces":
			return keepInterface, true
		case "skills":
			return keepSkill, true
		case "provider":
			return keepProvider, false
		case "capabilities":
			return keepCapability, false
		}
		return nil, false
	})
}

// pruneObject prunes obj; child tells, for a key, which keys its object (or
// the objects of its array, when the bool is true) keep.
func pruneObject(obj map[string]any, keep map[string]bool, child func(string) (map[string]bool, bool)) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		var ck map[string]bool
		if child != nil {
			ck, _ = child(k)
		}
		v = pruneValue(v, ck)
		if isDefault(v) && !keep[k] {
			continue
		}
		out[k] = v
	}
	return out
}

func pruneValue(v any, keep map[string]bool) any {
	switch t := v.(type) {
	case map[string]any:
		return pruneObject(t, keep, nil)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = pruneValue(e, keep)
		}
		return out
	}
	return v
}

func isDefault(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case float64:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// Sign appends a signature to a card body (A2A 1.0 §8.4.2): the payload is
// CanonicalForSigning of the card, the protected header {alg, typ "JOSE",
// kid, jku?}, the JWS detached. key is a private JWK with an asymmetric
// algorithm (its "alg", or ES256/EdDSA/RS256 by key type).
func Sign(body []byte, key jwk.Key, kid, jku string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("card is not a JSON object: %w", err)
	}
	payload, err := CanonicalForSigning(obj)
	if err != nil {
		return nil, err
	}
	alg, err := signingAlg(key)
	if err != nil {
		return nil, err
	}
	hdr := jws.NewHeaders()
	for k, v := range map[string]any{jws.AlgorithmKey: alg, jws.TypeKey: "JOSE", jws.KeyIDKey: kid} {
		if err := hdr.Set(k, v); err != nil {
			return nil, err
		}
	}
	if jku != "" {
		if err := hdr.Set(jws.JWKSetURLKey, jku); err != nil {
			return nil, err
		}
	}
	compact, err := jws.Sign(nil, jws.WithKey(alg, key, jws.WithProtectedHeaders(hdr)), jws.WithDetachedPayload(payload))
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	parts := strings.Split(string(compact), ".")
	if len(parts) != 3 {
		return nil, errors.New("signing: unexpected JWS form")
	}
	var sigs []map[string]any
	if raw, ok := obj["signatures"]; ok {
		if err := json.Unmarshal(raw, &sigs); err != nil {
			return nil, fmt.Errorf("signatures: %w", err)
		}
	}
	sigs = append(sigs, map[string]any{"protected": parts[0], "signature": parts[2]})
	sb, err := json.Marshal(sigs)
	if err != nil {
		return nil, err
	}
	obj["signatures"] = sb
	return json.MarshalIndent(obj, "", "  ")
}

func signingAlg(key jwk.Key) (jwa.SignatureAlgorithm, error) {
	if a := key.Algorithm().String(); a != "" {
		if !slices.Contains(AllowedAlgorithms, a) {
			return "", fmt.Errorf("key alg %q is not allowed", a)
		}
		return jwa.SignatureAlgorithm(a), nil
	}
	switch key.KeyType() {
	case jwa.EC:
		return jwa.ES256, nil
	case jwa.OKP:
		return jwa.EdDSA, nil
	case jwa.RSA:
		return jwa.RS256, nil
	}
	return "", fmt.Errorf("key type %s cannot sign an Agent Card (asymmetric keys only)", key.KeyType())
}

// LoadSigningKey reads a private, asymmetric JWK (EC, OKP or RSA) from a
// file, for Sign.
func LoadSigningKey(path string) (jwk.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := jwk.ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not a JWK: %w", path, err)
	}
	switch key.(type) {
	case jwk.ECDSAPrivateKey, jwk.OKPPrivateKey, jwk.RSAPrivateKey:
		return key, nil
	}
	return nil, fmt.Errorf("%s: a private EC, OKP or RSA key is needed (got %s)", path, key.KeyType())
}

// VerifyJWT verifies a compact JWS (RFC 7515 §7.1: the JWT an agent signs
// its push notifications with) against the trust store entry of origin,
// by the rules of Verify (asymmetric algorithms, a kid, keys from the
// entry or from a jku on its jku_allowlist fetched through the HTTP
// guard, revoked and expired keys refused), and returns its claims (the
// payload, a JSON object). Errors say why, never quoting the token.
func (f *Fetcher) VerifyJWT(ctx context.Context, token, origin string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWS (three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("JWS payload is not base64url")
	}
	fetch := func(ctx context.Context, jku string) ([]byte, error) {
		b, _, _, err := f.get(ctx, jku, origin, "")
		return b, err
	}
	if _, _, err := verifyOne(ctx, parts[0], parts[2], [][]byte{payload}, f.Trust.For(origin), fetch, f.now()); err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, errors.New("JWS payload is not a JSON object")
	}
	return claims, nil
}
