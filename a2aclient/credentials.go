package a2aclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Credentials is the worker-side credential store (`--credentials FILE` or
// DELEGATE_CREDENTIALS). Secrets live only here: never in workflow input,
// history, logs or errors; activities look them up at call time, and
// tokens are minted at call time (never kept in workflow state).
//
//	{
//	  "origins": {
//	    "https://claims.example": {"bearer": "eyJ..."},
//	    "https://other.example":  {"api_key": "k-123"},
//	    "https://billing.example": {"oauth2": {"token_url": "https://idp.example/oauth2/token",
//	        "client_id": "delegate", "client_secret_file": "/run/secrets/billing",
//	        "scopes": ["tasks"], "audience": "https://billing.example"}},
//	    "https://hr.example": {"oidc": {"issuer": "https://login.example",
//	        "client_id": "delegate", "client_secret": "..."},
//	      "tls": {"cert_file": "client.pem", "key_file": "client-key.pem", "ca_file": "ca.pem"}}
//	  },
//	  "refs": {
//	    "claims-prod": {"bearer": "eyJ...", "origins": ["https://claims.example"]}
//	  }
//	}
//
// An entry holds at most one of bearer, api_key, oauth2 (RFC 6749 §4.4
// client credentials at token_url) and oidc (the same grant at the
// token_endpoint of the issuer's discovery document), and may add tls (a
// client certificate, A2A 1.0 §4.5.6), or hold tls alone. Relative file
// paths are relative to the store's directory.
//
// An origin entry is used for every call to an agent interface on that
// origin; where the credential goes is chosen by the card's
// securitySchemes (A2A 1.0 §4.5: an HTTP bearer, OAuth 2.0 or OpenID
// Connect scheme → Authorization: Bearer, an apiKey scheme → its header,
// query parameter or cookie). A ref entry is named by an operator
// answering AUTH_REQUIRED (Answer.credential_ref) and is used for the
// follow-up of that task, and only when the task's agent is on one of the
// ref's origins (required): an agent cannot obtain another agent's
// credential by asking for it.
type Credentials struct {
	Origins map[string]Secret `json:"origins"`
	Refs    map[string]Ref    `json:"refs"`
	// Fetcher fetches OpenID Connect discovery documents (through its
	// HTTP guard, size limit, timeout and cache); nil: a cards.Fetcher
	// without a trust store.
	Fetcher *cards.Fetcher `json:"-"`
	// Observer, when set, is told of every token request (Observer.TokenRequest).
	Observer Observer `json:"-"`

	once       sync.Once
	defFetcher *cards.Fetcher
}

func (c *Credentials) fetcher() *cards.Fetcher {
	if c != nil && c.Fetcher != nil {
		return c.Fetcher
	}
	if c == nil {
		return &cards.Fetcher{}
	}
	c.once.Do(func() { c.defFetcher = &cards.Fetcher{} })
	return c.defFetcher
}

// Ref is a credential an operator names, bound to the origins it may be
// sent to.
type Ref struct {
	Secret
	Origins []string `json:"origins"`
}

// ErrRefUnknown: no credential of that name. ErrRefNotAllowed: the
// credential may not be sent to that origin.
var (
	ErrRefUnknown    = errors.New("the credential_ref is not in the worker's credential store")
	ErrRefNotAllowed = errors.New("the credential_ref may not be sent to this agent's origin")
)

// Secret is one credential. Its String never shows the value.
type Secret struct {
	Bearer string `json:"bearer,omitempty"`
	APIKey string `json:"api_key,omitempty"`
	// OAuth2 mints bearer tokens with the client credentials grant (RFC
	// 6749 §4.4) at its token_url.
	OAuth2 *OAuth2 `json:"oauth2,omitempty"`
	// OIDC mints them at the token_endpoint of its issuer's discovery
	// document (OpenID Connect Discovery 1.0 §4).
	OIDC *OIDC `json:"oidc,omitempty"`
	// TLS is a client certificate presented to the agent (mTLS).
	TLS *TLSFiles `json:"tls,omitempty"`

	// tokens caches the tokens of OAuth2/OIDC per agent origin (set by
	// LoadCredentials; nil: a cache per Dial).
	tokens *tokenCaches
	// tlsConf presents TLS's certificate (set by LoadCredentials).
	tlsConf *tls.Config
}

// ClientCredentials are an OAuth 2.0 client's (RFC 6749 §2.3.1, §4.4):
// exactly one of ClientSecret and ClientSecretFile (read at every mint, so
// that a rotated secret is used without a restart). Audience, when set,
// is sent as the "audience" parameter of the token request (as Auth0 and
// Okta want it).
type ClientCredentials struct {
	ClientID         string   `json:"client_id"`
	ClientSecret     string   `json:"client_secret,omitempty"`
	ClientSecretFile string   `json:"client_secret_file,omitempty"`
	Scopes           []string `json:"scopes,omitempty"`
	Audience         string   `json:"audience,omitempty"`
}

// OAuth2 is a client credentials grant at TokenURL (absolute https, or
// http to a loopback host).
type OAuth2 struct {
	TokenURL string `json:"token_url"`
	ClientCredentials
}

// OIDC is a client credentials grant at the token endpoint of Issuer
// (absolute https, or http to a loopback host).
type OIDC struct {
	Issuer string `json:"issuer"`
	ClientCredentials
}

// TLSFiles are PEM files: CertFile and KeyFile, the client certificate
// (both or neither), CAFile the roots the agent's server certificate must
// chain to (empty: the system roots). They are read again when they
// change, so certificates rotate without a restart.
type TLSFiles struct {
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	CAFile   string `json:"ca_file,omitempty"`
}

func (s Secret) String() string { return "[secret]" }

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return "[secret]" }

