package a2aclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Bounds of what the worker reads from a token endpoint (RFC 6749 §5.1).
const (
	// MaxTokenResponseBytes bounds a token endpoint's response body; a
	// larger one is refused unread.
	MaxTokenResponseBytes = 64 << 10
	// TokenTimeout bounds one token request, its body included.
	TokenTimeout = 10 * time.Second
	// ShortTokenLifetime is how long a token whose response has no
	// usable expires_in (missing, 0 or negative) is treated as valid:
	// reused for that long less TokenExpiryMargin, then minted anew, so
	// that such a token is neither kept forever nor fetched in a loop.
	ShortTokenLifetime = 60 * time.Second
	// TokenExpiryMargin: a cached token is replaced this long before its
	// expiry, so that it does not expire in flight.
	TokenExpiryMargin = 30 * time.Second
)

// AuthError is a failure to authenticate a call before anything reached
// the agent: the card names another token endpoint or issuer than the
// worker's store, the token endpoint refused the client or answered
// something that is not a token, or it could not be reached. Its text
// names the endpoint and the client id, never a secret; the token
// endpoint's body appears only as a short excerpt with the client secret
// redacted. Category is authorization, or transient for a token endpoint
// that timed out, could not be reached or answered 408, 429 or 5xx.
type AuthError struct {
	Category contracts.Category
	Msg      string
}

func (e *AuthError) Error() string { return e.Msg }

func authErrorf(cat contracts.Category, format string, args ...any) *AuthError {
	return &AuthError{Category: cat, Msg: fmt.Sprintf(format, args...)}
}

// ErrTokenResponse is wrapped by the errors of the token endpoint's
// transport: a body over MaxTokenResponseBytes, or a success that is not
// JSON (RFC 6749 §5.1: application/json).
var ErrTokenResponse = errors.New("not a token response")

// tokenTransport bounds what is read from a token endpoint: the body to
// max bytes (refused when larger), and a 2xx reply must be JSON.
type tokenTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > t.max {
		return nil, fmt.Errorf("%w: the body is over %d bytes (HTTP %d)", ErrTokenResponse, t.max, resp.StatusCode)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 == 2 && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		if mt == "" {
			mt = "no Content-Type"
		}
		return nil, fmt.Errorf("%w: HTTP %d with %s, not application/json (RFC 6749 §5.1)", ErrTokenResponse, resp.StatusCode, mt)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// tokenHTTPClient is the client of every token request: no proxy, no
// redirect, TokenTimeout overall, bodies bounded.
var tokenHTTPClient = newTokenHTTPClient(TokenTimeout, nil)

// newTokenHTTPClient bounds a token request to timeout (body included) and
// MaxTokenResponseBytes; tlsConf nil: the default TLS settings.
func newTokenHTTPClient(timeout time.Duration, tlsConf *tls.Config) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &tokenTransport{max: MaxTokenResponseBytes, base: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSClientConfig:       tlsConf,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
		}},
		// A redirect would carry the form (and its grant) elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// minter mints tokens with the client credentials grant (RFC 6749 §4.4)
// for one store entry and one agent origin: an oauth2.TokenSource. The
// client secret is read (from its file, when so configured) at each mint,
// so that a rotated secret is used without a restart.
type minter struct {
	creds  *Credentials
	cc     ClientCredentials
	oauth2 *OAuth2
	oidc   *OIDC
	// hc is the token endpoint's client (nil: tokenHTTPClient, or for
	// OIDC guardedClient).
	hc      *http.Client
	once    sync.Once
	guarded *http.Client
}

