package cards

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/gowebpki/jcs"
)

// WellKnownPath is the Agent Card path of A2A 1.0 §8.2.
const WellKnownPath = "/.well-known/agent-card.json"

// DefaultMaxBytes is the default size limit of a card body (1 MiB).
const DefaultMaxBytes = 1 << 20

// Error is a card error with a kind, so that callers can map it to an
// outcome category without parsing text.
type Error struct {
	// Kind is one of "fetch", "http_status", "http_status_transient",
	// "redirect_refused", "too_large", "malformed", "no_interface",
	// "skill_missing".
	Kind string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Kind + ": " + e.Msg + ": " + e.Err.Error()
	}
	return e.Kind + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Transient reports whether retrying the fetch may help (connection errors,
// timeouts, 5xx, 429).
func (e *Error) Transient() bool {
	return e.Kind == "fetch" || e.Kind == "http_status_transient"
}

var errRedirect = errors.New("redirect refused")

// Fetcher fetches Agent Cards through the HTTP guard, caches them (A2A 1.0
// §8.6.2: Cache-Control max-age and ETag with If-None-Match), and verifies
// their signatures against the trust store. Safe for concurrent use; the
// zero value works (no trusted keys, default limits).
type Fetcher struct {
	// Trust is the trust store (nil: none).
	Trust *TrustStore
	// MaxBytes is the body limit of a card or a JWKS (default
	// DefaultMaxBytes).
	MaxBytes int64
	// Timeout bounds one fetch (default 10 s).
	Timeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Resolver for the guard; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Requests counts the HTTP requests made (for tests and metrics).
	Requests atomic.Int64
	// MaxCacheEntries and MaxCacheBytes bound the cache of cards and JWK
	// Sets (default DefaultCacheEntries, DefaultCacheBytes; each body
	// counted twice, body and parsed card); MaxClients the guarded HTTP
	// clients kept (default DefaultClients). The least recently used go
	// first; an evicted client's idle connections are closed.
	MaxCacheEntries int
	MaxCacheBytes   int64
	MaxClients      int
	// Observer, when set, is told of every card request made over the
	// network (not of a card served from the cache): method GetAgentCard,
	// binding "HTTP" (internal/metrics).
	Observer Observer

	mu      sync.Mutex
	cache   lru[*cacheEntry]
	clients lru[*http.Client]
}

func (f *Fetcher) cacheLimits() (int, int64) {
	n, b := f.MaxCacheEntries, f.MaxCacheBytes
	if n <= 0 {
		n = DefaultCacheEntries
	}
	if b <= 0 {
		b = DefaultCacheBytes
	}
	return n, b
}

// CacheLen returns how many cards and JWK Sets, and how many HTTP clients,
// the fetcher keeps now.
func (f *Fetcher) CacheLen() (entries, clients int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache.len(), f.clients.len()
}

type cacheEntry struct {
	body    []byte
	etag    string
	expires time.Time
	card    *Card // nil for a JWKS entry
}

// Guard returns the HTTP guard of the fetcher.
func (f *Fetcher) Guard() *Guard { return &Guard{Trust: f.Trust, Resolver: f.Resolver} }

// Client returns the guarded HTTP client for requests on behalf of a card
// origin, one per origin and header timeout, kept so that connections are
// reused.
func (f *Fetcher) Client(origin string, headerTimeout time.Duration) *http.Client {
	return f.ClientTLS(origin, headerTimeout, nil)
}

// ClientTLS is Client whose connections use tlsConf (a client certificate
// for an agent's origin, A2A 1.0 §4.5.6; nil: the default TLS settings),
// with the guard's checks unchanged. One client per (origin,
// headerTimeout, tlsConf pointer) is kept.
func (f *Fetcher) ClientTLS(origin string, headerTimeout time.Duration, tlsConf *tls.Config) *http.Client {
	key := fmt.Sprintf("%s|%s|%p", origin, headerTimeout, tlsConf)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients.get(key); ok {
		return c
	}
	g := f.Guard()
	g.HeaderTimeout = headerTimeout
	c := g.ClientTLS(origin, tlsConf)
	max := f.MaxClients
	if max <= 0 {
		max = DefaultClients
	}
	f.clients.evicted = closeIdle
	f.clients.put(key, c, 0, max, 0)
	return c
}

// FetchDocument GETs a JSON document that is not a card (an OpenID
// Connect discovery document, OpenID Connect Discovery 1.0 §4) through the
// guard, on behalf of u's own origin, with the fetcher's size limit
// (MaxBytes), timeout and cache. Errors are *Error.
func (f *Fetcher) FetchDocument(ctx context.Context, u string) ([]byte, error) {
	origin, err := Origin(u)
	if err != nil {
		return nil, &Error{Kind: "guard", Msg: "GET " + redact(u), Err: err}
	}
	b, _, _, err := f.get(ctx, u, origin, "")
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Card is a fetched and parsed Agent Card with the bytes it was parsed
// from. The card used afterwards is exactly the card that was verified.
type Card struct {
	URL          string                     // the URL the card was fetched from
	Origin       string                     // its origin
	Raw          []byte                     // the body as received
	Parsed       *a2a.AgentCard             // parsed with the 1.0 model (0.3 cards converted)
	Digest       string                     // "sha256:<hex>", see Digest
	Verification contracts.CardVerification // result of Verify against the trust store
	// FromCache is true when no request was made or the server answered
	// 304 Not Modified.
	FromCache bool
}

// RequireSignature reports whether the trust store requires a verified
// signature for an origin.
func (f *Fetcher) RequireSignature(origin string) bool { return f.Trust.For(origin).RequireSignature }

// CardURL returns the URL of the card: u itself, or u with WellKnownPath
// when u has no path.
func CardURL(u string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", &Error{Kind: "malformed", Msg: "agent_card_url is not a URL", Err: err}
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" {
		return "", &Error{Kind: "malformed", Msg: fmt.Sprintf("agent_card_url scheme %q is not http or https", parsed.Scheme)}
	}
	if parsed.Host == "" {
		return "", &Error{Kind: "malformed", Msg: "agent_card_url has no host"}
	}
	if parsed.Path == "" || parsed.Path == "/" {
		parsed.Path = WellKnownPath
	}
	return parsed.String(), nil
}

// Fetch returns the card at cardURL (see CardURL): from the cache while
// its max-age lasts, after a conditional request when it has an ETag (a
// 304 reuses the cached card and its verification), else fetched anew
// through the guard with the size limit and timeouts, then parsed,
// digested and verified. Errors are *Error.
func (f *Fetcher) Fetch(ctx context.Context, cardURL string) (*Card, error) {
	u, err := CardURL(cardURL)
	if err != nil {
		return nil, err
	}
	origin, _ := Origin(u)
	body, fromCache, entry, err := f.get(ctx, u, origin, MethodGetAgentCard)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	cached := entry.card
	f.mu.Unlock()
	if fromCache && cached != nil {
		c := *cached
		c.FromCache = true
		return &c, nil
	}
	c, err := f.parseVerified(ctx, body, u, origin)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	entry.card = c
	n, b := f.cacheLimits()
	f.cache.resize(u, 2*int64(len(body)), n, b)
	f.mu.Unlock()
	return c, nil
}

// parseVerified parses a card body, digests it and verifies its
// signatures against the trust entry of origin; a verified card is parsed
// from the payload its signature covers, so that nothing unsigned reaches
// the delegation.
func (f *Fetcher) parseVerified(ctx context.Context, body []byte, u, origin string) (*Card, error) {
	c, err := Parse(body)
	if err != nil {
		return nil, err
	}
	c.URL, c.Origin = u, origin
	c.Verification = Verify(ctx, body, origin, f.Trust, func(ctx context.Context, jku string) ([]byte, error) {
		b, _, _, err := f.get(ctx, jku, origin, "")
		return b, err
	}, f.now())
	if c.Verification.Status == contracts.SigVerified {
		// The card used is exactly the card that was verified.
		signed, err := Parse(c.Verification.Payload)
		if err != nil {
			return nil, err
		}
		c.Parsed = signed.Parsed
	}
	return c, nil
}

// Extended parses, digests and verifies the authenticated extended Agent
// Card (A2A 1.0 §3.1.11, §13.3) that the agent of public answered with
// (body as received, e.g. a2aclient.Client.GetExtendedAgentCard), exactly
// as Fetch does the public card: the same schema, both JSON forms, the
// trust entry of public's origin (a signed extended card verifies with
// that origin's keys; a required signature is required of it too). Its
// URL and Origin are public's. Errors are *Error of kind "malformed"
// (named as the extended card's).
func (f *Fetcher) Extended(ctx context.Context, public *Card, body []byte) (*Card, error) {
	c, err := f.parseVerified(ctx, body, public.URL, public.Origin)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, &Error{Kind: ce.Kind, Msg: "extended card: " + ce.Msg, Err: ce.Err}
		}
		return nil, err
	}
	return c, nil
}

