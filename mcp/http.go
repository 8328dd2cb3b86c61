package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/a2adelegate/delegate/contracts"
)

// HTTPOptions configure the Streamable HTTP endpoint (Server.Mux,
// Server.HTTPHandler).
type HTTPOptions struct {
	// ResourceURL is the URL clients reach the MCP endpoint at
	// ("http://127.0.0.1:8990/mcp"; behind a proxy, the proxy's URL): the
	// resource of the protected resource metadata (RFC 9728), whose URL
	// (MetadataURL) every 401 names, an accepted audience of OAuth tokens
	// (NewOIDC), and an allowed Origin. Required by Mux; with
	// HTTPHandler alone, "" leaves resource_metadata out of the 401s.
	ResourceURL string
	// Verify checks each request's bearer token (Verifier).
	Verify auth.TokenVerifier
	// Issuer is, in OAuth resource-server mode (--issuer), the
	// authorization server the metadata names. "" with tokens only
	// (--tokens): the metadata names none, as RFC 9728 §2 allows; the
	// operator hands out the tokens.
	Issuer string
	// AllowedOrigins are origins ("https://app.example.com") a request's
	// Origin header may name besides the resource's own (and loopback
	// ones with LoopbackOrigins): a request naming another is refused
	// with 403 (MCP 2025-11-25, Streamable HTTP: DNS rebinding and pages
	// in a browser). A request without Origin (not from a browser) is
	// served. ParseOrigins checks them.
	AllowedOrigins []string
	// LoopbackOrigins allows the origins of loopback hosts (http or
	// https, localhost, 127.0.0.0/8, [::1], any port): for a server that
	// listens on loopback.
	LoopbackOrigins bool
	// MaxBody bounds a request body (HTTP 413 beyond); 0: 1 MiB.
	MaxBody int64
}

// wellKnownPRM is the well-known path of protected resource metadata
// (RFC 9728 §3).
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// MetadataURL is the URL of the protected resource metadata of resource
// (RFC 9728 §3.1: /.well-known/oauth-protected-resource inserted between
// its host and its path, without a terminating slash):
// "http://127.0.0.1:8990/mcp" has
// "http://127.0.0.1:8990/.well-known/oauth-protected-resource/mcp".
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + wellKnownPRM + strings.TrimSuffix(u.EscapedPath(), "/")
}

// CheckResourceURL checks a resource URL (--resource-url): an absolute
// http or https URL with a host and no user information, query or
// fragment (RFC 9728 §1.2, RFC 8707 §2).
func CheckResourceURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %v", contracts.Truncate(s, 200), err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fmt.Errorf("%q: must be an absolute http or https URL (the URL clients reach the MCP endpoint at, e.g. https://mcp.example.com/mcp)", contracts.Truncate(s, 200))
	case u.User != nil, u.RawQuery != "", u.ForceQuery, u.Fragment != "", strings.Contains(s, "#"):
		return fmt.Errorf("%q: must have no user information, query or fragment", contracts.Truncate(s, 200))
	}
	return nil
}

// ParseOrigins checks and normalises origins (--allowed-origins): each
// scheme://host[:port], http or https, without path, in lower case and
// without the scheme's default port, as a browser sends it.
func ParseOrigins(list []string) ([]string, error) {
	var out []string
	var errs []error
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		o, ok := normalOrigin(s)
		if !ok {
			errs = append(errs, fmt.Errorf("origin %q: must be scheme://host[:port], http or https, with no path (what a browser sends in Origin, e.g. https://app.example.com)", contracts.Truncate(s, 200)))
			continue
		}
		out = append(out, o)
	}
	return out, errors.Join(errs...)
}

// normalOrigin is the serialised origin of s, when s is one.
func normalOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, host != ""
}

// Mux serves the Streamable HTTP endpoint at /mcp (HTTPHandler) and the
// protected resource metadata of RFC 9728, in both modes: at
// /.well-known/oauth-protected-resource/mcp (the form for the endpoint at
// /mcp, which 401 responses name), at the form for ResourceURL's own path
// when it is not /mcp (behind a proxy that keeps paths), and at
// /.well-known/oauth-protected-resource (clients that look at the root).
// It names Issuer as the authorization server (none with tokens only).
func (s *Server) Mux(o HTTPOptions) (*http.ServeMux, error) {
	if err := CheckResourceURL(o.ResourceURL); err != nil {
		return nil, fmt.Errorf("resource URL: %w", err)
	}
	h, err := s.HTTPHandler(o)
	if err != nil {
		return nil, err
	}
	meta := &oauthex.ProtectedResourceMetadata{
		Resource:               o.ResourceURL,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "delegate (MCP): durable A2A delegations",
	}
	if o.Issuer != "" {
		meta.AuthorizationServers = []string{o.Issuer}
	}
	mh := auth.ProtectedResourceMetadataHandler(meta)
	mux := http.NewServeMux()
	mux.Handle(wellKnownPRM+"/mcp", mh)
	mux.Handle(wellKnownPRM, mh)
	u, _ := url.Parse(o.ResourceURL)
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" && p != "/mcp" && plainPath.MatchString(p) {
		mux.Handle(wellKnownPRM+p, mh)
	}
	mux.Handle("/mcp", h)
	return mux, nil
}

