package trpcpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"trpc.group/trpc-go/trpc-a2a-go/auth"
	tlog "trpc.group/trpc-go/trpc-a2a-go/log"
	"trpc.group/trpc-go/trpc-a2a-go/protocol"
	"trpc.group/trpc-go/trpc-a2a-go/server"
	"trpc.group/trpc-go/trpc-a2a-go/taskmanager"
)

// Scenarios, chosen by the data part field "scenario" of the first message.
const (
	// ScenarioLostParcel (the default): WORKING, then after
	// Options.WorkDelay INPUT_REQUIRED with status message QuestionText; a
	// follow-up with the same taskId and contextId gives WORKING, then after
	// WorkDelay COMPLETED with the claim_opened artifact.
	ScenarioLostParcel = "lost-parcel"
	// ScenarioInstant: the task is COMPLETED with the claim_opened artifact
	// before message/send answers.
	ScenarioInstant = "instant"
	// ScenarioSlow: WORKING until canceled (tasks/cancel, which the
	// library's task manager answers with the task CANCELED and then
	// forgets the task).
	ScenarioSlow = "slow"
	// ScenarioFail: WORKING, then FAILED with FailText.
	ScenarioFail = "fail"
	// ScenarioQuestionOnResubscribe: WORKING until a tasks/resubscribe for
	// the task arrives; the agent then asks QuestionText (INPUT_REQUIRED)
	// just before the library registers the new subscriber, so the change
	// falls between the client's last read and its subscription. A2A 0.3
	// §7.9 leaves it to the server whether a resubscription replays what
	// came before it; this library sends only later events. A follow-up
	// then completes the task as in ScenarioLostParcel.
	ScenarioQuestionOnResubscribe = "question-on-resubscribe"
)

// Names and texts of the agent.
const (
	// AgentName is the card's name.
	AgentName = "trpc-claims-agent"
	// ClaimSkill is the card's one skill.
	ClaimSkill = "open-claim"
	// QuestionText is the status message of INPUT_REQUIRED.
	QuestionText = "Please send a photo of the box the parcel was shipped in."
	// FailText is the status message of ScenarioFail.
	FailText = "the order is unknown"
	// ArtifactName is the name of the one artifact of a completed claim.
	ArtifactName = "claim_opened"
	// DefaultOrderID is the order id when the first message gives none.
	DefaultOrderID = "A-1001"
	// APIKeyScheme is the card's securitySchemes entry with Options.APIKey.
	APIKeyScheme = "claims-api-key"
	// APIKeyHeader is the header the API key goes in (the library's default
	// for auth.NewAPIKeyAuthProvider).
	APIKeyHeader = "X-API-Key"
	// DefaultWorkDelay is Options.WorkDelay when zero.
	DefaultWorkDelay = 50 * time.Millisecond
)

// Options configure Start.
type Options struct {
	// Streaming is the card's capabilities.streaming (written true or
	// false).
	Streaming bool
	// APIKey, when set, is the one key the agent accepts in the header
	// APIKeyHeader on its JSON-RPC endpoint (the card stays public); the
	// card declares the apiKey scheme APIKeyScheme and requires it.
	APIKey string
	// InputModes are the card's defaultInputModes; empty means
	// "text/plain" and "application/json". (The library's README writes
	// protocol.KindText, "text", which is not a media type.)
	InputModes []string
	// WorkDelay is how long the agent works between WORKING and the next
	// state; zero means DefaultWorkDelay.
	WorkDelay time.Duration
	// Log, when set, receives every HTTP exchange (request and response,
	// bodies cut), one line each.
	Log func(line string)
}

// Counts are what the agent saw since Start or the last ResetCounts.
type Counts struct {
	// Tasks are the tasks the agent created (one per first message).
	Tasks int
	// Messages are message/send and message/stream requests that reached
	// the task manager (after the API key check).
	Messages int
	// Streams are the message/stream requests among Messages.
	Streams int
	// FollowUps are the messages among Messages that named a taskId.
	FollowUps int
	// Cancels are tasks/cancel requests; CanceledTasks the task ids they
	// named, in order.
	Cancels       int
	CanceledTasks []string
	// GetTasks are tasks/get requests; Resubscribes tasks/resubscribe
	// requests.
	GetTasks     int
	Resubscribes int
	// Unauthorized are JSON-RPC requests refused by the API key check
	// (HTTP 401); they count only here.
	Unauthorized int
	// TaskIDs are the ids of the tasks created, in order.
	TaskIDs []string
}