func (c ClientCredentials) String() string   { return "[client credentials of " + c.ClientID + "]" }
func (c ClientCredentials) GoString() string { return c.String() }

func (s Secret) empty() bool {
	return s.Bearer == "" && s.APIKey == "" && s.OAuth2 == nil && s.OIDC == nil && s.TLS == nil
}

// TLSConfig is the TLS client configuration presenting the secret's
// client certificate (and trusting its CA file); false when it has none.
func (s Secret) TLSConfig() (*tls.Config, bool) { return s.tlsConf, s.tlsConf != nil }

// Satisfies reports whether the secret meets a card scheme of kind (a
// contracts.AuthScheme Kind): "bearer" by a bearer, oauth2 or oidc entry;
// "oauth2" and "oidc" by their own kind or a bearer (a token minted by
// other means); "api_key" by an api_key; "mtls" by tls.
func (s Secret) Satisfies(kind string) bool {
	switch kind {
	case "bearer":
		return s.Bearer != "" || s.OAuth2 != nil || s.OIDC != nil
	case "oauth2":
		return s.OAuth2 != nil || s.Bearer != ""
	case "oidc":
		return s.OIDC != nil || s.Bearer != ""
	case "api_key":
		return s.APIKey != ""
	case "mtls":
		return s.TLS != nil
	}
	return false
}

