package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// TokensFile is the `--tokens FILE` document: bearer tokens and the actor
// each stands for.
//
//	{"tokens": [{"actor": "alice", "sha256": "<lowercase hex sha256 of the token>"},
//	            {"actor": "bob", "token": "<the token itself>"}]}
//
// Each entry gives exactly one of sha256 and token.
type TokensFile struct {
	Tokens []TokenEntry `json:"tokens"`
}

// TokenEntry is one token of a TokensFile.
type TokenEntry struct {
	Actor  string `json:"actor"`
	SHA256 string `json:"sha256,omitempty"`
	Token  string `json:"token,omitempty"`
}

// MaxTokensBytes bounds the tokens file (1 MiB), read before decoding.
const MaxTokensBytes = 1 << 20

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseTokens decodes a tokens document strictly and returns the actor of
// each token's sha256. Errors name the entry and the field.
func ParseTokens(b []byte) (map[[32]byte]string, error) {
	var tf TokensFile
	if err := contracts.DecodeObject(b, &tf); err != nil {
		return nil, err
	}
	out := map[[32]byte]string{}
	var errs []error
	for i, e := range tf.Tokens {
		bad := func(field, rule string) {
			errs = append(errs, &contracts.FieldError{Field: fmt.Sprintf("tokens[%d].%s", i, field), Rule: rule})
		}
		if !client.ValidStarter(e.Actor) {
			bad("actor", client.StarterRule)
		}
		var sum [32]byte
		switch {
		case (e.SHA256 == "") == (e.Token == ""):
			bad("sha256", "give exactly one of sha256 and token")
			continue
		case e.Token != "":
			if len(e.Token) < 16 {
				bad("token", "at least 16 characters")
				continue
			}
			sum = sha256.Sum256([]byte(e.Token))
		default:
			if !hexSHA256.MatchString(e.SHA256) {
				bad("sha256", "64 lowercase hex digits (the sha256 of the token)")
				continue
			}
			_, _ = hex.Decode(sum[:], []byte(e.SHA256))
		}
		if prev, dup := out[sum]; dup && prev != e.Actor {
			bad("sha256", "the same token as another entry, for another actor")
			continue
		}
		out[sum] = e.Actor
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// TokensRecheck is how often the tokens file is read again when its
// modification time and size have not changed: a file rewritten with the
// same size and its modification time kept (cp -p, rsync, touch -r) is
// noticed by its content within this time.
const TokensRecheck = time.Second

// Tokens verifies bearer tokens against a tokens file. Each check stats
// the file, and reads it again when its modification time or size
// changed, or its last reading is TokensRecheck old; it is decoded again
// only when its content (sha256 of its bytes) changed. So a token removed
// from the file is refused from the next request on (within TokensRecheck
// when the file kept its size and modification time). A file that no
// longer reads or decodes refuses every token until it is fixed (and logs
// why).
type Tokens struct {
	path   string
	logger *slog.Logger
	every  time.Duration // TokensRecheck

	mu      sync.Mutex
	mod     time.Time
	size    int64
	read    time.Time // when the file was last read
	sum     [32]byte  // sha256 of the bytes byHash was decoded from
	byHash  map[[32]byte]string
	loadErr error
}

// NewTokens reads the tokens file; an error names the field that is wrong.
func NewTokens(path string, logger *slog.Logger) (*Tokens, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{path: path, logger: logger, every: TokensRecheck}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.reloadLocked(time.Now()); err != nil {
		return nil, err
	}
	return t, nil
}

// reloadLocked reads the file and, when its bytes differ from those last
// decoded, decodes them.
func (t *Tokens) reloadLocked(now time.Time) error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxTokensBytes+1))
	if err != nil {
		return err
	}
	t.mod, t.size, t.read = fi.ModTime(), fi.Size(), now
	if len(b) > MaxTokensBytes {
		return fmt.Errorf("%s: over the %d-byte limit", t.path, MaxTokensBytes)
	}
	sum := sha256.Sum256(b)
	if sum == t.sum && t.byHash != nil {
		return nil // the same bytes: the same tokens
	}
	m, err := ParseTokens(b)
	if err != nil {
		return fmt.Errorf("%s: %w", t.path, err)
	}
	t.byHash, t.sum = m, sum
	return nil
}

// Actor returns the actor of token, or "" when the file has no such token.
func (t *Tokens) Actor(token string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	fi, err := os.Stat(t.path)
	switch {
	case err != nil:
		if t.loadErr == nil {
			t.logger.Error("mcp: tokens file unreadable; every token is refused", "path", t.path, "err", err)
		}
		t.loadErr, t.byHash, t.sum = err, nil, [32]byte{}
	case !fi.ModTime().Equal(t.mod) || fi.Size() != t.size || now.Sub(t.read) >= t.every:
		if err := t.reloadLocked(now); err != nil {
			if t.loadErr == nil || t.loadErr.Error() != err.Error() {
				t.logger.Error("mcp: tokens file does not load; every token is refused", "err", err)
			}
			t.loadErr, t.byHash, t.sum = err, nil, [32]byte{}
		} else {
			t.loadErr = nil
		}
	}
	return t.byHash[sha256.Sum256([]byte(token))]
}