// Agent is a running trpc-a2a-go agent.
type Agent struct {
	// URL is the agent's base URL, "http://127.0.0.1:PORT"; the card's
	// url (its JSON-RPC endpoint) is URL + "/".
	URL string
	// CardURL is URL + "/.well-known/agent-card.json".
	CardURL string

	opts   Options
	http   *http.Server
	ln     net.Listener
	once   sync.Once
	stop   chan struct{}
	mu     sync.Mutex
	counts Counts
	claims int
	tasks  map[string]*taskInfo // by task id
	// handler is a TaskHandler of the task manager (the last one the
	// processor was given): CleanTask and UpdateTaskState act on the
	// manager, whichever message the handler came with.
	handler taskmanager.TaskHandler
}

// taskInfo is what the agent keeps of a task besides the library's record.
type taskInfo struct {
	scenario, orderID string
}

// Start starts the agent on 127.0.0.1 with a free port. It serves until
// Close.
func Start(o Options) (*Agent, error) {
	if o.WorkDelay <= 0 {
		o.WorkDelay = DefaultWorkDelay
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("trpcpeer: %w", err)
	}
	a := &Agent{URL: "http://" + ln.Addr().String(), opts: o, ln: ln, stop: make(chan struct{}), tasks: map[string]*taskInfo{}}
	a.CardURL = a.URL + protocol.AgentCardPath

	mem, err := taskmanager.NewMemoryTaskManager(&processor{a: a},
		// No cleanup goroutine: it never stops (a ticker per manager).
		func(mo *taskmanager.MemoryTaskManagerOptions) { mo.EnableCleanup = false })
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("trpcpeer: %w", err)
	}
	var opts []server.Option
	if o.APIKey != "" {
		opts = append(opts,
			server.WithMiddleWare(middleware(a.countRefusals)),
			server.WithAuthProvider(auth.NewAPIKeyAuthProvider(map[string]string{o.APIKey: "delegate"}, APIKeyHeader)))
	}
	srv, err := server.NewA2AServer(a.card(), &counting{MemoryTaskManager: mem, a: a}, opts...)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("trpcpeer: %w", err)
	}
	setQuiet.Do(func() { tlog.Default = quiet{} })
	h := srv.Handler()
	if o.Log != nil {
		h = a.wireLog(h)
	}
	a.http = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.http.Serve(ln) }()
	return a, nil
}

// Close stops the agent: open streams are closed.
func (a *Agent) Close() {
	a.once.Do(func() {
		close(a.stop)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if a.http.Shutdown(ctx) != nil {
			_ = a.http.Close()
		}
	})
}

// Forget makes the agent forget a task, as the library's
// TaskHandler.CleanTask does (and as a restart of its in-memory task
// manager would): later requests naming it get the library's TaskNotFound
// (JSON-RPC error -32001, which its server answers with HTTP 500).
func (a *Agent) Forget(taskID string) error {
	a.mu.Lock()
	h := a.handler
	a.mu.Unlock()
	if h == nil {
		return fmt.Errorf("trpcpeer: no task %s", taskID)
	}
	return h.CleanTask(&taskID)
}

// Counts returns what the agent saw.
func (a *Agent) Counts() Counts {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counts
	c.CanceledTasks = slices.Clone(c.CanceledTasks)
	c.TaskIDs = slices.Clone(c.TaskIDs)
	return c
}

// ResetCounts sets every count to zero.
func (a *Agent) ResetCounts() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts = Counts{}
}

func (a *Agent) count(f func(c *Counts)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.counts)
}

