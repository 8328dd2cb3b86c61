package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
)

// TrustStore says, per agent origin, which keys may sign its Agent Card
// and what the HTTP guard allows for it. It is read from a JSON file
// (`--trust FILE` or DELEGATE_TRUST):
//
//	{
//	  "agents": {
//	    "https://claims.example": {
//	      "jwks": {"keys": [ ...public JWKs... ]},      // or "jwks_file": "claims.jwks.json"
//	      "jku_allowlist": ["https://claims.example/.well-known/jwks.json"],
//	      "require_signature": true,
//	      "keys": {"key-2025": {"not_after": "2026-12-31T00:00:00Z"}, "key-2024": {"revoked": true}},
//	      "allow_http": false,
//	      "allow_private_network": false,
//	      "interface_origins": ["https://api.claims.example"]
//	    }
//	  }
//	}
//
// An origin is scheme://host[:port] as in RFC 6454, lower-case, without a
// default port. The zero TrustStore trusts no key and allows nothing extra.
type TrustStore struct {
	Agents map[string]*AgentTrust `json:"agents"`
}

// AgentTrust is the trust entry of one agent origin.
type AgentTrust struct {
	// JWKS holds the trusted public keys (a JWK Set, RFC 7517 §5).
	JWKS json.RawMessage `json:"jwks,omitempty"`
	// JWKSFile is a JWK Set file, relative to the trust file.
	JWKSFile string `json:"jwks_file,omitempty"`
	// JKUAllowlist lists the jku URLs (A2A 1.0 §8.4.2) that may be fetched
	// for this agent; a jku not on it is never fetched.
	JKUAllowlist []string `json:"jku_allowlist,omitempty"`
	// RequireSignature makes a verified signature mandatory.
	RequireSignature bool `json:"require_signature,omitempty"`
	// Keys holds per-kid restrictions.
	Keys map[string]KeyPolicy `json:"keys,omitempty"`
	// AllowHTTP allows plain http to a non-loopback origin (development).
	AllowHTTP bool `json:"allow_http,omitempty"`
	// AllowPrivateNetwork allows private, link-local and unspecified
	// addresses for this origin.
	AllowPrivateNetwork bool `json:"allow_private_network,omitempty"`
	// InterfaceOrigins lists other origins the card's interfaces may use.
	InterfaceOrigins []string `json:"interface_origins,omitempty"`

	keys jwk.Set
}

// KeyPolicy restricts one key: revoked keys and keys past NotAfter are
// never used (A2A 1.0 §8.4.3).
type KeyPolicy struct {
	NotAfter *time.Time `json:"not_after,omitempty"`
	Revoked  bool       `json:"revoked,omitempty"`
}

// LoadTrustStore reads and checks a trust file. Errors name the field.
func LoadTrustStore(path string) (*TrustStore, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	ts, err := ParseTrustStore(raw, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("trust store %s: %w", path, err)
	}
	return ts, nil
}

// ParseTrustStore parses a trust store; relative jwks_file paths are
// resolved against dir.
func ParseTrustStore(raw []byte, dir string) (*TrustStore, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var ts TrustStore
	if err := dec.Decode(&ts); err != nil {
		return nil, err
	}
	normalized := map[string]*AgentTrust{}
	for origin, at := range ts.Agents {
		if at == nil {
			return nil, fmt.Errorf("agents[%q]: must be an object", origin)
		}
		o, err := Origin(origin)
		if err != nil {
			return nil, fmt.Errorf("agents[%q]: %w", origin, err)
		}
		set := jwk.NewSet()
		switch {
		case len(at.JWKS) > 0 && at.JWKSFile != "":
			return nil, fmt.Errorf("agents[%q]: give jwks or jwks_file, not both", origin)
		case len(at.JWKS) > 0:
			if set, err = jwk.Parse(at.JWKS); err != nil {
				return nil, fmt.Errorf("agents[%q].jwks: %w", origin, err)
			}
		case at.JWKSFile != "":
			p := at.JWKSFile
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("agents[%q].jwks_file: %w", origin, err)
			}
			if set, err = jwk.Parse(b); err != nil {
				return nil, fmt.Errorf("agents[%q].jwks_file: %w", origin, err)
			}
		}
		for i := 0; i < set.Len(); i++ {
			k, _ := set.Key(i)
			if _, ok := k.(jwk.SymmetricKey); ok {
				return nil, fmt.Errorf("agents[%q].jwks: key %d is symmetric; only public keys are trusted", origin, i)
			}
			if k.KeyID() == "" {
				return nil, fmt.Errorf("agents[%q].jwks: key %d has no kid", origin, i)
			}
		}
		if pub, err := jwk.PublicSetOf(set); err == nil {
			set = pub
		}
		at.keys = set
		if _, dup := normalized[o]; dup {
			return nil, fmt.Errorf("agents[%q]: origin %s is given twice", origin, o)
		}
		for i, u := range at.InterfaceOrigins {
			if at.InterfaceOrigins[i], err = Origin(u); err != nil {
				return nil, fmt.Errorf("agents[%q].interface_origins[%d]: %w", origin, i, err)
			}
		}
		normalized[o] = at
	}
	ts.Agents = normalized
	return &ts, nil
}

// For returns the entry for an origin, or an empty one.
func (ts *TrustStore) For(origin string) *AgentTrust {
	if ts != nil {
		if at, ok := ts.Agents[origin]; ok {
			return at
		}
	}
	return &AgentTrust{keys: jwk.NewSet()}
}

// Origin returns the RFC 6454 origin of an http(s) URL:
// "scheme://host[:port]", lower-case, default ports dropped.
func Origin(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(p.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%q is not an http or https URL", u)
	}
	host := strings.ToLower(p.Hostname())
	if host == "" {
		return "", errors.New("the URL has no host")
	}
	port := p.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, nil
	}
	return scheme + "://" + host, nil
}