// check validates one entry (where names it in errors) and resolves its
// relative paths against dir.
func (s *Secret) check(where, dir string) error {
	n := 0
	for _, set := range []bool{s.Bearer != "", s.APIKey != "", s.OAuth2 != nil, s.OIDC != nil} {
		if set {
			n++
		}
	}
	if n > 1 || (n == 0 && s.TLS == nil) {
		return fmt.Errorf("%s: give exactly one of bearer, api_key, oauth2, oidc (tls may go with any of them, or alone)", where)
	}
	path := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	checkCC := func(field string, cc *ClientCredentials) error {
		if cc.ClientID == "" {
			return fmt.Errorf("%s.client_id: required", field)
		}
		if (cc.ClientSecret == "") == (cc.ClientSecretFile == "") {
			return fmt.Errorf("%s: give exactly one of client_secret, client_secret_file", field)
		}
		cc.ClientSecretFile = path(cc.ClientSecretFile)
		if _, err := cc.secret(); err != nil {
			return fmt.Errorf("%s.client_secret_file: %v", field, err)
		}
		for i, sc := range cc.Scopes {
			// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
			if sc == "" || strings.ContainsFunc(sc, func(r rune) bool { return r <= 0x20 || r == '"' || r == '\\' || r >= 0x7f }) {
				return fmt.Errorf("%s.scopes[%d]: %q is not a scope token (RFC 6749 §3.3: printable ASCII, no space, quote or backslash)", field, i, contracts.CutText(sc, 100))
			}
		}
		return nil
	}
	if o := s.OAuth2; o != nil {
		if err := checkEndpointURL(o.TokenURL); err != nil {
			return fmt.Errorf("%s.oauth2.token_url: %v", where, err)
		}
		if err := checkCC(where+".oauth2", &o.ClientCredentials); err != nil {
			return err
		}
	}
	if o := s.OIDC; o != nil {
		if err := checkEndpointURL(o.Issuer); err != nil {
			return fmt.Errorf("%s.oidc.issuer: %v", where, err)
		}
		if u, _ := url.Parse(o.Issuer); u.RawQuery != "" {
			return fmt.Errorf("%s.oidc.issuer: no query allowed (OpenID Connect Discovery 1.0 §4: the configuration is at issuer + /.well-known/openid-configuration)", where)
		}
		if err := checkCC(where+".oidc", &o.ClientCredentials); err != nil {
			return err
		}
	}
	if t := s.TLS; t != nil {
		if (t.CertFile == "") != (t.KeyFile == "") {
			return fmt.Errorf("%s.tls: give both cert_file and key_file, or neither", where)
		}
		if t.CertFile == "" && t.CAFile == "" {
			return fmt.Errorf("%s.tls: give cert_file and key_file, ca_file, or all three", where)
		}
		t.CertFile, t.KeyFile, t.CAFile = path(t.CertFile), path(t.KeyFile), path(t.CAFile)
		conf, err := newTLSReloader(*t)
		if err != nil {
			return fmt.Errorf("%s.tls: %v", where, err)
		}
		s.tlsConf = conf
	}
	return nil
}

// LoadCredentials reads a credential store. Errors never quote the file's
// content; they name the entry and field at fault.
func LoadCredentials(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Credentials
	if err := dec.Decode(&c); err != nil {
		// An unknown field's name is the file's structure, not a secret.
		detail := ""
		if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
			detail = ": " + strings.TrimPrefix(msg, "json: ")
		}
		return nil, fmt.Errorf("credentials %s: not a valid credential store%s (the content is not shown)", path, detail)
	}
	dir := filepath.Dir(path)
	origins := map[string]Secret{}
	for o, s := range c.Origins {
		n, err := cards.Origin(o)
		if err != nil {
			return nil, fmt.Errorf("credentials %s: origins[%q]: %w", path, o, err)
		}
		if err := s.check(fmt.Sprintf("origins[%q]", o), dir); err != nil {
			return nil, fmt.Errorf("credentials %s: %w", path, err)
		}
		if _, dup := origins[n]; dup {
			return nil, fmt.Errorf("credentials %s: origins[%q]: origin %s is given twice", path, o, n)
		}
		origins[n] = s
	}
	c.Origins = origins
	for r, s := range c.Refs {
		if err := s.check(fmt.Sprintf("refs[%q]", r), dir); err != nil {
			return nil, fmt.Errorf("credentials %s: %w", path, err)
		}
		if len(s.Origins) == 0 {
			return nil, fmt.Errorf("credentials %s: refs[%q].origins: required: the origins this credential may be sent to", path, r)
		}
		for i, o := range s.Origins {
			n, err := cards.Origin(o)
			if err != nil {
				return nil, fmt.Errorf("credentials %s: refs[%q].origins[%d]: %w", path, r, i, err)
			}
			s.Origins[i] = n
		}
		c.Refs[r] = s
	}
	// The token caches live as long as the store: one per entry and
	// agent origin.
	for o, s := range c.Origins {
		if s.OAuth2 != nil || s.OIDC != nil {
			s.tokens = &tokenCaches{creds: &c, secret: &s}
			c.Origins[o] = s
		}
	}
	for r, s := range c.Refs {
		if s.OAuth2 != nil || s.OIDC != nil {
			s.tokens = &tokenCaches{creds: &c, secret: &s.Secret}
			c.Refs[r] = s
		}
	}
	return &c, nil
}