// Token mints a token, and tells the store's Observer (when set) the
// token endpoint (the issuer, when OpenID Connect discovery failed) and
// the result. Errors are *AuthError.
func (m *minter) Token() (tok *oauth2.Token, err error) {
	where := ""
	if m.oidc != nil {
		where = m.oidc.Issuer
	}
	if obs := m.creds.observer(); obs != nil {
		defer func() { obs.TokenRequest(where, tokenResult(err)) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), TokenTimeout)
	defer cancel()
	tokenURL, err := m.tokenURL(ctx)
	if err != nil {
		return nil, err
	}
	where = tokenURL
	secret, err := m.cc.secret()
	if err != nil {
		return nil, authErrorf(contracts.CategoryAuthorization, "token endpoint %s: client_secret_file: %v", tokenURL, err)
	}
	cfg := clientcredentials.Config{
		ClientID: m.cc.ClientID, ClientSecret: secret, TokenURL: tokenURL, Scopes: m.cc.Scopes,
		// RFC 6749 §2.3.1: every server supports HTTP Basic; one request
		// (auto-detection would send the secret a second way on a 4xx).
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if m.cc.Audience != "" {
		cfg.EndpointParams = url.Values{"audience": {m.cc.Audience}}
	}
	hc := m.hc
	switch {
	case hc != nil:
	case m.oidc != nil:
		hc = m.guardedClient()
	default:
		hc = tokenHTTPClient
	}
	tok, err = cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	if err != nil {
		return nil, tokenError(tokenURL, m.cc.ClientID, secret, hc.Timeout, err)
	}
	if err := checkToken(tok); err != nil {
		return nil, authErrorf(contracts.CategoryAuthorization, "token endpoint %s (client_id %q): %v; the token is not used", tokenURL, m.cc.ClientID, err)
	}
	if tok.Expiry.IsZero() || !tok.Expiry.After(time.Now()) {
		// expires_in missing, 0 or negative (RFC 6749 §5.1 makes it
		// optional): short lived.
		tok.Expiry = time.Now().Add(ShortTokenLifetime)
	}
	return &oauth2.Token{AccessToken: tok.AccessToken, TokenType: "Bearer", Expiry: tok.Expiry}, nil
}

// checkToken refuses a token this client cannot send as it was meant: a
// token_type other than Bearer (RFC 6749 §7.1: a client must not use a
// token type it does not understand; a DPoP or MAC token sent as bearer
// would be misused), an access token that is not an RFC 6750 §2.1
// b64token (it could not be a header value: CR, LF, space), or one too
// short for the redactor to find (under minRedacted bytes: an agent
// echoing it would put it in history). The token's value is never named.
func checkToken(tok *oauth2.Token) error {
	if tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer") {
		return fmt.Errorf("token_type %q is not Bearer (RFC 6749 §7.1, RFC 6750)", contracts.CutText(tok.TokenType, 40))
	}
	at := tok.AccessToken
	if len(at) < minRedacted {
		return fmt.Errorf("the access token is %d bytes, under %d", len(at), minRedacted)
	}
	body := strings.TrimRight(at, "=")
	if body == "" {
		return errors.New("the access token is not an RFC 6750 b64token")
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return fmt.Errorf("the access token has a byte (0x%02x at %d) an RFC 6750 b64token cannot hold", c, i)
		}
	}
	return nil
}

