package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/cards"
)

// The names of delegate's own metrics (docs/operations.md, "Watching
// delegate"). Dashboards and alert rules rely on them: do not rename.
const (
	// DelegationsEnded counts delegations whose Outcome became final,
	// labels status (Outcome status) and category (error category, "" when
	// none).
	DelegationsEnded = "delegate_delegations_ended_total"
	// A2ARequestDuration is a histogram of the calls to agents, in
	// seconds, labels agent_origin, binding, method and result.
	A2ARequestDuration = "delegate_a2a_request_duration_seconds"
	// TokenRequests counts OAuth 2.0 / OIDC token requests (mints and
	// refreshes), labels token_origin and result.
	TokenRequests = "delegate_token_requests_total"
	// CardVerifications counts Agent Card resolutions by what their
	// signature check said, label result.
	CardVerifications = "delegate_card_verifications_total"
	// WaitingDelegations is the number of running delegations waiting in
	// an a2a_state an operator (or the agent's user) must act on.
	WaitingDelegations = "delegate_waiting_delegations"
	// OldestWaitingSeconds is how long the oldest of them has waited.
	OldestWaitingSeconds = "delegate_oldest_waiting_seconds"
)

// Names lists the names of delegate's own metrics, as served (a histogram
// is served as <name>_bucket, <name>_sum and <name>_count).
var Names = []string{DelegationsEnded, A2ARequestDuration, TokenRequests, CardVerifications, WaitingDelegations, OldestWaitingSeconds}

// Request results (label result of A2ARequestDuration and TokenRequests).
const (
	ResultOK             = "ok"
	ResultTransient      = "transient"
	ResultProtocol       = "protocol"
	ResultAuthorization  = "authorization"
	ResultUnknownOutcome = "unknown_outcome"
)

// Card verification results (label result of CardVerifications).
const (
	// CardVerified: a signature verified with a key the trust store
	// trusts for the card's origin.
	CardVerified = "verified"
	// CardUnverified: the card carries no signature (used unverified
	// unless a signature is required).
	CardUnverified = "unverified"
	// CardUntrusted: the card is signed, and no signature verified with a
	// trusted key (a bad signature, an unknown, revoked or expired key).
	CardUntrusted = "untrusted"
	// CardChanged: a follow-up found the card changed under the
	// delegation in a way that matters (contracts.CardInUse.WhatChanged).
	CardChanged = "changed"
)

// OtherOrigin is the origin label of the origins past MaxOrigins, and of
// what is not a URL.
const OtherOrigin = "other"

// DefaultMaxOrigins is Options.MaxOrigins when unset.
const DefaultMaxOrigins = 50

// Options configure New.
type Options struct {
	// MaxOrigins bounds the distinct values of agent_origin, and those of
	// token_origin (each on its own): the origins seen after that many are
	// counted as OtherOrigin (0: DefaultMaxOrigins).
	MaxOrigins int
}

// Metrics holds a worker's metrics: the Temporal SDK's (through tally)
// and delegate's own (Names), in one Prometheus registry of its own.
// Safe for concurrent use. It implements the observers of packages
// a2aclient, cards and activities, the SDK's metrics handler (Handler), a
// worker interceptor that counts ended delegations (Interceptor), and the
// reader of the waiting gauges (WatchWaiting).
type Metrics struct {
	reg      *prometheus.Registry
	scope    tally.Scope
	closer   interface{ Close() error }
	reporter tallyprom.Reporter

	ended    *prometheus.CounterVec
	requests *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
	cards    *prometheus.CounterVec
	waiting  *prometheus.GaugeVec
	oldest   *prometheus.GaugeVec

	agentOrigins, tokenOrigins *originSet
}

// RequestBuckets are the buckets of A2ARequestDuration, in seconds: from
// a local agent's few milliseconds to a send that works for a minute.
var RequestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New makes the registry with delegate's metrics and the SDK's (whose
// tally scope reports every second). Close it with Close.
func New(o Options) *Metrics {
	if o.MaxOrigins <= 0 {
		o.MaxOrigins = DefaultMaxOrigins
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: DelegationsEnded,
			Help: "Delegations whose Outcome became final, by Outcome status and error category (empty when none)."},
			[]string{"status", "category"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: A2ARequestDuration,
			Help:    "Calls to agents (SendMessage, SendStreamingMessage, GetTask, CancelTask, GetAgentCard, GetExtendedAgentCard), in seconds, by agent origin, protocol binding, method and result (ok, transient, protocol, authorization, unknown_outcome).",
			Buckets: RequestBuckets},
			[]string{"agent_origin", "binding", "method", "result"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: TokenRequests,
			Help: "OAuth 2.0 / OIDC token requests (mints and refreshes) by token endpoint origin and result (ok, transient, protocol, authorization)."},
			[]string{"token_origin", "result"}),
		cards: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CardVerifications,
			Help: "Agent Card resolutions by signature check: verified, unverified (no signature), untrusted (signed, no trusted key verified it), changed (changed under a delegation in a way that matters)."},
			[]string{"result"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: WaitingDelegations,
			Help: "Running delegations waiting in a2a_state input-required, auth-required, unknown-outcome or card-changed (read from visibility by the worker)."},
			[]string{"a2a_state"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: OldestWaitingSeconds,
			Help: "Seconds the oldest delegation in a2a_state has waited there (as first seen by this worker; what already waited when it started counts from its run's start); 0 when none waits."},
			[]string{"a2a_state"}),
		agentOrigins: newOriginSet(o.MaxOrigins),
		tokenOrigins: newOriginSet(o.MaxOrigins),
	}
	reg.MustRegister(m.ended, m.requests, m.tokens, m.cards, m.waiting, m.oldest,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range WaitingStates {
		m.waiting.WithLabelValues(s).Set(0)
		m.oldest.WithLabelValues(s).Set(0)
	}
	// A closed set: served at 0 from the start, so that the first
	// untrusted card is an increase (the alert rules use increase()).
	for _, r := range []string{CardVerified, CardUnverified, CardUntrusted, CardChanged} {
		m.cards.WithLabelValues(r)
	}
	m.reporter = tallyprom.NewReporter(tallyprom.Options{Registerer: reg})
	m.scope, m.closer = tally.NewRootScope(tally.ScopeOptions{
		CachedReporter: m.reporter, Separator: tallyprom.DefaultSeparator,
		SanitizeOptions: &tallyprom.DefaultSanitizerOpts,
	}, time.Second)
	return m
}