// ForOrigin returns the secret for an origin.
func (c *Credentials) ForOrigin(origin string) (Secret, bool) {
	if c == nil {
		return Secret{}, false
	}
	s, ok := c.Origins[origin]
	return s, ok
}

// TLSFor returns the TLS client configuration of an origin's entry (its
// client certificate and CA file, reloaded when the files change); false
// when the entry has no tls.
func (c *Credentials) TLSFor(origin string) (*tls.Config, bool) {
	s, ok := c.ForOrigin(origin)
	if !ok {
		return nil, false
	}
	return s.TLSConfig()
}

// Satisfies reports whether the origin's entry meets a card scheme of
// kind (Secret.Satisfies); false without an entry.
func (c *Credentials) Satisfies(origin, kind string) bool {
	s, ok := c.ForOrigin(origin)
	return ok && s.Satisfies(kind)
}

// ForRef returns the secret a reference names, when origin is one of the
// reference's origins. Errors: ErrRefUnknown, ErrRefNotAllowed (wrapped,
// naming the origin and the ref's origins; never the secret).
func (c *Credentials) ForRef(ref, origin string) (Secret, error) {
	if c == nil {
		return Secret{}, ErrRefUnknown
	}
	s, ok := c.Refs[ref]
	if !ok {
		return Secret{}, ErrRefUnknown
	}
	if !slices.Contains(s.Origins, origin) {
		return Secret{}, fmt.Errorf("%w: %s is not among its origins %v", ErrRefNotAllowed, origin, s.Origins)
	}
	return s.Secret, nil
}

// credentialInterceptor adds a secret to every call (a2a-go call
// interceptor); the secret never leaves the request headers.
type credentialInterceptor struct {
	sdk.PassthroughInterceptor
	scheme contracts.AuthScheme
	secret Secret
}

func (ci *credentialInterceptor) Before(ctx context.Context, req *sdk.Request) (context.Context, any, error) {
	if req.ServiceParams == nil {
		return ctx, nil, nil
	}
	switch {
	case ci.scheme.Kind == "api_key" && ci.secret.APIKey != "":
		req.ServiceParams[ci.scheme.Header] = []string{ci.secret.APIKey}
	case ci.secret.Bearer != "":
		req.ServiceParams["Authorization"] = []string{"Bearer " + ci.secret.Bearer}
	case ci.secret.APIKey != "":
		header := ci.scheme.Header
		if header == "" {
			header = "X-API-Key"
		}
		req.ServiceParams[header] = []string{ci.secret.APIKey}
	}
	return ctx, nil, nil
}

// WithCredential returns options that add secret to every call, in the way
// scheme says (a nil scheme: bearer, or the X-API-Key header for an API
// key), and redact it from everything the agent sends back (Redacted).
// A bearer or an API key in a header goes through an a2a-go call
// interceptor; an API key in a query parameter or cookie and OAuth 2.0 /
// OpenID Connect tokens (minted at call time; Secret.OAuth2, Secret.OIDC)
// at the HTTP level (authTransport). TLS is not set here: see
// Secret.TLSConfig.
func (o Options) WithCredential(scheme *contracts.AuthScheme, secret Secret) Options {
	s := contracts.AuthScheme{Kind: "bearer"}
	if scheme != nil {
		s = *scheme
	}
	keyInURL := s.Kind == "api_key" && (s.In == "query" || s.In == "cookie")
	if secret.Bearer != "" || (secret.APIKey != "" && !keyInURL) {
		o.Interceptors = append(append([]sdk.CallInterceptor(nil), o.Interceptors...), &credentialInterceptor{scheme: s, secret: secret})
	}
	o.secrets = append(append([]string(nil), o.secrets...), secret.Bearer, secret.APIKey)
	if secret.OAuth2 != nil || secret.OIDC != nil || (secret.APIKey != "" && keyInURL) {
		spec := &authSpec{scheme: s, secret: secret, tokens: secret.tokens}
		if spec.tokens == nil && (secret.OAuth2 != nil || secret.OIDC != nil) {
			spec.tokens = &tokenCaches{secret: &spec.secret}
		}
		o.auth = spec
	}
	return o
}

func (c *Credentials) observer() Observer {
	if c == nil {
		return nil
	}
	return c.Observer
}