// guardedClient is the token endpoint's client when the endpoint came
// from a discovery document (OIDC): the issuer's discovery is the
// operator's choice, the token_endpoint it names is not, so the client
// secret goes there only through the HTTP guard (cards.Guard: no private,
// link-local or metadata address unless the issuer origin's trust entry
// says allow_private_network, the address connected is the one checked),
// with the same bounds as tokenHTTPClient and no redirect.
func (m *minter) guardedClient() *http.Client {
	m.once.Do(func() {
		origin, _ := cards.Origin(m.oidc.Issuer)
		g := m.creds.fetcher().Guard()
		g.HeaderTimeout = TokenTimeout
		m.guarded = &http.Client{
			Timeout:       TokenTimeout,
			Transport:     &tokenTransport{max: MaxTokenResponseBytes, base: g.Client(origin).Transport},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return m.guarded
}

// tokenError makes the AuthError of a failed token request.
func tokenError(tokenURL, clientID, secret string, timeout time.Duration, err error) *AuthError {
	where := fmt.Sprintf("token endpoint %s (client_id %q)", tokenURL, clientID)
	// The secret as sent, too: HTTP Basic carries it form-encoded (RFC
	// 6749 §2.3.1, what x/oauth2 writes), so an endpoint echoing the
	// Authorization header shows base64 of id:QueryEscape(secret).
	red := newRedactor([]string{secret, url.QueryEscape(secret), url.QueryEscape(clientID) + ":" + url.QueryEscape(secret)})
	// Every remote text is redacted before it is cut: a secret across the
	// cut would keep its first bytes.
	cut := func(s string, n int) string { return contracts.CutText(red.text(s), n) }
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		cat := contracts.CategoryAuthorization
		if status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 {
			cat = contracts.CategoryTransient
		}
		msg := fmt.Sprintf("%s: HTTP %d", where, status)
		if re.ErrorCode != "" {
			msg += " " + cut(re.ErrorCode, 100)
		}
		if re.ErrorDescription != "" {
			msg += ": " + cut(re.ErrorDescription, 200)
		} else if len(re.Body) > 0 && re.ErrorCode == "" {
			msg += fmt.Sprintf("; response body (%d bytes): %s", len(re.Body), cut(strings.ToValidUTF8(string(re.Body), "\uFFFD"), 200))
		}
		if cat == contracts.CategoryAuthorization {
			msg += " (RFC 6749 §5.2: the client or its grant was refused; check client_id, the client secret, scopes and audience)"
		}
		return authErrorf(cat, "%s", red.text(msg))
	case errors.Is(err, cards.ErrGuard):
		// The discovered token endpoint is an address the worker must not
		// reach: nothing was sent, and retrying will not change it.
		return authErrorf(contracts.CategoryAuthorization, "%s: refused by the HTTP guard, nothing sent: %s", where, cut(errText(err, 1<<20), 300))
	case errors.Is(err, ErrTokenResponse):
		return authErrorf(contracts.CategoryAuthorization, "%s: %s", where, cut(errText(err, 1<<20), 300))
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return authErrorf(contracts.CategoryTransient, "%s: no token within %s", where, timeout)
	case errors.As(err, new(*url.Error)) || errors.As(err, new(*net.OpError)):
		return authErrorf(contracts.CategoryTransient, "%s: %s", where, cut(errText(err, 1<<20), 300))
	}
	return authErrorf(contracts.CategoryAuthorization, "%s: %s", where, cut(err.Error(), 300))
}

// errText is the innermost text of a url.Error (without the URL again),
// at most n bytes.
func errText(err error, n int) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return contracts.CutText(err.Error(), n)
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// tokenURL is the store's token_url, or the token_endpoint of the
// issuer's discovery document (OpenID Connect Discovery 1.0 §4), fetched
// through the card fetcher's guard and bounds and cached by it.
func (m *minter) tokenURL(ctx context.Context) (string, error) {
	if m.oauth2 != nil {
		return m.oauth2.TokenURL, nil
	}
	u := strings.TrimSuffix(m.oidc.Issuer, "/") + "/.well-known/openid-configuration"
	body, err := m.creds.fetcher().FetchDocument(ctx, u)
	if err != nil {
		cat := contracts.CategoryAuthorization
		var ce *cards.Error
		if errors.As(err, &ce) && ce.Transient() {
			cat = contracts.CategoryTransient
		}
		return "", authErrorf(cat, "OpenID Connect discovery of issuer %s: %v", m.oidc.Issuer, err)
	}
	var doc struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", authErrorf(contracts.CategoryAuthorization, "OpenID Connect discovery document %s: not a JSON object", u)
	}
	if strings.TrimSuffix(doc.Issuer, "/") != strings.TrimSuffix(m.oidc.Issuer, "/") {
		// OpenID Connect Discovery 1.0 §4.3: the issuer must be the one asked.
		return "", authErrorf(contracts.CategoryAuthorization, "OpenID Connect discovery document %s: issuer %q is not the configured issuer %q (Discovery §4.3)",
			u, contracts.CutText(doc.Issuer, 200), m.oidc.Issuer)
	}
	if err := checkEndpointURL(doc.TokenEndpoint); err != nil {
		return "", authErrorf(contracts.CategoryAuthorization, "OpenID Connect discovery document %s: token_endpoint: %v", u, err)
	}
	return doc.TokenEndpoint, nil
}

// checkEndpointURL: an absolute https URL, or http to a loopback host;
// no user info, no fragment.
func checkEndpointURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || !p.IsAbs() || p.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", contracts.CutText(u, 200))
	}
	if p.User != nil || p.Fragment != "" {
		return fmt.Errorf("%s: no user info or fragment allowed", p.Redacted())
	}
	switch p.Scheme {
	case "https":
		return nil
	case "http":
		h := p.Hostname()
		if ip := net.ParseIP(h); strings.EqualFold(h, "localhost") || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("%s: https is required (plain http only to a loopback host)", p.Redacted())
	}
	return fmt.Errorf("%s: scheme %q: only https (or http to a loopback host)", p.Redacted(), p.Scheme)
}