// get fetches u on behalf of the card origin, using the cache.
func (f *Fetcher) get(ctx context.Context, u, origin, method string) ([]byte, bool, *cacheEntry, error) {
	if f.Observer == nil || method == "" {
		return f.getURL(ctx, u, origin, nil)
	}
	start := time.Now()
	var requested bool
	body, cached, entry, err := f.getURL(ctx, u, origin, &requested)
	if requested {
		f.Observer.AgentRequest(origin, "HTTP", method, requestResult(err), time.Since(start))
	}
	return body, cached, entry, err
}

// getURL is get; *requested (when not nil) is set when a request goes out.
func (f *Fetcher) getURL(ctx context.Context, u, origin string, requested *bool) ([]byte, bool, *cacheEntry, error) {
	g := f.Guard()
	if err := g.CheckURL(u); err != nil {
		return nil, false, nil, &Error{Kind: "guard", Msg: "GET " + redact(u), Err: err}
	}
	f.mu.Lock()
	old, _ := f.cache.get(u)
	f.mu.Unlock()
	now := f.now()
	if old != nil && now.Before(old.expires) {
		return old.body, true, old, nil
	}
	timeout := f.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, nil, &Error{Kind: "malformed", Msg: "cannot build request", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if old != nil && old.etag != "" {
		req.Header.Set("If-None-Match", old.etag)
	}
	f.Requests.Add(1)
	if requested != nil {
		*requested = true
	}
	resp, err := f.Client(origin, 0).Do(req)
	if err != nil {
		switch {
		case errors.Is(err, errRedirect):
			return nil, false, nil, &Error{Kind: "redirect_refused", Msg: "GET " + redact(u), Err: err}
		case errors.Is(err, ErrGuard):
			return nil, false, nil, &Error{Kind: "guard", Msg: "GET " + redact(u), Err: err}
		}
		return nil, false, nil, &Error{Kind: "fetch", Msg: "GET " + redact(u), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && old != nil {
		f.mu.Lock()
		old.expires = expiry(resp.Header, now)
		f.mu.Unlock()
		return old.body, true, old, nil
	}
	if resp.StatusCode != http.StatusOK {
		kind := "http_status"
		if transientStatus(resp.StatusCode) {
			kind = "http_status_transient"
		}
		return nil, false, nil, &Error{Kind: kind, Msg: fmt.Sprintf("GET %s: HTTP %d", redact(u), resp.StatusCode)}
	}
	limit := f.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, false, nil, &Error{Kind: "fetch", Msg: "reading " + redact(u), Err: err}
	}
	if int64(len(body)) > limit {
		return nil, false, nil, &Error{Kind: "too_large", Msg: fmt.Sprintf("GET %s: body exceeds %d bytes", redact(u), limit)}
	}
	e := &cacheEntry{body: body, etag: resp.Header.Get("ETag"), expires: expiry(resp.Header, now)}
	f.mu.Lock()
	n, b := f.cacheLimits()
	f.cache.put(u, e, int64(len(body)), n, b)
	f.mu.Unlock()
	return body, false, e, nil
}

// transientStatus: worth retrying (429, 500, 502, 503, 504); 501 and the
// other statuses are not.
func transientStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// redact hides the password of a URL's userinfo.
func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(unparseable URL)"
}

// expiry reads Cache-Control max-age; no-store, no-cache or no max-age
// mean expired at once, so that the next use revalidates (with the ETag,
// when there is one).
func expiry(h http.Header, now time.Time) time.Time {
	for _, d := range strings.Split(h.Get("Cache-Control"), ",") {
		d = strings.TrimSpace(strings.ToLower(d))
		if d == "no-store" || d == "no-cache" {
			return now
		}
		if v, ok := strings.CutPrefix(d, "max-age="); ok {
			if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
				return now.Add(time.Duration(secs) * time.Second)
			}
		}
	}
	return now
}

