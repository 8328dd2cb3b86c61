package claimsagent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	a2apush "github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/a2adelegate/delegate/cards"
)

// Paths of the two interfaces, below the agent's base URL.
const (
	JSONRPCPath = "/a2a/jsonrpc"
	RESTPath    = "/a2a/rest"
	// LegacyJSONRPCPath serves A2A 0.3 JSON-RPC (a2a-go/v2 a2acompat/a2av0),
	// for clients and tests of the 0.3 path; listed in the card with
	// protocolVersion "0.3".
	LegacyJSONRPCPath = "/a2a/v0.3/jsonrpc"
	// LegacyRESTPath serves A2A 0.3 HTTP+JSON (a2a-go/v2 a2acompat/a2av0,
	// the 0.3 §3.2.3 paths under /v1 and proto JSON bodies); listed in
	// the card with protocolVersion "0.3".
	LegacyRESTPath = "/a2a/v0.3/rest"
)

// SkillID is the id of the agent's only skill.
const SkillID = "open-claim"

// PublicSkillID is the only skill of the public card of an agent with
// Config.ExtendedCard.
const PublicSkillID = "claim-status"

// Config configures the agent.
type Config struct {
	// BaseURL is the URL the agent is reached at, as written in its card,
	// e.g. "http://127.0.0.1:9999".
	BaseURL string
	// WorkDelay is how long the agent "works" between states (default 0).
	WorkDelay time.Duration
	// Logger receives request logs (ids and categories only); nil: discard.
	Logger *slog.Logger
	// SignKey, when set, signs the served card (A2A 1.0 §8.4.2) with
	// KeyID and, optionally, a jku header JKU; the public key is served as
	// a JWK Set at /.well-known/jwks.json.
	SignKey jwk.Key
	KeyID   string
	JKU     string
	// OnCommit, when set, is called after a first message created or
	// continued a task and before the answer is written (for tests that
	// kill the client at that moment).
	OnCommit func(taskID string)
	// AuthToken is the bearer token the follow-up of an "auth" task must
	// carry.
	AuthToken string
	// RequireBearer, when set, makes the interfaces answer 401 to a call
	// without "Authorization: Bearer <RequireBearer>"; the card then
	// declares an HTTP bearer security scheme (A2A 1.0 §4.5.3).
	RequireBearer string
	// ExtendedCard, when set, makes the public card declare an
	// authenticated extended card (capabilities.extendedAgentCard, A2A 1.0
	// §3.1.11) and list only the skill PublicSkillID; the extended card,
	// served by a2asrv's GetExtendedAgentCard on every interface, lists
	// SkillID too. With RequireBearer, only a caller with the token gets
	// it.
	ExtendedCard bool
	// HangDelay is how long scenario "hang" holds the answer to the first
	// delivery of a message (0: DefaultHangDelay).
	HangDelay time.Duration
	// ThinkDelay is how long a "think" task works, inside the send, before
	// it completes (0: DefaultThinkDelay).
	ThinkDelay time.Duration
	// StubbornDelay is how long a "stubborn" task works before it
	// completes (0: DefaultStubbornDelay).
	StubbornDelay time.Duration
	// GRPCURL, when set, is the url of the agent's gRPC interface (A2A
	// 1.0 §10 and A2A 0.3, both served by ServeGRPC), listed in its card
	// with protocolBinding "GRPC" for each version, e.g. "127.0.0.1:9998".
	GRPCURL string
	// GRPCOnly, with GRPCURL, makes the card list only the gRPC
	// interfaces (the HTTP ones still serve): a client must use gRPC.
	GRPCOnly bool
	// StateDir, when set, keeps the agent's tasks and its message-id
	// table in files under this directory (created when missing), so that
	// an agent restarted on it carries on with the tasks it created; empty:
	// in memory, lost at exit. See Open.
	StateDir string
}

// JWKSPath is where the agent serves the public JWK Set of its signing key.
const JWKSPath = "/.well-known/jwks.json"

// Agent is the claims agent: an http.Handler serving the card and its
// interfaces.
type Agent struct {
	cfg     Config
	mu      sync.Mutex
	card    *a2a.AgentCard
	handler *dedupHandler
	mux     *http.ServeMux
	// CardRequests counts requests for the card.
	CardRequests atomic.Int64
	// Unauthorized counts calls refused for a missing or wrong token.
	Unauthorized atomic.Int64

	tpMu         sync.Mutex
	traceParents []string
}

// TraceParents returns the W3C traceparent headers the agent's interfaces
// received, oldest first (the last 1000).
func (a *Agent) TraceParents() []string {
	a.tpMu.Lock()
	defer a.tpMu.Unlock()
	return append([]string(nil), a.traceParents...)
}