// card is the library's AgentCard with the library's protocol version.
func (a *Agent) card() server.AgentCard {
	version := server.ProtocolVersion
	desc := "Opens claims for lost parcels (trpc-a2a-go " + version + ")."
	skillDesc := "Open a claim for a lost or damaged parcel."
	c := server.AgentCard{
		Name:        AgentName,
		Description: desc,
		URL:         a.URL + "/",
		Version:     "1.0.0",
		Provider:    &server.AgentProvider{Organization: "delegate interop tests"},
		Capabilities: server.AgentCapabilities{
			Streaming:              ptr(a.opts.Streaming),
			PushNotifications:      ptr(false),
			StateTransitionHistory: ptr(false),
		},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"application/json"},
		Skills: []server.AgentSkill{{
			ID: ClaimSkill, Name: "Open claim", Description: &skillDesc, Tags: []string{"claims"},
			Examples: []string{"My parcel for order A-1001 never arrived."},
		}},
		ProtocolVersion: &version,
	}
	if len(a.opts.InputModes) > 0 {
		c.DefaultInputModes = slices.Clone(a.opts.InputModes)
	}
	if a.opts.APIKey != "" {
		in := server.SecuritySchemeInHeader
		c.SecuritySchemes = map[string]server.SecurityScheme{APIKeyScheme: {
			Type: server.SecuritySchemeTypeAPIKey, Name: ptr(APIKeyHeader), In: &in,
			Description: ptr("API key in the " + APIKeyHeader + " header"),
		}}
		c.Security = []map[string][]string{{APIKeyScheme: {}}}
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// --- the task manager, counted ---

// counting is the library's MemoryTaskManager, counting each call.
type counting struct {
	*taskmanager.MemoryTaskManager
	a *Agent
}

func (m *counting) OnSendMessage(ctx context.Context, req protocol.SendMessageParams) (*protocol.MessageResult, error) {
	m.a.count(func(c *Counts) {
		c.Messages++
		if req.Message.TaskID != nil && *req.Message.TaskID != "" {
			c.FollowUps++
		}
	})
	return m.MemoryTaskManager.OnSendMessage(ctx, req)
}

func (m *counting) OnSendMessageStream(ctx context.Context, req protocol.SendMessageParams) (<-chan protocol.StreamingMessageEvent, error) {
	m.a.count(func(c *Counts) {
		c.Messages++
		c.Streams++
		if req.Message.TaskID != nil && *req.Message.TaskID != "" {
			c.FollowUps++
		}
	})
	return m.MemoryTaskManager.OnSendMessageStream(ctx, req)
}

func (m *counting) OnGetTask(ctx context.Context, p protocol.TaskQueryParams) (*protocol.Task, error) {
	m.a.count(func(c *Counts) { c.GetTasks++ })
	return m.MemoryTaskManager.OnGetTask(ctx, p)
}

func (m *counting) OnCancelTask(ctx context.Context, p protocol.TaskIDParams) (*protocol.Task, error) {
	m.a.count(func(c *Counts) { c.Cancels++; c.CanceledTasks = append(c.CanceledTasks, p.ID) })
	return m.MemoryTaskManager.OnCancelTask(ctx, p)
}

func (m *counting) OnResubscribe(ctx context.Context, p protocol.TaskIDParams) (<-chan protocol.StreamingMessageEvent, error) {
	m.a.count(func(c *Counts) { c.Resubscribes++ })
	m.a.mu.Lock()
	ti, h := m.a.tasks[p.ID], m.a.handler
	m.a.mu.Unlock()
	if ti != nil && ti.scenario == ScenarioQuestionOnResubscribe && h != nil && stateOf(p.ID, h) == protocol.TaskStateWorking {
		if err := status(protocol.TaskStateInputRequired, QuestionText)(nil, p.ID, h); err != nil {
			return nil, err
		}
	}
	return m.MemoryTaskManager.OnResubscribe(ctx, p)
}

// --- the claims agent ---

// processor is the agent's taskmanager.MessageProcessor.
type processor struct{ a *Agent }

func (p *processor) ProcessMessage(ctx context.Context, msg protocol.Message, opts taskmanager.ProcessOptions, h taskmanager.TaskHandler) (*taskmanager.MessageProcessingResult, error) {
	if msg.TaskID != nil && *msg.TaskID != "" {
		return p.followUp(msg, opts, h)
	}
	scenario, orderID := scenarioOf(msg)
	taskID, err := h.BuildTask(nil, msg.ContextID)
	if err != nil {
		return nil, err
	}
	p.a.count(func(c *Counts) { c.Tasks++; c.TaskIDs = append(c.TaskIDs, taskID) })
	p.a.mu.Lock()
	p.a.tasks[taskID] = &taskInfo{scenario: scenario, orderID: orderID}
	p.a.handler = h
	p.a.mu.Unlock()
	var steps []step
	switch scenario {
	case ScenarioInstant:
		steps = []step{p.complete(orderID)}
	case ScenarioSlow, ScenarioQuestionOnResubscribe:
		steps = []step{working}
	case ScenarioFail:
		steps = []step{working, wait, status(protocol.TaskStateFailed, FailText)}
	default: // ScenarioLostParcel
		steps = []step{working, wait, status(protocol.TaskStateInputRequired, QuestionText)}
	}
	return p.run(taskID, steps, opts, h)
}

// followUp takes a message on an existing task: a task waiting in
// INPUT_REQUIRED works, then completes with the claim.
func (p *processor) followUp(msg protocol.Message, opts taskmanager.ProcessOptions, h taskmanager.TaskHandler) (*taskmanager.MessageProcessingResult, error) {
	ct, err := h.GetTask(msg.TaskID)
	if err != nil {
		return nil, err
	}
	t := ct.Task()
	if t.Status.State != protocol.TaskStateInputRequired {
		return nil, fmt.Errorf("task %s is %s: it takes no input", t.ID, t.Status.State)
	}
	p.a.mu.Lock()
	orderID := DefaultOrderID
	if ti := p.a.tasks[t.ID]; ti != nil {
		orderID = ti.orderID
	}
	p.a.handler = h
	p.a.mu.Unlock()
	return p.run(t.ID, []step{working, wait, p.complete(orderID)}, opts, h)
}

// A step moves the task on; wait is a pause of Options.WorkDelay.
type step func(p *processor, id string, h taskmanager.TaskHandler) error

var (
	working step = func(_ *processor, id string, h taskmanager.TaskHandler) error {
		return h.UpdateTaskState(&id, protocol.TaskStateWorking, nil)
	}
	wait step = func(p *processor, _ string, _ taskmanager.TaskHandler) error {
		t := time.NewTimer(p.a.opts.WorkDelay)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-p.a.stop:
			return errors.New("agent stopped")
		}
	}
)