// plainPath is a path ServeMux takes as it is (no {wildcard}).
var plainPath = regexp.MustCompile(`^(/[A-Za-z0-9._~%!$&'()*+,;=:@-]+)+$`)

// HTTPHandler is the Streamable HTTP endpoint (mount it at /mcp). In
// order, a request:
//   - with an Origin header not allowed (HTTPOptions.AllowedOrigins) is
//     refused with 403;
//   - must carry a bearer token Verify accepts, or is refused with 401 and
//     WWW-Authenticate: Bearer, with resource_metadata (the metadata's
//     URL) and, when a token was given, error="invalid_token" (RFC 6750
//     §3);
//   - without Mcp-Session-Id opens a session: it must be initialize (400
//     otherwise), and each actor holds at most Options.MaxSessionsPerActor
//     sessions (429 beyond); opening one is not a tool call and is not
//     charged to the actor's rate;
//   - has a body of at most MaxBody bytes (413 beyond).
func (s *Server) HTTPHandler(o HTTPOptions) (http.Handler, error) {
	if o.ResourceURL != "" {
		if err := CheckResourceURL(o.ResourceURL); err != nil {
			return nil, fmt.Errorf("resource URL: %w", err)
		}
	}
	origins, err := ParseOrigins(o.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	allowed := map[string]bool{}
	for _, or := range origins {
		allowed[or] = true
	}
	if o.ResourceURL != "" {
		u, _ := url.Parse(o.ResourceURL)
		if or, ok := normalOrigin(u.Scheme + "://" + u.Host); ok {
			allowed[or] = true
		}
	}
	if o.Verify == nil {
		return nil, errors.New("mcp: HTTPOptions.Verify is required")
	}
	if o.MaxBody == 0 {
		o.MaxBody = 1 << 20
	}
	srv := s.MCPServer()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Logger: s.sdkLogger(), MaxRequestBodyBytes: o.MaxBody,
		// A session nobody used for an hour is closed (the client opens
		// another: every request carries its token anyway).
		SessionTimeout: sessionTimeout,
	})
	// The bearer check's 401 gets its WWW-Authenticate from challenge
	// (the go-sdk's names no error).
	bearer := auth.RequireBearerToken(o.Verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return s.checkOrigin(allowed, o.LoopbackOrigins,
		wwwAuthenticate(MetadataURL(o.ResourceURL), bearer(s.wire(o.MaxBody, s.openSession(srv, o.MaxBody, s.byProtocol(srv, h, o.MaxBody)))))), nil
}

// checkOrigin refuses, with 403, a request whose Origin header is present
// and not allowed: a page in a browser (a DNS-rebound name included) may
// not drive the server. MCP 2025-11-25, Streamable HTTP: "If the Origin
// header is present and invalid, servers MUST respond with HTTP 403
// Forbidden." (The go-sdk's own check, StreamableHTTPOptions'
// CrossOriginProtection, deprecated in v1.8.0, lets any GET through and
// takes an Origin that matches Host: a rebound name does.)
func (s *Server) checkOrigin(allowed map[string]bool, loopback bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values("Origin")
		if len(vals) == 0 {
			h.ServeHTTP(w, r)
			return
		}
		if len(vals) == 1 {
			if o, ok := normalOrigin(vals[0]); ok && (allowed[o] || (loopback && isLoopbackOrigin(o))) {
				h.ServeHTTP(w, r)
				return
			}
		}
		s.o.Logger.Warn("mcp: refused: Origin not allowed", "origin", contracts.Truncate(strings.Join(vals, ", "), 200))
		writeRPCError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Forbidden: Origin %q is not allowed here (the server's --allowed-origins)", contracts.Truncate(strings.Join(vals, ", "), 200)))
	})
}

func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && isLoopbackHost(u.Hostname())
}

// wwwAuthenticate sets the challenge of every 401 (RFC 6750 §3, RFC 9728
// §5.1): Bearer, with error="invalid_token" when the request carried a
// bearer token (one that did not pass), and resource_metadata when the
// metadata's URL is known.
func wwwAuthenticate(metadataURL string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := strings.Fields(r.Header.Get("Authorization"))
		h.ServeHTTP(&challenge{ResponseWriter: w, metadataURL: metadataURL, tokenGiven: len(f) == 2 && strings.EqualFold(f[0], "bearer")}, r)
	})
}

type challenge struct {
	http.ResponseWriter
	metadataURL string
	tokenGiven  bool
}