// recordTrace notes the traceparent of a call to an interface.
func (a *Agent) recordTrace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("traceparent"); tp != "" && len(tp) <= 256 {
			a.tpMu.Lock()
			a.traceParents = append(a.traceParents, tp)
			if len(a.traceParents) > 1000 {
				a.traceParents = a.traceParents[len(a.traceParents)-1000:]
			}
			a.tpMu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// SetInputModes changes the inputModes of the skill in the served card
// (for tests of the client's input-mode check).
func (a *Agent) SetInputModes(modes []string) {
	a.Update(func(c *a2a.AgentCard) { c.Skills[0].InputModes = modes })
}

// Update changes the served card (for tests of change detection).
func (a *Agent) Update(change func(*a2a.AgentCard)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := *a.card
	c.Skills = append([]a2a.AgentSkill(nil), a.card.Skills...)
	c.SupportedInterfaces = append([]*a2a.AgentInterface(nil), a.card.SupportedInterfaces...)
	change(&c)
	a.card = &c
}

// CardJSON returns the served card body: the card as JSON, signed when
// the agent has a signing key.
func (a *Agent) CardJSON() ([]byte, error) {
	a.mu.Lock()
	card := a.card
	a.mu.Unlock()
	body, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	if a.cfg.SignKey == nil {
		return body, nil
	}
	return cards.Sign(body, a.cfg.SignKey, a.cfg.KeyID, a.cfg.JKU)
}

// auth checks the bearer token when one is required.
func (a *Agent) auth(next http.Handler) http.Handler {
	if a.cfg.RequireBearer == "" {
		return next
	}
	want := "Bearer " + a.cfg.RequireBearer
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			a.Unauthorized.Add(1)
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveCard serves the card with an ETag and "Cache-Control: no-cache", so
// that clients revalidate every use and get 304 while it is unchanged
// (A2A 1.0 §8.6.1).
func (a *Agent) serveCard(w http.ResponseWriter, r *http.Request) {
	a.CardRequests.Add(1)
	body, err := a.CardJSON()
	if err != nil {
		http.Error(w, "card unavailable", http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (a *Agent) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	if a.cfg.SignKey == nil {
		http.NotFound(w, nil)
		return
	}
	pub, err := jwk.PublicKeyOf(a.cfg.SignKey)
	if err == nil {
		err = pub.Set(jwk.KeyIDKey, a.cfg.KeyID)
	}
	if err != nil {
		http.Error(w, "jwks unavailable", http.StatusInternalServerError)
		return
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

// New builds the agent with its tasks in memory; it panics when
// cfg.StateDir is set and cannot be opened (use Open for an error).
func New(cfg Config) *Agent {
	a, err := Open(cfg)
	if err != nil {
		panic(err)
	}
	return a
}

// Open builds the agent; with cfg.StateDir it loads the tasks stored there
// and writes every change through. Errors: the state directory cannot be
// created or read, or holds a file that is not a task.
func Open(cfg Config) (*Agent, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	card := Card(base)
	ex := newExecutor(cfg)
	ex.authToken = cfg.AuthToken
	// Push notifications (A2A 1.0 §4.3): a client that registers a config
	// for a task gets every later event of it POSTed there (a2a-go's
	// sender, with the config's token in A2A-Notification-Token).
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithLogger(logger),
		a2asrv.WithPushNotifications(a2apush.NewInMemoryStore(), a2apush.NewHTTPPushSender(&a2apush.HTTPSenderConfig{Timeout: 10 * time.Second,
			// The example agent pushes to the worker's webhook on this
			// machine (make run, the tests): a2a-go v2.4.0 refuses loopback
			// and private webhook addresses unless told (its SSRF guard,
			// A2A 1.0 §13.2, a2a-go#373).
			AllowPrivateNetworks: true}))}
	if cfg.GRPCURL != "" {
		grpcIfaces := []*a2a.AgentInterface{a2a.NewAgentInterface(cfg.GRPCURL, a2a.TransportProtocolGRPC),
			{URL: cfg.GRPCURL, ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2av0.Version}}
		if cfg.GRPCOnly {
			card.SupportedInterfaces = grpcIfaces
		} else {
			card.SupportedInterfaces = append(card.SupportedInterfaces, grpcIfaces...)
		}
	}
	if cfg.RequireBearer != "" {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{"bearer": {}}}
	}
	if cfg.ExtendedCard {
		card.Capabilities.ExtendedAgentCard = true
		ext := *card
		ext.Skills = append([]a2a.AgentSkill{publicSkill()}, card.Skills...)
		card.Skills = []a2a.AgentSkill{publicSkill()}
		opts = append(opts, a2asrv.WithExtendedAgentCard(&ext))
	}
	h := &dedupHandler{seen: map[string]*sendEntry{}, onCommit: cfg.OnCommit, exec: ex}
	if cfg.StateDir == "" {
		opts = append(opts, a2asrv.WithTaskStore(taskstore.NewInMemory(storeConfig())))
	}
	if cfg.StateDir != "" {
		store, seen, err := openFileStore(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		opts = append(opts, a2asrv.WithTaskStore(store))
		h.store, h.tasks = store, map[a2a.TaskID]bool{}
		for msg, tid := range seen {
			done := make(chan struct{})
			close(done)
			h.seen[msg] = &sendEntry{done: done, taskID: tid}
			h.tasks[tid] = true
		}
	}
	h.RequestHandler = a2asrv.NewHandler(ex, opts...)
	mux := http.NewServeMux()
	a := &Agent{cfg: cfg, card: card, handler: h, mux: mux}
	mux.HandleFunc("GET "+a2asrv.WellKnownAgentCardPath, a.serveCard)
	mux.HandleFunc("GET "+JWKSPath, a.serveJWKS)
	mux.Handle(JSONRPCPath, a.recordTrace(a.auth(a2asrv.NewJSONRPCHandler(h))))
	mux.Handle(RESTPath+"/", a.recordTrace(a.auth(http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(h)))))
	mux.Handle(LegacyJSONRPCPath, a.recordTrace(a.auth(a2av0.NewJSONRPCHandler(h))))
	mux.Handle(LegacyRESTPath+"/", a.recordTrace(a.auth(http.StripPrefix(LegacyRESTPath, a2av0.NewRESTHandler(h)))))
	return a, nil
}

// Card returns the Agent Card of an agent reached at base.
func Card(base string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:        "Claims Agent",
		Description: "Opens claims for lost or damaged parcels. Asks for evidence when it needs it.",
		Version:     "1.0.0",
		Provider:    &a2a.AgentProvider{Org: "delegate example", URL: base},
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
			{URL: base + LegacyJSONRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
			{URL: base + LegacyRESTPath, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"application/json"},
		Skills: []a2a.AgentSkill{{
			ID:          SkillID,
			Name:        "Open a claim",
			Description: "Opens a claim for a lost parcel given an order id; may ask for a photo of the box.",
			Tags:        []string{"claims", "parcels"},
			Examples:    []string{"My parcel for order A-1001 was lost."},
			InputModes:  []string{"text/plain", "application/json"},
			OutputModes: []string{"application/json"},
		}},
	}
}

// publicSkill is the skill of the public card of an agent with an
// extended card.
func publicSkill() a2a.AgentSkill {
	return a2a.AgentSkill{ID: PublicSkillID, Name: "Claim status", Description: "Says whether a claim is open.",
		Tags: []string{"claims"}, InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"}}
}

// ServeHTTP implements http.Handler.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// TaskCount returns how many distinct tasks the agent created.
func (a *Agent) TaskCount() int { return a.handler.taskCount() }

// TasksOf counts the tasks whose execution started with scenario (every
// task the agent made, deduplicated or not).
func (a *Agent) TasksOf(scenario string) int {
	e := a.handler.exec
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range e.scenarios {
		if s == scenario {
			n++
		}
	}
	return n
}

// MessageCount returns how many distinct messages (by messageId) the agent
// accepted.
func (a *Agent) MessageCount() int { return a.handler.messageCount() }

// Serve serves the agent on ln until ctx is done, then shuts down: calls
// in flight get up to 5 s to finish before Serve returns.
func (a *Agent) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-shut // Serve returns at once; Shutdown waits for the calls in flight
	}
	if a.handler.store != nil {
		_ = a.handler.store.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// dedupHandler makes SendMessage idempotent on messageId (A2A 1.0 §3.3.1):
// a message id seen before gets the task its first delivery created or
// continued, without executing again.
type dedupHandler struct {
	a2asrv.RequestHandler

	mu       sync.Mutex
	seen     map[string]*sendEntry
	tasks    map[a2a.TaskID]bool
	onCommit func(string)
	exec     *executor
	store    *fileStore // nil: the table is kept in memory only
	// thinkSends counts the deliveries of "think" first messages.
	thinkSends int
}

type sendEntry struct {
	done   chan struct{}
	taskID a2a.TaskID
}

func (h *dedupHandler) messageCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func (h *dedupHandler) taskCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.tasks)
}

// claim returns the entry for id and whether this caller is its first.
func (h *dedupHandler) claim(id string) (*sendEntry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.seen[id]; ok {
		return e, false
	}
	e := &sendEntry{done: make(chan struct{})}
	h.seen[id] = e
	return e, true
}

func (h *dedupHandler) settle(id string, e *sendEntry, taskID a2a.TaskID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if taskID == "" {
		delete(h.seen, id) // nothing was created: a retry may execute
	} else {
		e.taskID = taskID
		if h.tasks == nil {
			h.tasks = map[a2a.TaskID]bool{}
		}
		h.tasks[taskID] = true
	}
	close(e.done)
}

func (h *dedupHandler) replay(ctx context.Context, e *sendEntry) (*a2a.Task, bool, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
	if e.taskID == "" {
		return nil, false, nil
	}
	t, err := h.RequestHandler.GetTask(ctx, &a2a.GetTaskRequest{ID: e.taskID})
	return t, true, err
}

func (h *dedupHandler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	if req == nil || req.Message == nil || req.Message.ID == "" {
		return h.RequestHandler.SendMessage(ctx, req)
	}
	id := req.Message.ID
	if tid := req.Message.TaskID; tid != "" && h.exec != nil {
		// A message to a task waiting in AUTH_REQUIRED is taken by that
		// task's execution (A2A 1.0 §7.6.1), not run as a new one.
		if waiting, accepted := h.exec.deliverAuth(ctx, tid); waiting {
			if !accepted {
				return nil, a2a.ErrUnauthenticated
			}
			return h.RequestHandler.GetTask(ctx, &a2a.GetTaskRequest{ID: tid})
		}
	}
	if scenario, _ := readRequest(req.Message); scenario == ScenarioThink && req.Message.TaskID == "" {
		return h.think(ctx, req)
	}
	e, first := h.claim(id)
	if !first {
		if t, ok, err := h.replay(ctx, e); ok {
			return t, err
		}
		return h.SendMessage(ctx, req)
	}
	execCtx := ctx
	if scenario, _ := readRequest(req.Message); scenario == ScenarioHang {
		execCtx = context.WithoutCancel(ctx) // the task is made even when the caller gives up
	}
	res, err := h.RequestHandler.SendMessage(execCtx, req)
	var tid a2a.TaskID
	if t, ok := res.(*a2a.Task); ok && err == nil {
		tid = t.ID
	}
	h.settle(id, e, tid)
	if tid != "" && h.onCommit != nil {
		h.onCommit(string(tid))
	}
	if scenario, _ := readRequest(req.Message); scenario == ScenarioHang && req.Message.TaskID == "" {
		// The task exists and is done; only the answer is late, so the
		// caller cannot know whether its message arrived.
		t := time.NewTimer(h.exec.hangDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return res, err
}

// think is scenario "think"'s send: every delivery is a new task (no
// deduplication), and the send is answered only when the task is done,
// whatever returnImmediately says; the work goes on when the caller gives
// up.
func (h *dedupHandler) think(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	blocking := *req
	cfg := a2a.SendMessageConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	cfg.ReturnImmediately = false
	blocking.Config = &cfg
	h.mu.Lock()
	h.thinkSends++
	h.mu.Unlock()
	res, err := h.RequestHandler.SendMessage(context.WithoutCancel(ctx), &blocking)
	if t, ok := res.(*a2a.Task); ok && err == nil {
		h.mu.Lock()
		if h.tasks == nil {
			h.tasks = map[a2a.TaskID]bool{}
		}
		h.tasks[t.ID] = true
		h.mu.Unlock()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

func (h *dedupHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	if req == nil || req.Message == nil || req.Message.ID == "" {
		return h.RequestHandler.SendStreamingMessage(ctx, req)
	}
	if scenario, _ := readRequest(req.Message); scenario == ScenarioHang && req.Message.TaskID == "" {
		// Scenario "hang" holds the answer to a streaming send too: the
		// stream's first event comes as late as SendMessage's reply.
		return func(yield func(a2a.Event, error) bool) {
			res, err := h.SendMessage(ctx, req)
			if err != nil {
				yield(nil, err)
				return
			}
			if ev, ok := res.(a2a.Event); ok {
				yield(ev, nil)
			}
		}
	}
	return func(yield func(a2a.Event, error) bool) {
		id := req.Message.ID
		e, first := h.claim(id)
		if !first {
			if t, ok, err := h.replay(ctx, e); ok {
				yield(t, err)
				return
			}
			e, _ = h.claim(id)
		}
		var tid a2a.TaskID
		defer func() { h.settle(id, e, tid) }()
		for ev, err := range h.RequestHandler.SendStreamingMessage(ctx, req) {
			if ev != nil && tid == "" {
				if info := ev.TaskInfo(); info.TaskID != "" {
					tid = info.TaskID
					if h.onCommit != nil {
						h.onCommit(string(tid))
					}
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}