// Parse parses a card body in the 1.0 or the 0.3 format and digests it.
// Errors are *Error of kind "malformed".
func Parse(body []byte) (*Card, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil || probe == nil {
		return nil, &Error{Kind: "malformed", Msg: "card is not a JSON object", Err: err}
	}
	// encoding/json matches field names case-insensitively and keeps the
	// last of duplicate keys: a card with keys that differ only in case,
	// or a key given twice, could read differently from what was signed.
	if dup := caseDuplicate(body); dup != "" {
		return nil, &Error{Kind: "malformed", Msg: "card has keys that differ only in case, or a key given twice: " + dup}
	}
	forms, err := normalizeForms(body)
	if err != nil {
		return nil, &Error{Kind: "malformed", Msg: "card does not match the Agent Card schema", Err: err}
	}
	parsed, err := a2av0.NewAgentCardParser()(forms)
	if err != nil {
		return nil, &Error{Kind: "malformed", Msg: "card does not match the Agent Card schema", Err: err}
	}
	if _, has := probe["supportedInterfaces"]; !has && len(parsed.SupportedInterfaces) == 0 {
		// A2A 0.3 §5.5: preferredTransport defaults to JSONRPC at the main url.
		var legacy struct {
			URL             string `json:"url"`
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(body, &legacy) == nil && legacy.URL != "" {
			v := a2av0.Version
			if legacy.ProtocolVersion != "" {
				v = a2a.ProtocolVersion(legacy.ProtocolVersion)
			}
			parsed.SupportedInterfaces = []*a2a.AgentInterface{{URL: legacy.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: v}}
		}
	}
	if strings.TrimSpace(parsed.Name) == "" {
		return nil, &Error{Kind: "malformed", Msg: "card has no name"}
	}
	digest, err := Digest(body)
	if err != nil {
		return nil, err
	}
	return &Card{Raw: body, Parsed: parsed, Digest: digest}, nil
}

// Digest returns "sha256:" + hex of the RFC 8785 canonical form of the card
// JSON without its "signatures" member (A2A 1.0 §8.4.1).
func Digest(body []byte) (string, error) {
	canon, err := CanonicalWithoutSignatures(body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// CanonicalWithoutSignatures returns the RFC 8785 (JCS) form of the card JSON
// with the top-level "signatures" member removed.
func CanonicalWithoutSignatures(body []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, &Error{Kind: "malformed", Msg: "card is not a JSON object", Err: err}
	}
	delete(obj, "signatures")
	stripped, err := json.Marshal(obj)
	if err != nil {
		return nil, &Error{Kind: "malformed", Msg: "card cannot be re-encoded", Err: err}
	}
	canon, err := jcs.Transform(stripped)
	if err != nil {
		return nil, &Error{Kind: "malformed", Msg: "card cannot be canonicalized (RFC 8785)", Err: err}
	}
	return canon, nil
}

// SupportedBindings are the protocol bindings this client speaks, in order
// of preference: JSON-RPC (A2A 1.0 §9), HTTP+JSON (§11), gRPC (§10). gRPC
// comes last: its url is read in more ways than one (GRPCTarget), and an
// agent that offers it beside an HTTP binding is reached the same way by
// either.
var SupportedBindings = []string{string(a2a.TransportProtocolJSONRPC), string(a2a.TransportProtocolHTTPJSON), string(a2a.TransportProtocolGRPC)}

// Unsupported are the binding@version pairs refused at interface
// selection, before anything is sent, with the reason. None today: A2A 0.3
// over HTTP+JSON (A2A 0.3 §3.2.3: paths under /v1, camelCase JSON) was
// refused while the a2a-go compat client sent 1.0 paths and snake_case
// fields; a2a-go v2.4.0 implements the 0.3 REST wire (a2a-go#371), and
// a2aclient dials it through a2acompat/a2av0.
var Unsupported = map[string]string{}

func truncateURL(u string) string {
	if len(u) <= 200 {
		return u
	}
	return u[:200] + "…"
}

// SupportedVersions are the protocol versions (Major.Minor) this client
// speaks, newest first (A2A 1.0 §3.6).
var SupportedVersions = []string{"1.0", "0.3"}

// WireVersion is the version an interface declaring version (Major.Minor)
// is spoken at: 0.2.x interfaces are spoken as 0.3, whose JSON-RPC methods
// (message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe) and object shapes 0.2.5 already defines; servers at
// 0.2.5 (trpc-a2a-go's library constant) serve exactly that wire. Every
// other version is spoken as it is declared.
func WireVersion(version string) string {
	if strings.HasPrefix(version, "0.2") {
		return "0.3"
	}
	return version
}

// MajorMinor reduces a protocol version to Major.Minor ("0.3.0" → "0.3");
// A2A 1.0 §3.6: patch versions are not considered in negotiation.
func MajorMinor(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	if len(parts) == 1 && parts[0] != "" {
		return parts[0] + ".0"
	}
	return ""
}

// SelectInterface picks from the card's supportedInterfaces the newest
// protocol version in SupportedVersions, then the first binding of
// SupportedBindings (A2A 1.0 §5.2: the client chooses among the declared
// interfaces). allow, when not nil, may refuse a candidate URL (the HTTP
// guard's CheckInterface); refusals are named in the error. A GRPC
// interface's url is read as a GRPCTarget and allow is given its URL form
// (GRPCTarget.URL); the interface keeps the url as the card wrote it. An
// interface at 0.2.x is spoken as 0.3 (WireVersion), its protocolVersion
// kept as given in DeclaredVersion.
// Errors are *Error of kind "no_interface".
func SelectInterface(card *a2a.AgentCard, allow func(url string) error) (contracts.Interface, error) {
	var best *contracts.Interface
	rank := func(i contracts.Interface) int {
		return slices.Index(SupportedVersions, i.Version)*len(SupportedBindings) + slices.Index(SupportedBindings, i.Binding)
	}
	var seen, refused []string
	for _, si := range card.SupportedInterfaces {
		if si == nil {
			continue
		}
		declared := MajorMinor(string(si.ProtocolVersion))
		cand := contracts.Interface{URL: si.URL, Binding: string(si.ProtocolBinding), Version: WireVersion(declared), Tenant: si.Tenant}
		if cand.Version != declared {
			cand.DeclaredVersion = string(si.ProtocolVersion)
		}
		seen = append(seen, cand.Binding+"@"+declared)
		if !slices.Contains(SupportedVersions, cand.Version) || !slices.Contains(SupportedBindings, cand.Binding) {
			continue
		}
		if reason, bad := Unsupported[cand.Binding+"@"+cand.Version]; bad {
			refused = append(refused, fmt.Sprintf("%s@%s at %q: %s", cand.Binding, cand.Version, truncateURL(cand.URL), reason))
			continue
		}
		checked := cand.URL
		if cand.Binding == string(a2a.TransportProtocolGRPC) {
			// A gRPC target (A2A 1.0 §10): the guard checks its URL form.
			t, err := ParseGRPCTarget(cand.URL)
			if err != nil {
				refused = append(refused, fmt.Sprintf("%s@%s at %q: %v", cand.Binding, cand.Version, truncateURL(cand.URL), err))
				continue
			}
			checked = t.URL()
		} else if u, err := url.Parse(cand.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			refused = append(refused, fmt.Sprintf("%s@%s at %q: the interface url must be an absolute http or https URL", cand.Binding, cand.Version, truncateURL(cand.URL)))
			continue
		}
		if allow != nil {
			if err := allow(checked); err != nil {
				refused = append(refused, err.Error())
				continue
			}
		}
		if best == nil || rank(cand) < rank(*best) {
			c := cand
			best = &c
		}
	}
	if best == nil {
		msg := fmt.Sprintf("no supported interface: card offers %v, this client speaks %v over %v", seen, SupportedVersions, SupportedBindings)
		if len(refused) > 0 {
			// Spoken, but refused (the guard, an unusable url): that is the
			// reason to give first.
			msg = fmt.Sprintf("no usable interface: refused: %s (the card offers %v; this client speaks %v over %v)",
				strings.Join(refused, "; "), seen, SupportedVersions, SupportedBindings)
		}
		return contracts.Interface{}, &Error{Kind: "no_interface", Msg: msg}
	}
	return *best, nil
}

// FindSkill returns the card's skill with the given id.
func FindSkill(card *a2a.AgentCard, id string) (a2a.AgentSkill, bool) {
	for _, s := range card.Skills {
		if s.ID == id {
			return s, true
		}
	}
	return a2a.AgentSkill{}, false
}

// SchemeOf picks the security scheme calls are authenticated with (A2A 1.0
// §4.5; securityRequirements are an OR of ANDs, as OpenAPI 3's Security
// Requirement Object): the first requirement, in the card's order, whose
// schemes are all usable and all satisfied by has (asked per Kind:
// "bearer", "api_key", "oauth2", "oidc", "mtls"; nil: all satisfied);
// when none is, the first usable scheme of the requirements, then of
// securitySchemes by name, whatever has says, so that what the card wants
// is still recorded. Usable: an HTTP bearer scheme (§4.5.3) → "bearer",
// an apiKey in a header, query or cookie (§4.5.2) → "api_key", OAuth 2.0
// (§4.5.4) → "oauth2" (TokenURL from its clientCredentials flow), OpenID
// Connect (§4.5.5) → "oidc", mTLS (§4.5.6) → "mtls" (or WithMTLS on the
// scheme it is ANDed with). A requirement of two non-mTLS schemes cannot
// be met with one credential and is skipped. nil when the card declares
// no usable scheme.
func SchemeOf(card *a2a.AgentCard, has func(kind string) bool) *contracts.AuthScheme {
	if card == nil || len(card.SecuritySchemes) == 0 {
		return nil
	}
	// requirement returns the scheme that meets req, when one can.
	requirement := func(req a2a.SecurityRequirements, check bool) *contracts.AuthScheme {
		names := make([]string, 0, len(req))
		for n := range req {
			names = append(names, string(n))
		}
		slices.Sort(names)
		var main *contracts.AuthScheme
		mtls := false
		for _, n := range names {
			s := schemeFor(n, card.SecuritySchemes[a2a.SecuritySchemeName(n)], req[a2a.SecuritySchemeName(n)])
			switch {
			case s == nil:
				return nil
			case check && has != nil && !has(s.Kind):
				return nil
			case s.Kind == "mtls":
				mtls = true
			case main != nil:
				return nil
			default:
				main = s
			}
		}
		if main == nil && mtls {
			return &contracts.AuthScheme{Kind: "mtls", Name: names[0]}
		}
		if main != nil {
			main.WithMTLS = mtls
		}
		return main
	}
	for _, req := range card.SecurityRequirements {
		if s := requirement(req, true); s != nil {
			return s
		}
	}
	for _, req := range card.SecurityRequirements {
		if s := requirement(req, false); s != nil {
			return s
		}
	}
	names := make([]string, 0, len(card.SecuritySchemes))
	for n := range card.SecuritySchemes {
		names = append(names, string(n))
	}
	slices.Sort(names)
	for _, n := range names {
		if s := schemeFor(n, card.SecuritySchemes[a2a.SecuritySchemeName(n)], nil); s != nil {
			return s
		}
	}
	return nil
}

// Bounds of what SchemeOf records of a card's scheme (it goes into
// workflow history): a name or scope is cut, a URL longer than
// maxSchemeURL is cut (and then names no endpoint the store has: the call
// is refused), a header, query or cookie name over maxSchemeParam makes
// the scheme unusable.
const (
	maxSchemeText   = 200
	maxSchemeURL    = 2048
	maxSchemeParam  = 256
	maxSchemeScopes = 32
)

// schemeFor is the AuthScheme of one card scheme (nil: not usable).
func schemeFor(name string, scheme a2a.SecurityScheme, scopes []string) *contracts.AuthScheme {
	s := &contracts.AuthScheme{Name: contracts.CutText(name, maxSchemeText)}
	for i, sc := range scopes {
		if i == maxSchemeScopes {
			break
		}
		s.Scopes = append(s.Scopes, contracts.CutText(sc, maxSchemeText))
	}
	switch v := scheme.(type) {
	case a2a.HTTPAuthSecurityScheme:
		if !strings.EqualFold(v.Scheme, "bearer") {
			return nil
		}
		s.Kind = "bearer"
	case a2a.OAuth2SecurityScheme:
		s.Kind = "oauth2"
		if cc, ok := v.Flows.(a2a.ClientCredentialsOAuthFlow); ok {
			s.TokenURL = contracts.CutText(cc.TokenURL, maxSchemeURL)
		}
	case a2a.OpenIDConnectSecurityScheme:
		s.Kind, s.OpenIDConnectURL = "oidc", contracts.CutText(v.OpenIDConnectURL, maxSchemeURL)
	case a2a.MutualTLSSecurityScheme:
		s.Kind = "mtls"
	case a2a.APIKeySecurityScheme:
		if v.Name == "" || len(v.Name) > maxSchemeParam {
			return nil
		}
		s.Kind = "api_key"
		switch v.Location {
		case a2a.APIKeySecuritySchemeLocationHeader:
			s.Header = v.Name
		case a2a.APIKeySecuritySchemeLocationQuery, a2a.APIKeySecuritySchemeLocationCookie:
			s.In, s.Param = string(v.Location), v.Name
		default:
			return nil
		}
	default:
		return nil
	}
	return s
}

// caseDuplicate returns the path of the first object key that, folded to
// lower case, appears twice in its object, or "".
func caseDuplicate(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var walk func(path string) string
	walk = func(path string) string {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return ""
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return ""
				}
				k, _ := kt.(string)
				if seen[strings.ToLower(k)] {
					return path + "." + k
				}
				seen[strings.ToLower(k)] = true
				if dup := walk(path + "." + k); dup != "" {
					return dup
				}
			}
			_, _ = dec.Token()
		case '[':
			for i := 0; dec.More(); i++ {
				if dup := walk(fmt.Sprintf("%s[%d]", path, i)); dup != "" {
					return dup
				}
			}
			_, _ = dec.Token()
		}
		return ""
	}
	return walk("$")
}
