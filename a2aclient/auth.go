package a2aclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// authSpec is what WithCredential leaves to the HTTP seam (authTransport):
// an API key in a query parameter or a cookie, and tokens minted by the
// client credentials grant.
type authSpec struct {
	scheme contracts.AuthScheme
	secret Secret
	tokens *tokenCaches
}

// authTransport returns base wrapped in the credential seam, and the
// redactor the client must use (one that exists, so that the tokens
// minted after Dial join it); base and red as they are when there is
// nothing to do at the HTTP level.
func (o Options) authTransport(base http.RoundTripper, red *redactor) (http.RoundTripper, *redactor) {
	if o.auth == nil {
		return base, red
	}
	if red == nil {
		red = &redactor{}
	}
	return &authTransport{base: base, spec: *o.auth, red: red}, red
}

// authTransport puts the credential on every request (A2A 1.0 §4.5): an
// API key in the query parameter or cookie the card names (§4.5.2), or a
// bearer token minted at call time with the client credentials grant (RFC
// 6749 §4.4, §4.5.4 OAuth2, §4.5.5 OpenID Connect; RFC 6750 §2.1 header).
// A token is registered with the client's redactor before it is sent. An
// agent answering 401 or 403 to a minted token gets the request once more
// with a fresh token (the first may have been revoked or rotated early);
// its second answer stands. The card's token URL or OpenID Connect URL is
// compared with the store's and a mismatch fails the call before anything
// is sent (AuthError).
type authTransport struct {
	base http.RoundTripper
	spec authSpec
	red  *redactor
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.spec.check(); err != nil {
		return nil, err
	}
	r, err := t.prepare(req, "")
	if err != nil {
		return nil, err
	}
	if t.spec.tokens == nil {
		return t.base.RoundTrip(r)
	}
	origin, err := cards.Origin(req.URL.String())
	if err != nil {
		return nil, err
	}
	tok, m, err := t.spec.token(origin, t.red)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) ||
		(req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, err
	}
	// Refused: once more with a fresh token.
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
	if tok, err = m.refresh(t.red); err != nil {
		return nil, err
	}
	r, err = t.prepare(req, tok)
	if err != nil {
		return nil, err
	}
	return t.base.RoundTrip(r)
}

// prepare clones req (with a fresh body when it has one) and adds the API
// key of a query or cookie scheme, and token, when not empty.
func (t *authTransport) prepare(req *http.Request, token string) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil && token != "" {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	key := t.spec.secret.APIKey
	if key == "" || t.spec.scheme.Kind != "api_key" {
		return r, nil
	}
	switch t.spec.scheme.In {
	case "query":
		u := *r.URL
		q := u.Query()
		q.Set(t.spec.scheme.Param, key)
		u.RawQuery = q.Encode()
		r.URL = &u
	case "cookie":
		c, err := t.spec.keyCookie()
		if err != nil {
			return nil, err
		}
		r.AddCookie(c)
	}
	return r, nil
}

// minted is the token a call carries: the cache it came from and its
// generation, so that a refused call refreshes the token it used.
type minted struct {
	cache *tokenCache
	gen   int
}

// token returns the bearer token for a call to an agent on origin (cached,
// or minted now), registered with red before it is sent. The spec mints
// tokens (tokens != nil).
func (s authSpec) token(origin string, red *redactor) (string, minted, error) {
	m := minted{cache: s.tokens.forOrigin(origin)}
	tok, gen, err := m.cache.token()
	if err != nil {
		return "", m, err
	}
	m.gen = gen
	red.add(tok.AccessToken)
	return tok.AccessToken, m, nil
}

// refresh drops the refused token and returns a fresh one, registered
// with red.
func (m minted) refresh(red *redactor) (string, error) {
	tok, _, err := m.cache.refresh(m.gen)
	if err != nil {
		return "", err
	}
	red.add(tok.AccessToken)
	return tok.AccessToken, nil
}

// keyCookie is the cookie the API key of a cookie scheme goes in (A2A 1.0
// §4.5.2). Errors: a key a cookie cannot hold (AuthError).
func (s authSpec) keyCookie() (*http.Cookie, error) {
	c := &http.Cookie{Name: s.scheme.Param, Value: s.secret.APIKey}
	if err := c.Valid(); err != nil {
		return nil, authErrorf(contracts.CategoryAuthorization,
			"the API key cannot go in cookie %q (RFC 6265 §4.1.1 cookie-octets, no space, comma, semicolon, quote or backslash)", s.scheme.Param)
	}
	return c, nil
}

// check compares the card's token endpoint or issuer with the store's: a
// secret goes only to the endpoint the operator configured, and a card
// naming another one is refused (both named).
func (s authSpec) check() error {
	sc := s.scheme
	switch {
	case s.secret.OAuth2 != nil && sc.Kind == "oauth2" && sc.TokenURL != "" && !sameURL(sc.TokenURL, s.secret.OAuth2.TokenURL):
		return authErrorf(contracts.CategoryAuthorization,
			"the card's OAuth 2.0 scheme %q names token URL %s, the worker's credential store %s for this origin: nothing was sent (the store's token URL is the only one used; fix the store or ask the agent's operator)",
			sc.Name, contracts.CutText(redactURL(sc.TokenURL), 300), s.secret.OAuth2.TokenURL)
	case s.secret.OIDC != nil && sc.Kind == "oidc" && sc.OpenIDConnectURL != "" && !sameURL(issuerOf(sc.OpenIDConnectURL), s.secret.OIDC.Issuer):
		return authErrorf(contracts.CategoryAuthorization,
			"the card's OpenID Connect scheme %q names %s, the worker's credential store the issuer %s for this origin: nothing was sent",
			sc.Name, contracts.CutText(redactURL(sc.OpenIDConnectURL), 300), s.secret.OIDC.Issuer)
	}
	return nil
}

// issuerOf is the issuer of an openIdConnectUrl (OpenID Connect Discovery
// 1.0 §4: issuer + "/.well-known/openid-configuration").
func issuerOf(discovery string) string {
	return strings.TrimSuffix(strings.TrimSuffix(discovery, "/"), "/.well-known/openid-configuration")
}

// sameURL compares two URLs by origin and path (a trailing slash aside).
func sameURL(a, b string) bool {
	oa, err1 := cards.Origin(a)
	ob, err2 := cards.Origin(b)
	pa, err3 := url.Parse(a)
	pb, err4 := url.Parse(b)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return false
	}
	return oa == ob && strings.TrimSuffix(pa.EscapedPath(), "/") == strings.TrimSuffix(pb.EscapedPath(), "/") && pa.RawQuery == pb.RawQuery
}

func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return fmt.Sprintf("%q", u)
}

// authCategory is the category of an AuthError in err's chain ("" when
// there is none).
func authCategory(err error) contracts.Category {
	var ae *AuthError
	if errors.As(err, &ae) {
		return ae.Category
	}
	return ""
}