// Close stops the SDK metrics' reporting.
func (m *Metrics) Close() error { return m.closer.Close() }

// HTTPHandler serves the registry in the Prometheus text format.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Serve serves HTTPHandler at addr (path /metrics) until ctx ends, and
// returns the address it listens on (addr with port 0: the port chosen).
// Errors: addr cannot be listened on.
func (m *Metrics) Serve(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		_ = m.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return ln.Addr().String(), nil
}

// Serve starts a Prometheus endpoint at addr (path /metrics) with a new
// Metrics, and returns the SDK's metrics handler (for
// client.Options.MetricsHandler) and the address it listens on. It stops
// when ctx ends.
func Serve(ctx context.Context, addr string) (sdkclient.MetricsHandler, string, error) {
	m := New(Options{})
	a, err := m.Serve(ctx, addr)
	if err != nil {
		_ = m.Close()
		return nil, "", err
	}
	return m.Handler(), a, nil
}

// AgentRequest observes one call to an agent (a2aclient.Observer,
// cards.Observer): origin is the agent's (folded to scheme://host:port,
// or OtherOrigin), binding the protocol binding ("JSONRPC", "HTTP+JSON",
// "GRPC"; "HTTP" for a card fetch), method the A2A method or
// "GetAgentCard", result one of the Result constants, d the call's time.
func (m *Metrics) AgentRequest(origin, binding, method, result string, d time.Duration) {
	m.requests.WithLabelValues(m.agentOrigins.label(origin), binding, method, result).Observe(d.Seconds())
}

// TokenRequest counts one token request to the endpoint at tokenURL
// (a2aclient.Observer): its origin becomes token_origin; result is a
// Result constant.
func (m *Metrics) TokenRequest(tokenURL, result string) {
	m.tokens.WithLabelValues(m.tokenOrigins.label(tokenURL), result).Inc()
}

// CardVerification counts one card resolution by result, a Card
// constant (activities.Observer).
func (m *Metrics) CardVerification(result string) {
	m.cards.WithLabelValues(result).Inc()
}

// originSet folds URLs to their origin and bounds how many distinct ones
// become label values.
type originSet struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

func newOriginSet(max int) *originSet { return &originSet{max: max, seen: map[string]bool{}} }

// label is u's origin, scheme://host:port (the port written even when it
// is the scheme's default), when u parses with a scheme and a host and the
// set still has room for it or holds it already; else OtherOrigin. Path,
// query, user info and fragment never reach a label.
func (s *originSet) label(u string) string {
	o := Origin(u)
	if o == "" {
		return OtherOrigin
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[o] {
		return o
	}
	if len(s.seen) >= s.max {
		return OtherOrigin
	}
	s.seen[o] = true
	return o
}

// Origin is u's scheme://host:port as a label (cards.LabelOrigin: lower
// case, default ports written, grpc://host:port for a gRPC target), or ""
// when u is none of these: never the text itself, whose query, user info or
// path would reach a label.
func Origin(u string) string { return cards.LabelOrigin(u) }

// Handler is the Temporal SDK's metrics handler on this registry (for
// client.Options.MetricsHandler). Counters named DelegationsEnded go to
// delegate's own counter with only its labels (status, category), so
// that the SDK's tags (namespace, task queue, workflow type) do not reach
// it; every other metric is the SDK's, with its tags, through tally.
func (m *Metrics) Handler() sdkclient.MetricsHandler { return handler{m: m, scope: m.scope} }

// handler adapts a tally scope to the SDK's metrics handler.
type handler struct {
	m     *Metrics
	scope tally.Scope
	tags  map[string]string
}

func (h handler) WithTags(tags map[string]string) sdkclient.MetricsHandler {
	all := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		all[k] = v
	}
	for k, v := range tags {
		all[k] = v
	}
	return handler{m: h.m, scope: h.scope.Tagged(tags), tags: all}
}

func (h handler) Counter(name string) sdkclient.MetricsCounter {
	if name == DelegationsEnded && h.m != nil {
		return promCounter{h.m.ended.WithLabelValues(h.tags["status"], h.tags["category"])}
	}
	return h.scope.Counter(name)
}
func (h handler) Gauge(name string) sdkclient.MetricsGauge { return h.scope.Gauge(name) }
func (h handler) Timer(name string) sdkclient.MetricsTimer { return timer{h.scope.Timer(name)} }

type timer struct{ t tally.Timer }

func (t timer) Record(d time.Duration) { t.t.Record(d) }

type promCounter struct{ c prometheus.Counter }

func (c promCounter) Inc(n int64) { c.c.Add(float64(n)) }