// OIDC verifies JWT access tokens issued by an OAuth 2.0 / OpenID
// Connect issuer (coreos/go-oidc/v3): signature against the issuer's JWKS
// (found through its discovery document; fetched as keySet says), iss,
// aud (must hold one of the accepted audiences), exp and nbf. The actor
// is the token's sub.
type OIDC struct {
	verifier  *oidc.IDTokenVerifier
	keys      *keySet
	audiences []string
}

// NewOIDC reads the issuer's discovery document
// (ISSUER/.well-known/openid-configuration); errors: the issuer unreachable
// or its document wrong. A token is accepted when its aud holds audience
// (--audience) or one of resources: the resource's own URL (--resource-url),
// which is what a client that names this resource gets (RFC 8707
// resource indicators, as MCP clients ask), compared without a trailing
// slash.
func NewOIDC(ctx context.Context, issuer, audience string, resources ...string) (*OIDC, error) {
	if audience == "" {
		return nil, errors.New("--audience: required with --issuer (the aud a token must carry for this server)")
	}
	if err := checkIssuerURL(issuer); err != nil {
		return nil, err
	}
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("--issuer %s: discovery: %w", issuer, err)
	}
	var doc struct {
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&doc); err != nil {
		return nil, fmt.Errorf("--issuer %s: discovery: %w", issuer, err)
	}
	if err := checkKeyURL(doc.JWKSURI); err != nil {
		return nil, fmt.Errorf("--issuer %s: discovery: %w", issuer, err)
	}
	keys := newKeySet(doc.JWKSURI)
	o := &OIDC{keys: keys, audiences: []string{audience}}
	for _, r := range resources {
		if r != "" {
			o.audiences = append(o.audiences, strings.TrimSuffix(r, "/"))
		}
	}
	// The audience is checked in Verify, against every accepted one
	// (go-oidc checks one ClientID).
	o.verifier = oidc.NewVerifier(issuer, keys, &oidc.Config{SkipClientIDCheck: true, SupportedSigningAlgs: asymmetric(doc.Algs)})
	return o, nil
}

// asymmetric keeps the signing algorithms of the issuer's document that
// go-oidc verifies with a public key, as Provider.Verifier does (none
// left: go-oidc's default, RS256).
func asymmetric(algs []string) []string {
	var out []string
	for _, a := range algs {
		switch a {
		case oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA:
			out = append(out, a)
		}
	}
	return out
}

// checkIssuerURL refuses an issuer whose keys would be fetched where
// someone on the path could serve their own: anything but https, except
// http to a loopback host (a local issuer, tests).
func checkIssuerURL(issuer string) error {
	if secureURL(issuer) {
		return nil
	}
	return fmt.Errorf("--issuer %s: must be an https URL (http only to a loopback host): its keys decide who every request is", contracts.Truncate(issuer, 200))
}

// checkKeyURL is checkIssuerURL for the issuer's jwks_uri (and where it
// redirects).
func checkKeyURL(jwks string) error {
	if secureURL(jwks) {
		return nil
	}
	return fmt.Errorf("jwks_uri %q: must be an https URL (http only to a loopback host): its keys decide who every request is", contracts.Truncate(jwks, 200))
}

func secureURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return isLoopbackHost(u.Hostname())
	}
	return false
}

func isLoopbackHost(h string) bool {
	ip := net.ParseIP(h)
	return strings.EqualFold(h, "localhost") || (ip != nil && ip.IsLoopback())
}

// Verify checks a JWT and returns its sub and expiry.
func (o *OIDC) Verify(ctx context.Context, token string) (string, time.Time, error) {
	tok, err := o.verifier.Verify(ctx, token)
	if err != nil {
		return "", time.Time{}, err
	}
	for _, aud := range tok.Audience {
		if slices.Contains(o.audiences, aud) || (aud != "" && slices.Contains(o.audiences[1:], strings.TrimSuffix(aud, "/"))) {
			return tok.Subject, tok.Expiry, nil
		}
	}
	return "", time.Time{}, fmt.Errorf("oidc: aud %q holds none of %q", tok.Audience, o.audiences)
}

// Verifier is the bearer-token check of the HTTP transport
// (auth.RequireBearerToken): a token of the tokens file, else a JWT of the
// issuer. Either may be nil, not both. The actor goes into
// auth.TokenInfo.UserID, which the tools read and the go-sdk binds each
// session to.
func Verifier(tokens *Tokens, issuer *OIDC) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if len(token) > 16<<10 {
			return nil, fmt.Errorf("%w: over 16 KiB", auth.ErrInvalidToken)
		}
		if tokens != nil {
			if actor := tokens.Actor(token); actor != "" {
				return &auth.TokenInfo{UserID: actor}, nil
			}
		}
		if issuer != nil {
			sub, exp, err := issuer.Verify(ctx, token)
			if err == nil {
				if !client.ValidStarter(sub) {
					return nil, fmt.Errorf("%w: its sub is not an actor name (%s)", auth.ErrInvalidToken, client.StarterRule)
				}
				return &auth.TokenInfo{UserID: sub, Expiration: exp}, nil
			}
		}
		return nil, fmt.Errorf("%w: unknown, revoked or expired", auth.ErrInvalidToken)
	}
}