func (c *challenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		var params []string
		if c.tokenGiven {
			params = append(params, `error="invalid_token"`)
		}
		if c.metadataURL != "" {
			params = append(params, fmt.Sprintf("resource_metadata=%q", c.metadataURL))
		}
		v := "Bearer"
		if len(params) > 0 {
			v += " " + strings.Join(params, ", ")
		}
		c.Header().Set("WWW-Authenticate", v)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challenge) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *challenge) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// openSession handles a POST without Mcp-Session-Id, which opens a
// session. Before the go-sdk, it refuses with 400 one that is not
// initialize (MCP 2025-11-25, Streamable HTTP: a request without a
// session other than initialization SHOULD be answered 400; the go-sdk
// answers it 200 with a JSON-RPC error of code 0), except ping and a
// request of the 2026-07-28 protocol (server/discover, or
// MCP-Protocol-Version or _meta naming it), which the go-sdk answers; and
// it refuses with 429 an initialize of an actor holding
// Options.MaxSessionsPerActor sessions. Sessions are not charged to the
// actor's tool-call rate: a host that opens many (the MCP conformance
// suite does) is not refused its tool calls for it.
func (s *Server) openSession(srv *sdk.Server, maxBody int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(b)) > maxBody {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{bytes.NewReader(b), r.Body}
		// Read as the go-sdk reads it (keys matched exactly), and one
		// message only: a batch or a key given twice could hide an
		// initialize from the bound of sessions.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			code, what := int64(jsonrpc.CodeInvalidRequest), "must be one JSON-RPC message (a JSON object; no batch)"
			if !json.Valid(b) {
				code, what = jsonrpc.CodeParseError, "is not JSON"
			}
			writeRPCError(w, http.StatusBadRequest, nil, code, "Bad Request: a request without Mcp-Session-Id "+what)
			return
		}
		if dups := contracts.DuplicateKeys(b); len(dups) > 0 {
			writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "Bad Request: "+contracts.Truncate(dups[0].Error(), 200)+" (a key given twice is refused)")
			return
		}
		var msg struct {
			ID     json.RawMessage
			Method string
			Params json.RawMessage
		}
		msg.ID, msg.Params = m["id"], m["params"]
		if json.Unmarshal(m["method"], &msg.Method) != nil || msg.Method == "" {
			h.ServeHTTP(w, r) // a response, or no method: the go-sdk says why
			return
		}
		var params, meta map[string]json.RawMessage
		_ = json.Unmarshal(msg.Params, &params)
		_ = json.Unmarshal(params["_meta"], &meta)
		_, metaVersion := meta["io.modelcontextprotocol/protocolVersion"]
		switch {
		case msg.Method == "initialize":
			s.initialize(srv, w, r, msg.ID, h)
		case msg.Method == "ping", msg.Method == "server/discover", metaVersion, r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28":
			// Answered by the go-sdk in a session it closes at once: only
			// initialize makes one that stays.
			h.ServeHTTP(w, r)
		default:
			writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Bad Request: %q without Mcp-Session-Id: open a session first (initialize), then send it with the session's Mcp-Session-Id", contracts.Truncate(msg.Method, 100)))
		}
	})
}

// initialize serves an initialize within the actor's bound of sessions,
// and counts the session it opens until it closes (DELETE, its hour
// unused, the server's end).
func (s *Server) initialize(srv *sdk.Server, w http.ResponseWriter, r *http.Request, id json.RawMessage, h http.Handler) {
	var actor string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		actor = ti.UserID
	}
	s.mu.Lock()
	n := s.sessions[actor]
	if n >= s.o.MaxSessionsPerActor {
		s.mu.Unlock()
		s.o.Logger.Warn("mcp: refused: too many sessions", "actor", actor, "sessions", n)
		w.Header().Set("Retry-After", "60")
		writeRPCError(w, http.StatusTooManyRequests, id, CodeLimited,
			fmt.Sprintf("too many sessions: %s holds %d, at most %d for one actor; close one (HTTP DELETE with its Mcp-Session-Id) or reuse it (a session unused for %s is closed)", actor, n, s.o.MaxSessionsPerActor, sessionTimeout))
		return
	}
	s.sessions[actor]++ // held while the go-sdk opens it
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.sessions[actor]--; s.sessions[actor] <= 0 {
			delete(s.sessions, actor)
		}
	}
	h.ServeHTTP(w, r)
	if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
		for ss := range srv.Sessions() {
			if ss.ID() == sid {
				go func() {
					_ = ss.Wait()
					release()
				}()
				return
			}
		}
	}
	release() // no session opened (or already closed)
}

// writeRPCError writes an HTTP refusal whose body is a JSON-RPC error
// response (MCP Streamable HTTP: an HTTP error status whose body may be
// one), with the request's id when known (else null).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	if len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