func status(state protocol.TaskState, text string) step {
	return func(_ *processor, id string, h taskmanager.TaskHandler) error {
		ctxID := contextOf(id, h)
		m := protocol.NewMessageWithContext(protocol.MessageRoleAgent, []protocol.Part{protocol.NewTextPart(text)}, &id, &ctxID)
		return h.UpdateTaskState(&id, state, &m)
	}
}

func (p *processor) complete(orderID string) step {
	return func(p *processor, id string, h taskmanager.TaskHandler) error {
		p.a.mu.Lock()
		p.a.claims++
		claim := fmt.Sprintf("CLM-%06d", p.a.claims)
		p.a.mu.Unlock()
		art := protocol.NewArtifactWithID(ptr(ArtifactName), ptr("The claim opened for the order."),
			[]protocol.Part{protocol.NewDataPart(map[string]any{"claim_id": claim, "order_id": orderID})})
		if err := h.AddArtifact(&id, *art, true, false); err != nil {
			return err
		}
		return status(protocol.TaskStateCompleted, "Claim "+claim+" opened.")(p, id, h)
	}
}

// run takes the steps on the task. The reply to message/send is the task
// after the first step (the rest run on after it, unless the request is
// blocking: then after the last); message/stream gets the task, then every
// change, and the stream ends when the task is interrupted or terminal.
func (p *processor) run(id string, steps []step, opts taskmanager.ProcessOptions, h taskmanager.TaskHandler) (*taskmanager.MessageProcessingResult, error) {
	runRest := func(rest []step) {
		for _, s := range rest {
			if err := s(p, id, h); err != nil {
				return // the task was canceled (forgotten) or the agent stopped
			}
		}
	}
	if opts.Streaming {
		sub, err := h.SubscribeTask(&id)
		if err != nil {
			return nil, err
		}
		ct, err := h.GetTask(&id)
		if err != nil {
			return nil, err
		}
		if err := sub.Send(protocol.StreamingMessageEvent{Result: ct.Task()}); err != nil {
			return nil, err
		}
		go func() {
			runRest(steps)
			if st := stateOf(id, h); st != protocol.TaskStateWorking && st != protocol.TaskStateSubmitted {
				sub.Close()
			}
		}()
		return &taskmanager.MessageProcessingResult{StreamingEvents: sub}, nil
	}
	if err := steps[0](p, id, h); err != nil {
		return nil, err
	}
	// ScenarioInstant's one step completes the task before the reply.
	if opts.Blocking && len(steps) > 1 {
		// A blocking request waits for the rest; one on a task that only
		// works (ScenarioSlow) gets the task as it is.
		runRest(steps[1:])
	} else {
		go runRest(steps[1:])
	}
	ct, err := h.GetTask(&id)
	if err != nil {
		return nil, err
	}
	return &taskmanager.MessageProcessingResult{Result: ct.Task()}, nil
}