// tokenCache is the cached token source of one (store entry, agent
// origin): the entry's scopes and audience are fixed, so the key is
// (origin, scopes, audience) per entry. gen counts the sources; refresh
// replaces the source only when the caller's token came from the current
// one, so that concurrent callers refused at once mint one token, not one
// each.
type tokenCache struct {
	base oauth2.TokenSource
	mu   sync.Mutex
	src  oauth2.TokenSource
	gen  int
}

func newTokenCache(base oauth2.TokenSource) *tokenCache {
	return &tokenCache{base: base, src: oauth2.ReuseTokenSourceWithExpiry(nil, base, TokenExpiryMargin)}
}

// token returns a valid token (cached or minted) and its generation.
func (t *tokenCache) token() (*oauth2.Token, int, error) {
	t.mu.Lock()
	src, gen := t.src, t.gen
	t.mu.Unlock()
	tok, err := src.Token()
	return tok, gen, err
}

// refresh drops the token of generation gen (an agent refused it) and
// returns a new one.
func (t *tokenCache) refresh(gen int) (*oauth2.Token, int, error) {
	t.mu.Lock()
	if t.gen == gen {
		t.src = oauth2.ReuseTokenSourceWithExpiry(nil, t.base, TokenExpiryMargin)
		t.gen++
	}
	t.mu.Unlock()
	return t.token()
}

// tokenCaches holds the token caches of one store entry, per agent origin.
type tokenCaches struct {
	creds  *Credentials
	secret *Secret
	// hc is the token endpoint's client (nil: tokenHTTPClient).
	hc *http.Client
	mu sync.Mutex
	by map[string]*tokenCache
}

func (tc *tokenCaches) forOrigin(origin string) *tokenCache {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if c, ok := tc.by[origin]; ok {
		return c
	}
	m := &minter{creds: tc.creds, oauth2: tc.secret.OAuth2, oidc: tc.secret.OIDC, hc: tc.hc}
	if m.oauth2 != nil {
		m.cc = m.oauth2.ClientCredentials
	} else {
		m.cc = m.oidc.ClientCredentials
	}
	c := newTokenCache(m)
	if tc.by == nil {
		tc.by = map[string]*tokenCache{}
	}
	tc.by[origin] = c
	return c
}

// secret is the client secret: inline, or the file's content (trimmed).
func (cc ClientCredentials) secret() (string, error) {
	if cc.ClientSecretFile == "" {
		return cc.ClientSecret, nil
	}
	b, err := os.ReadFile(cc.ClientSecretFile)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s: cannot be read (%v)", cc.ClientSecretFile, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: empty", cc.ClientSecretFile)
	}
	return s, nil
}

// tokenResult is the result a token request is reported with: "ok", or
// the category of its *AuthError (authorization, transient, protocol).
func tokenResult(err error) string {
	if err == nil {
		return "ok"
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		return resultOf(ae.Category)
	}
	return string(contracts.CategoryProtocol)
}