func stateOf(id string, h taskmanager.TaskHandler) protocol.TaskState {
	ct, err := h.GetTask(&id)
	if err != nil {
		return protocol.TaskStateCanceled
	}
	return ct.Task().Status.State
}

func contextOf(id string, h taskmanager.TaskHandler) string {
	ct, err := h.GetTask(&id)
	if err != nil {
		return ""
	}
	return ct.Task().ContextID
}

// scenarioOf reads "scenario" and "order_id" of the message's data part.
func scenarioOf(m protocol.Message) (scenario, orderID string) {
	scenario, orderID = ScenarioLostParcel, DefaultOrderID
	for _, part := range m.Parts {
		var data any
		switch d := part.(type) {
		case *protocol.DataPart:
			data = d.Data
		case protocol.DataPart:
			data = d.Data
		default:
			continue
		}
		obj, _ := data.(map[string]any)
		if s, ok := obj["scenario"].(string); ok && s != "" {
			scenario = s
		}
		if s, ok := obj["order_id"].(string); ok && s != "" {
			orderID = s
		}
	}
	return scenario, orderID
}

// --- HTTP: refusals and the wire log ---

// middleware is a server.Middleware of a function.
type middleware func(http.Handler) http.Handler

func (m middleware) Wrap(next http.Handler) http.Handler { return m(next) }

// countRefusals counts the requests the API key check (the next
// middleware) refuses.
func (a *Agent) countRefusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized {
			a.count(func(c *Counts) { c.Unauthorized++ })
		}
	})
}

// wireCut bounds each body in the wire log.
const wireCut = 2048

// wireLog logs each request (method, path, the API key header present or
// not, body) and its response (status, content type, body).
func (a *Agent) wireLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		key := "no " + APIKeyHeader
		if r.Header.Get(APIKeyHeader) != "" {
			key = APIKeyHeader + " present"
		}
		a.opts.Log(fmt.Sprintf("%s trpc <- %s %s (%s, A2A-Version %q) %s", time.Now().Format("15:04:05.000"), r.Method, r.URL.Path, key, r.Header.Get("A2A-Version"), cut(body)))
		rec := &recorder{ResponseWriter: w, keep: true}
		next.ServeHTTP(rec, r)
		a.opts.Log(fmt.Sprintf("%s trpc -> %d %s %s", time.Now().Format("15:04:05.000"), rec.code(), rec.Header().Get("Content-Type"), cut(rec.body.Bytes())))
	})
}

func cut(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > wireCut {
		return s[:wireCut] + fmt.Sprintf("…(%d bytes)", len(b))
	}
	return s
}

// recorder keeps a response's status (and, with keep, the first wireCut
// bytes of its body); it flushes, for the library's SSE streams.
type recorder struct {
	http.ResponseWriter
	status int
	keep   bool
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.keep && r.body.Len() < wireCut {
		r.body.Write(b[:min(len(b), wireCut-r.body.Len()+1)])
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// --- the library's logger ---

// quiet is the library's logger (tlog.Default, a global) while an agent
// runs: the library's default writes INFO to stdout, and what it logs at
// WARN and ERROR (a JSON-RPC error it answered) is in the wire log.
type quiet struct{}

var setQuiet sync.Once

func (quiet) Debug(...any)          {}
func (quiet) Debugf(string, ...any) {}
func (quiet) Info(...any)           {}
func (quiet) Infof(string, ...any)  {}
func (quiet) Warn(...any)           {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Error(...any)          {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatal(...any)          {}
func (quiet) Fatalf(string, ...any) {}
