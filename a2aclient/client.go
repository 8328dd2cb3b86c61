package a2aclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Client talks to one remote agent over one selected interface.
type Client struct {
	iface       contracts.Interface
	sdk         *sdk.Client
	callTimeout time.Duration
	red         *redactor
	noCred      string
	obs         Observer
}

// finish redacts an error of a call and adds the client's hint to an
// authorization error.
func (c *Client) finish(err error) error {
	err = c.red.err(err)
	if ce, ok := err.(*CallError); ok && c.noCred != "" && ce.Category == contracts.CategoryAuthorization {
		h := *ce
		h.Hint = c.noCred
		return &h
	}
	return err
}

// Options configure Dial.
type Options struct {
	// HTTPClient carries the calls; nil means a client with connect timeout
	// 5 s and no overall timeout (calls are bounded by their context).
	HTTPClient *http.Client
	// Interceptors are a2a-go call interceptors (auth, logging).
	Interceptors []sdk.CallInterceptor
	// MaxResponseBytes bounds every response body read from the agent
	// before it is decoded (0: DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// CallTimeout bounds each whole GetTask, CancelTask and
	// CreatePushConfig call, the body included (0: DefaultCallTimeout), so
	// that an agent trickling its reply cannot hold a read, its connection
	// and its goroutine past the heartbeat that should have ended it.
	// SendMessage is bounded by its caller's context; streams by theirs.
	CallTimeout time.Duration
	// TLSConfig is the client TLS for transports that dial themselves
	// (gRPC); HTTP uses HTTPClient (whose transport carries it).
	TLSConfig *tls.Config
	// GRPCDialer makes the connections of a gRPC interface (A2A 1.0 §10);
	// addr is host:port. nil: a plain dialer, 5 s connect timeout. The
	// activities set the HTTP guard's (cards.Guard.Dialer), as they set
	// HTTPClient.
	GRPCDialer func(ctx context.Context, addr string) (net.Conn, error)
	// NoCredential, when set, says why no credential goes with the calls
	// although the card asks for one (e.g. "the worker's credential store
	// has no entry for origin X"); an authorization error carries it
	// (CallError.Hint), so that a 401 says what to fix.
	NoCredential string
	// Observer, when set, is told of every SendMessage, SendStreaming,
	// GetTask, CancelTask and GetExtendedAgentCard call: the interface's
	// URL (as origin), binding, method, result and duration.
	Observer Observer
	// secrets are what WithCredential adds, redacted from what comes back.
	secrets []string
	// auth is the credential WithCredential leaves to the HTTP level (nil:
	// none).
	auth *authSpec
}

// DefaultCallTimeout is Options.CallTimeout when unset.
const DefaultCallTimeout = 30 * time.Second

// Dial makes a client for the selected interface. It does no I/O.
func Dial(ctx context.Context, iface contracts.Interface, opts Options) (*Client, error) {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}}
	}
	maxBytes := opts.MaxResponseBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResponseBytes
	}
	rec := *hc
	base, red := opts.authTransport(transportOf(hc), newRedactor(opts.secrets))
	rec.Transport = &wireTransport{base: base, version: iface.Version, binding: iface.Binding, maxBytes: maxBytes, red: red}
	if len(otel.GetTextMapPropagator().Fields()) > 0 {
		// Tracing is on (internal/tracing installed a propagator): otelhttp
		// injects the caller's trace context (W3C traceparent). Off, the
		// calls carry no wrapper at all.
		rec.Transport = otelhttp.NewTransport(rec.Transport)
	}
	fopts := []sdk.FactoryOption{
		sdk.WithDefaultsDisabled(),
		sdk.WithJSONRPCTransport(&rec),
		sdk.WithRESTTransport(&rec),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: &rec}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: &rec}),
		sdk.WithConfig(sdk.Config{DisableTenantPropagation: true}),
	}
	if len(opts.Interceptors) > 0 {
		fopts = append(fopts, sdk.WithCallInterceptors(opts.Interceptors...))
	}
	var conn *grpc.ClientConn
	if iface.Binding == string(a2a.TransportProtocolGRPC) {
		opt, cc, err := grpcTransport(iface, opts, maxBytes, red)
		if err != nil {
			return nil, &CallError{Category: contracts.CategoryProtocol, Op: "dial", Err: err}
		}
		fopts, conn = append(fopts, opt), cc
	}
	ver := a2a.ProtocolVersion(iface.Version)
	c, err := sdk.NewFactory(fopts...).CreateFromEndpoints(ctx, []*a2a.AgentInterface{{
		URL: iface.URL, ProtocolBinding: a2a.TransportProtocol(iface.Binding), ProtocolVersion: ver, Tenant: iface.Tenant,
	}})
	if err != nil {
		if conn != nil {
			_ = conn.Close()
		}
		return nil, &CallError{Category: contracts.CategoryProtocol, Op: "dial", Err: err}
	}
	ct := opts.CallTimeout
	if ct <= 0 {
		ct = DefaultCallTimeout
	}
	return &Client{iface: iface, sdk: c, callTimeout: ct, red: red, noCred: opts.NoCredential, obs: opts.Observer}, nil
}

func transportOf(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}

// Interface returns the interface the client talks to.
func (c *Client) Interface() contracts.Interface { return c.iface }

// Close releases the transport.
func (c *Client) Close() error { return c.sdk.Destroy() }

// messageOf is the A2A Message of msg: its text part and its data part,
// whose numbers keep their text (outboundData). Errors: a *CallError of
// category invalid_input (data that is not JSON, or a number gRPC cannot
// carry).
func (c *Client) messageOf(msg contracts.OutboundMessage) (*a2a.Message, error) {
	parts := a2a.ContentParts{}
	if msg.Text != "" {
		parts = append(parts, a2a.NewTextPart(msg.Text))
	}
	if d := bytes.TrimSpace(msg.Data); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		v, err := outboundData(d, c.iface.Binding == string(a2a.TransportProtocolGRPC))
		if err != nil {
			return nil, &CallError{Category: contracts.CategoryInvalidInput, Op: "SendMessage", Err: err}
		}
		parts = append(parts, a2a.NewDataPart(v))
	}
	return &a2a.Message{ID: msg.MessageID, Role: a2a.MessageRoleUser, TaskID: a2a.TaskID(msg.TaskID), ContextID: msg.ContextID, Parts: parts}, nil
}

// sendMessage is SendMessage before the redaction.
func (c *Client) sendMessage(ctx context.Context, msg contracts.OutboundMessage) (contracts.TaskSnapshot, error) {
	m, err := c.messageOf(msg)
	if err != nil {
		return contracts.TaskSnapshot{}, err
	}
	ctx, rec := withRecord(ctx)
	// returnImmediately (A2A 1.0 §3.2.2): the send is a short call; the
	// task is then followed by GetTask or a stream, never by a long blocking
	// send whose outcome a timeout would make unknown.
	// historyLength 0 (A2A 1.0 §3.2.4): the reply's task without its
	// history, which this client never reads.
	req := &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true, HistoryLength: noHistory()}}
	res, err := c.sdk.SendMessage(ctx, req)
	if err != nil {
		return contracts.TaskSnapshot{}, classify("SendMessage", err, rec)
	}
	switch r := res.(type) {
	case *a2a.Task:
		if err := checkIDs("SendMessage", msg.TaskID, msg.ContextID, string(r.ID), r.ContextID, true); err != nil {
			return contracts.TaskSnapshot{}, err
		}
		return snapshotOf(r, rec.exact, c.iface.Version), nil
	case *a2a.Message:
		if err := checkIDs("SendMessage", msg.TaskID, msg.ContextID, string(r.TaskID), r.ContextID, false); err != nil {
			return contracts.TaskSnapshot{}, err
		}
		return contracts.TaskSnapshot{ContextID: r.ContextID, TaskID: string(r.TaskID), State: contracts.TaskStateMessage, Reply: partsText(r.Parts)}, nil
	default:
		return contracts.TaskSnapshot{}, &CallError{Category: contracts.CategoryProtocol, Op: "SendMessage", Err: fmt.Errorf("unexpected result %T", res)}
	}
}

// ReadAttempts is how many times GetTask reads a task whose 2xx reply it
// could not read before it returns the protocol error: a reply cut or
// garbled once in transit reads whole the next time, and a finished task
// must not be given up on one bad read.
const ReadAttempts = 3

// sendStreaming is SendStreaming before the redaction: with a watch
// window, after the first event it goes on reading the stream (watchStream)
// and returns the last state the stream reported after it ("" for none).
//
// firstAt, when not nil, receives when the first event came (the send's
// own duration; the watch is not part of it).
func (c *Client) sendStreaming(ctx context.Context, msg contracts.OutboundMessage, watch time.Duration, firstAt *time.Time) (contracts.TaskSnapshot, contracts.TaskState, error) {
	m, err := c.messageOf(msg)
	if err != nil {
		return contracts.TaskSnapshot{}, "", err
	}
	sctx, closeStream := context.WithCancel(ctx)
	defer closeStream()
	sctx, rec := withRecord(sctx)
	rec.stream = true
	req := &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{HistoryLength: noHistory()}}
	next, stop := iter.Pull2(c.sdk.SendStreamingMessage(sctx, req))
	defer stop()
	for {
		ev, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			// Classified as a send: written and no event is an unknown
			// outcome; named as the method it was.
			ce := classify("SendMessage", err, rec).(*CallError)
			ce.Op = "SendStreamingMessage"
			return contracts.TaskSnapshot{}, "", ce
		}
		var snap contracts.TaskSnapshot
		switch e := ev.(type) {
		case *a2a.Task:
			snap = snapshotOf(e, rec.exact, c.iface.Version)
		case *a2a.Message:
			if err := checkIDs("SendMessage", msg.TaskID, msg.ContextID, string(e.TaskID), e.ContextID, false); err != nil {
				return contracts.TaskSnapshot{}, "", err
			}
			return contracts.TaskSnapshot{ContextID: e.ContextID, TaskID: string(e.TaskID), State: contracts.TaskStateMessage, Reply: partsText(e.Parts)}, "", nil
		case *a2a.TaskStatusUpdateEvent:
			snap = snapshotOf(&a2a.Task{ID: e.TaskID, ContextID: e.ContextID, Status: e.Status}, rec.exact, c.iface.Version)
		case *a2a.TaskArtifactUpdateEvent:
			// The task exists; its state is read after (settle, WatchTask).
			snap = contracts.TaskSnapshot{TaskID: string(e.TaskID), ContextID: e.ContextID, State: contracts.TaskStateWorking}
		default:
			continue
		}
		if err := checkIDs("SendMessage", msg.TaskID, msg.ContextID, snap.TaskID, snap.ContextID, true); err != nil {
			return contracts.TaskSnapshot{}, "", err
		}
		// The first event names the task: the send is done (A2A 1.0
		// §3.1.2: a task lifecycle stream begins with the Task). The
		// stream is closed, at once or after the watch window; the task
		// is followed by GetTask or its own subscription.
		if firstAt != nil {
			*firstAt = time.Now()
		}
		if watch <= 0 || snap.State.Terminal() || snap.State.Interrupted() || snap.State == contracts.TaskStateMessage {
			return snap, "", nil
		}
		return snap, watchStream(next, closeStream, snap, watch), nil
	}
	// The stream ended with no event: the agent took the request and said
	// nothing of what it made of it.
	rec.mu.Lock()
	written, status := rec.written || rec.status != 0, rec.status
	rec.mu.Unlock()
	if written {
		return contracts.TaskSnapshot{}, "", &CallError{Category: contracts.CategoryUnknownOutcome, Op: "SendStreamingMessage", Written: true, Status: status,
			Err: errors.New("the stream ended before its first event")}
	}
	return contracts.TaskSnapshot{}, "", &CallError{Category: contracts.CategoryTransient, Op: "SendStreamingMessage", Err: errors.New("the stream ended before anything was sent")}
}

// watchStream reads the stream after its first event for at most window,
// until a status update of first's task reports a terminal or interrupted
// state (A2A 1.0 §4.1.3), and returns the last state a status update of
// that task reported ("" for none). The stream's events are not a task
// (an artifact may come in chunks, A2A 1.0 §4.2.2): what the task holds is
// read by GetTask, once the stream says there is something to read, instead
// of at guessed times. An error or the stream's end stops the watch; the
// send has succeeded either way.
func watchStream(next func() (a2a.Event, error, bool), closeStream context.CancelFunc, first contracts.TaskSnapshot, window time.Duration) contracts.TaskState {
	t := time.AfterFunc(window, closeStream)
	defer t.Stop()
	var last contracts.TaskState
	for {
		ev, err, ok := next()
		if !ok || err != nil {
			return last
		}
		e, isStatus := ev.(*a2a.TaskStatusUpdateEvent)
		if !isStatus || string(e.TaskID) != first.TaskID {
			continue
		}
		last = ShortState(e.Status.State)
		if last.Terminal() || last.Interrupted() {
			return last
		}
	}
}

// getTask is GetTask before the redaction: an unreadable reply is read
// again, ReadAttempts times in all, 100 ms then 200 ms apart.
func (c *Client) getTask(ctx context.Context, taskID, contextID string) (contracts.TaskSnapshot, error) {
	for attempt := 1; ; attempt++ {
		snap, err := c.getTaskOnce(ctx, taskID, contextID)
		var ce *CallError
		if err == nil || !errors.As(err, &ce) || !ce.Unreadable || attempt >= ReadAttempts {
			if ce != nil && ce.Unreadable {
				ce.Attempts = attempt
			}
			return snap, err
		}
		select {
		case <-ctx.Done():
			return snap, err
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func (c *Client) getTaskOnce(ctx context.Context, taskID, contextID string) (contracts.TaskSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	ctx, rec := withRecord(ctx)
	t, err := c.sdk.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID), HistoryLength: noHistory()})
	if err != nil {
		return contracts.TaskSnapshot{}, classify("GetTask", err, rec)
	}
	if err := checkIDs("GetTask", taskID, contextID, string(t.ID), t.ContextID, true); err != nil {
		return contracts.TaskSnapshot{}, err
	}
	return snapshotOf(t, rec.exact, c.iface.Version), nil
}

// createPushConfig is CreatePushConfig before the redaction.
func (c *Client) createPushConfig(ctx context.Context, taskID, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	ctx, rec := withRecord(ctx)
	cfg := &a2a.PushConfig{TaskID: a2a.TaskID(taskID), URL: url, Token: token, Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: token}}
	if _, err := c.sdk.CreateTaskPushConfig(ctx, cfg); err != nil {
		return classify("CreateTaskPushNotificationConfig", err, rec)
	}
	return nil
}

// ArtifactChunk is one streamed TaskArtifactUpdateEvent (A2A 1.0 §4.2.2):
// an artifact, or a part of one when Append is set.
type ArtifactChunk struct {
	Artifact  contracts.Artifact
	Append    bool
	LastChunk bool
}

// StreamEvent is what SubscribeStates yields of one stream event: the
// state (short form) and status identity of a task snapshot or status
// update; both empty for an artifact update.
type StreamEvent struct {
	State     contracts.TaskState
	StatusKey string
	// Chunk is an artifact update (A2A 1.0 §4.2.2 TaskArtifactUpdateEvent):
	// an artifact, or a part of one to append.
	Chunk *ArtifactChunk
}

// SubscribeStates follows the Task's stream (A2A 1.0 §3.1.6
// SubscribeToTask) and yields the state and status identity of every
// status event and task snapshot; artifact events yield an empty
// StreamEvent. The sequence ends when the stream ends (a terminal state,
// or a dropped connection: then with an error, or silently).
func (c *Client) SubscribeStates(ctx context.Context, taskID string) iter.Seq2[StreamEvent, error] {
	return c.SubscribeStatesOpened(ctx, taskID, nil)
}

// SubscribeStatesOpened is SubscribeStates, calling opened (when not nil)
// once the agent has answered the subscription over HTTP, before its first
// event: a read of the task then closes the gap between the read before it
// and the subscription, which A2A 0.3 §7.9 lets a server leave open (it
// need not replay what came before; A2A 1.0 §3.1.6 sends the Task first).
func (c *Client) SubscribeStatesOpened(ctx context.Context, taskID string, opened func()) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		ctx, rec := withRecord(ctx)
		rec.stream = true
		if opened != nil {
			var once sync.Once
			rec.opened = func() { once.Do(opened) }
		}
		for ev, err := range c.sdk.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(taskID)}) {
			if err != nil {
				yield(StreamEvent{}, c.finish(classify("SubscribeToTask", err, rec)))
				return
			}
			var se StreamEvent
			switch e := ev.(type) {
			case *a2a.Task:
				snap := snapshotOf(e, rec.exact, c.iface.Version)
				se = StreamEvent{State: snap.State, StatusKey: snap.StatusKey}
			case *a2a.TaskStatusUpdateEvent:
				snap := snapshotOf(&a2a.Task{ID: e.TaskID, ContextID: e.ContextID, Status: e.Status}, rec.exact, c.iface.Version)
				se = StreamEvent{State: snap.State, StatusKey: snap.StatusKey}
			case *a2a.TaskArtifactUpdateEvent:
				if e.Artifact != nil && (e.TaskID == "" || string(e.TaskID) == taskID) {
					se.Chunk = &ArtifactChunk{Artifact: c.red.artifact(artifactOf(e.Artifact, rec.exact, c.iface.Version)), Append: e.Append, LastChunk: e.LastChunk}
				}
			}
			if !yield(se, nil) {
				return
			}
		}
	}
}

// cancelTask is CancelTask before the redaction.
func (c *Client) cancelTask(ctx context.Context, taskID, contextID string) (contracts.TaskSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	ctx, rec := withRecord(ctx)
	t, err := c.sdk.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)})
	if err != nil {
		return contracts.TaskSnapshot{}, classify("CancelTask", err, rec)
	}
	if err := checkIDs("CancelTask", taskID, contextID, string(t.ID), t.ContextID, true); err != nil {
		return contracts.TaskSnapshot{}, err
	}
	return snapshotOf(t, rec.exact, c.iface.Version), nil
}

// IDError is a reply that names another task or context than the one
// asked about, or a Task without an id (A2A 1.0 §3.4.3: a follow-up
// continues the task it names; §4.1.1: a Task has an id). The tracked ids
// stay as they are.
type IDError struct {
	Field   string // "taskId" or "contextId"
	Tracked string
	Got     string
}

func (e *IDError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("the reply carries no %s (tracked %s %q)", e.Field, e.Field, e.Tracked)
	}
	if e.Tracked == "" {
		return fmt.Sprintf("the reply has %s %q", e.Field, e.Got)
	}
	return fmt.Sprintf("the reply names %s %q, the delegation tracks %s %q", e.Field, e.Got, e.Field, e.Tracked)
}

// MaxIDBytes bounds a taskId or contextId read from an agent.
const MaxIDBytes = 1024

// checkIDs refuses a reply whose task id (or context id) is not the one
// asked about; needTask: the reply is a Task, so it must have an id.
func checkIDs(op, wantTask, wantContext, gotTask, gotContext string, needTask bool) error {
	if len(gotTask) > MaxIDBytes || len(gotContext) > MaxIDBytes {
		return &CallError{Category: contracts.CategoryProtocol, Op: op,
			Err: fmt.Errorf("the reply's taskId (%d bytes) or contextId (%d bytes) is over %d bytes", len(gotTask), len(gotContext), MaxIDBytes)}
	}
	var e *IDError
	switch {
	case needTask && gotTask == "":
		e = &IDError{Field: "taskId", Tracked: wantTask}
	case wantTask != "" && gotTask != "" && gotTask != wantTask:
		e = &IDError{Field: "taskId", Tracked: wantTask, Got: gotTask}
	case wantContext != "" && gotContext != "" && gotContext != wantContext:
		e = &IDError{Field: "contextId", Tracked: wantContext, Got: gotContext}
	}
	if e == nil {
		return nil
	}
	return &CallError{Category: contracts.CategoryProtocol, Op: op, Err: e}
}

// CallError is an error of one call, with its category.
type CallError struct {
	Category contracts.Category
	Op       string
	// Status is the HTTP status, when one came back.
	Status int
	// HasCode reports a JSON-RPC error object (JSON-RPC 2.0 §5.1); Code
	// and Message are its code and message, whatever its data held.
	HasCode bool
	Code    int
	// HasGRPCCode reports a call over the gRPC binding that ended with a
	// status (A2A 1.0 §10.6); GRPCCode is its code. Message is then the
	// status message.
	HasGRPCCode bool
	GRPCCode    int
	Message     string
	// Excerpt is the start of the error response body (at most 4096
	// bytes, untrusted remote text); BodyBytes is the body's length and
	// BodySHA256 its hash, so that what was cut can still be identified.
	Excerpt    string
	BodyBytes  int
	BodySHA256 string
	// Written reports whether the request was written to the connection: a
	// call that failed after that may have taken effect (DESIGN principle 4).
	Written bool
	// Hint is what the client knows of an authorization failure that the
	// agent's answer does not say: that no credential went with the call,
	// and why (Options.NoCredential).
	Hint string
	// Unreadable reports a 2xx reply this client could not read (category
	// protocol); GetTask reads again before it gives up (ReadAttempts).
	Unreadable bool
	// Attempts is how many times the call was made (GetTask of an
	// unreadable reply: ReadAttempts).
	Attempts int
	Err      error
}

// maxErrorText bounds CallError.Error (remote text included); the
// activities cut it further to the contract's max_text_chars.
const maxErrorText = 4096

func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Op, e.Category)
	switch {
	case e.Status != 0 && e.HasCode:
		fmt.Fprintf(&b, " (HTTP %d, JSON-RPC error %d)", e.Status, e.Code)
	case e.Status != 0:
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	case e.HasCode:
		fmt.Fprintf(&b, " (JSON-RPC error %d)", e.Code)
	case e.HasGRPCCode:
		fmt.Fprintf(&b, " (gRPC status %s)", codes.Code(e.GRPCCode))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if (e.HasCode || e.HasGRPCCode) && e.Message != "" && !strings.Contains(e.Err.Error(), e.Message) {
		b.WriteString(": " + e.Message)
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, "; read %d times", e.Attempts)
	}
	if e.BodySHA256 != "" {
		fmt.Fprintf(&b, "; response body (%d bytes, sha256:%s): %s", e.BodyBytes, e.BodySHA256, e.Excerpt)
	}
	return contracts.CutText(b.String(), maxErrorText)
}

func (e *CallError) Unwrap() error { return e.Err }

// Retryable reports whether the same call may simply be made again.
func (e *CallError) Retryable() bool { return e.Category == contracts.CategoryTransient }

// classify makes the CallError of a failed call. It goes by what came
// back, in this order: the HTTP guard's refusal (card); 401/403 or an A2A
// authentication error (authorization); a 5xx carrying a JSON-RPC error
// (by its code, as below); HTTP 408, 429 and 5xx other than
// 501/505 (transient, whatever the body); any other 4xx, or a body over
// the limit (protocol: the same call would fail again; for a send answered
// 2xx, unknown_outcome: the agent took the message); a reply cut before
// its end (unknown_outcome for a send, transient for a read); a JSON-RPC
// error code (-32603 internal and the server-error range -32000..-32099
// outside A2A's own codes: transient; every other code: protocol); no
// response (transient when nothing was written or for a GetTask,
// unknown_outcome when the request was written); any other 2xx reply that
// did not decode (unknown_outcome for a send, protocol otherwise). A call
// over the gRPC binding is classed by its status instead (classifyGRPC).
func classify(op string, err error, rec *record) error {
	rec.mu.Lock()
	ce := &CallError{Op: op, Status: rec.status, Written: rec.written, Err: err,
		HasCode: rec.hasRPCCode, Code: rec.rpcCode, Message: rec.rpcMessage,
		Excerpt: rec.excerpt, BodyBytes: rec.bodyBytes, BodySHA256: rec.bodySHA256}
	rec.mu.Unlock()
	if ce.HasCode && ce.Message != "" {
		ce.Message = contracts.CutText(ce.Message, 1024)
	}
	rec.mu.Lock()
	overGRPC := rec.grpc
	rec.mu.Unlock()
	if cat := authCategory(err); cat != "" {
		// The credential seam's own failure (a token endpoint's answer, a
		// card naming another token URL), over any binding: decided before
		// the call went, or after the agent refused it.
		ce.Category = cat
		return ce
	}
	if overGRPC {
		classifyGRPC(op, ce, rec)
		return ce
	}
	status := ce.Status
	switch {
	case authCategory(err) != "":
		// No token, or a card naming another token endpoint: nothing sent.
		ce.Category = authCategory(err)
	case errors.Is(err, cards.ErrGuard):
		// The HTTP guard refused the address: permanent, nothing sent.
		ce.Category = contracts.CategoryCard
	case status == http.StatusUnauthorized || status == http.StatusForbidden,
		ce.HasCode && (ce.Code == -31401 || ce.Code == -31403),
		errors.Is(err, a2a.ErrUnauthenticated), errors.Is(err, a2a.ErrUnauthorized):
		ce.Category = contracts.CategoryAuthorization
	case ce.HasCode && ce.Code != 0 && status >= 500:
		// A JSON-RPC error sent with a 5xx (trpc-a2a-go answers every A2A
		// error with HTTP 500): its code says what it is (TaskNotFound
		// stays protocol, -32603 internal stays transient).
		ce.Category = rpcCategory(ce.Code)
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests,
		status >= 500 && status != http.StatusNotImplemented && status != http.StatusHTTPVersionNotSupported:
		ce.Category = contracts.CategoryTransient
	case status >= 400:
		ce.Category = contracts.CategoryProtocol
	case errors.Is(err, ErrResponseTooLarge) && op == "SendMessage" && status/100 == 2:
		// The agent took the message (2xx) and answered with more than
		// this client reads: a task may exist, its id unread.
		ce.Category = contracts.CategoryUnknownOutcome
	case errors.Is(err, ErrResponseTooLarge):
		ce.Category = contracts.CategoryProtocol
	case errors.As(err, new(*BodyReadError)) && op == "SendMessage":
		// The agent answered with a status, so it took the message; its
		// reply was lost. (Not conditioned on httptrace's WroteRequest: a
		// server may answer before the client has finished writing the
		// body, and the callback then comes after the cut reply.)
		ce.Category = contracts.CategoryUnknownOutcome
	case errors.As(err, new(*BodyReadError)):
		ce.Category = contracts.CategoryTransient
	case ce.HasCode:
		ce.Category = rpcCategory(ce.Code)
	case errors.Is(err, a2a.ErrTaskNotFound), errors.Is(err, a2a.ErrTaskNotCancelable),
		errors.Is(err, a2a.ErrInvalidParams), errors.Is(err, a2a.ErrInvalidRequest),
		errors.Is(err, a2a.ErrMethodNotFound), errors.Is(err, a2a.ErrParseError),
		errors.Is(err, a2a.ErrVersionNotSupported), errors.Is(err, a2a.ErrUnsupportedOperation),
		errors.Is(err, a2a.ErrUnsupportedContentType), errors.Is(err, a2a.ErrInvalidAgentResponse),
		errors.Is(err, a2a.ErrExtensionSupportRequired):
		ce.Category = contracts.CategoryProtocol
	case status == 0 && !ce.Written:
		ce.Category = contracts.CategoryTransient
	case status == 0 && ce.Written && op == "GetTask":
		// A read that timed out or was reset: read again.
		ce.Category = contracts.CategoryTransient
	case status == 0 && ce.Written:
		// Timeout or reset after the request was written: it may have been
		// processed.
		ce.Category = contracts.CategoryUnknownOutcome
	case op == "SendMessage" && status/100 == 2:
		// A 2xx reply to a send that did not decode: the agent took the
		// message, and what it made of it is unknown.
		ce.Category = contracts.CategoryUnknownOutcome
	default:
		// A 2xx reply that did not decode, or a server error of a2a-go's
		// own making from such a reply.
		ce.Category = contracts.CategoryProtocol
		ce.Unreadable = status/100 == 2
	}
	return ce
}

// rpcCategory classes a JSON-RPC error code (JSON-RPC 2.0 §5.1, A2A 1.0
// §5.4): internal errors and implementation-defined server errors are
// transient; parse, request, method, params and every A2A error are not.
func rpcCategory(code int) contracts.Category {
	switch {
	case code == -32603:
		return contracts.CategoryTransient
	case code <= -32001 && code >= -32009:
		return contracts.CategoryProtocol
	case code <= -32000 && code >= -32099:
		return contracts.CategoryTransient
	}
	return contracts.CategoryProtocol
}

func partsText(parts a2a.ContentParts) string {
	var texts []string
	for _, p := range parts {
		if p != nil && p.Text() != "" {
			texts = append(texts, p.Text())
		}
	}
	return strings.Join(texts, "\n")
}

// SendMessage sends msg (A2A 1.0 §3.1.1) and returns the Task it created or
// continued. A reply that is a Message and not a Task comes back as a
// TaskSnapshot with Reply set and no TaskID. Errors are *CallError.
// The secrets this client sends are redacted from what comes back
// (Options.WithCredential).
func (c *Client) SendMessage(ctx context.Context, msg contracts.OutboundMessage) (snap contracts.TaskSnapshot, err error) {
	defer c.observe("SendMessage", time.Now(), &err)
	snap, err = c.sendMessage(ctx, msg)
	return c.red.snapshot(snap), c.finish(err)
}

// SendStreaming sends msg by SendStreamingMessage (A2A 1.0 §3.1.2) and
// returns at the stream's first event, which names the Task it created or
// continued (or is the Message reply): an agent that works for long inside
// the call is followed from its first event, never left to a timeout that
// would make the send's outcome unknown. The stream is then closed; the
// task is followed by GetTask or SubscribeStates. Errors are *CallError as
// for SendMessage; a stream that ends before any event is unknown_outcome.
// An agent that does not serve streams (UnsupportedOperation, method not
// found, HTTP 404/405/501: nothing was created) gives a protocol error
// that StreamingRefused reports, and the caller may send by SendMessage.
func (c *Client) SendStreaming(ctx context.Context, msg contracts.OutboundMessage) (contracts.TaskSnapshot, error) {
	snap, _, err := c.SendStreamingWatch(ctx, msg, 0)
	return snap, err
}

// SendStreamingWatch is SendStreaming that, when the first event leaves the
// task submitted or working, keeps the stream open for at most watch and
// reads its status updates (A2A 1.0 §4.2.1) until one reports a terminal
// or interrupted state (A2A 1.0 §4.1.3). It returns the first event's
// snapshot, as SendStreaming does, and the last state a status update
// reported after it ("" for none): when that state is terminal or
// interrupted, the task has something to read now (its artifacts, its
// question), and the caller reads it by GetTask instead of waiting to
// poll. Errors are SendStreaming's; one after the first event ends the
// watch and is not an error (the task exists).
//
// The request's duration (Options.Observer) runs to the first event: the
// watch is delegate's, not the agent's answer.
func (c *Client) SendStreamingWatch(ctx context.Context, msg contracts.OutboundMessage, watch time.Duration) (contracts.TaskSnapshot, contracts.TaskState, error) {
	start, firstAt := time.Now(), time.Time{}
	snap, last, err := c.sendStreaming(ctx, msg, watch, &firstAt)
	if c.obs != nil {
		end := firstAt
		if end.IsZero() {
			end = time.Now()
		}
		c.obs.AgentRequest(c.iface.URL, c.iface.Binding, "SendStreamingMessage", CallResult(err), end.Sub(start))
	}
	return c.red.snapshot(snap), last, c.finish(err)
}

// StreamingRefused reports an error of SendStreaming by which the agent
// said it does not serve streams (nothing was created): A2A
// UnsupportedOperation (-32004), JSON-RPC method not found (-32601), HTTP
// 404, 405 or 501, or gRPC Unimplemented.
func StreamingRefused(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Category == contracts.CategoryProtocol && notOffered(ce)
}

// GetTask reads the Task (A2A 1.0 §3.1.3). contextID, when not empty, is
// the tracked context: a reply naming another is an IDError. Errors are
// *CallError.
// The secrets this client sends are redacted from what comes back
// (Options.WithCredential).
func (c *Client) GetTask(ctx context.Context, taskID, contextID string) (snap contracts.TaskSnapshot, err error) {
	defer c.observe("GetTask", time.Now(), &err)
	snap, err = c.getTask(ctx, taskID, contextID)
	return c.red.snapshot(snap), c.finish(err)
}

// CancelTask asks the agent to cancel the Task (A2A 1.0 §3.1.5) and returns
// the Task as the agent reports it; contextID as for GetTask. Errors are *CallError; a task that is
// not cancelable gives a2a.ErrTaskNotCancelable inside.
// The secrets this client sends are redacted from what comes back
// (Options.WithCredential).
func (c *Client) CancelTask(ctx context.Context, taskID, contextID string) (snap contracts.TaskSnapshot, err error) {
	defer c.observe("CancelTask", time.Now(), &err)
	snap, err = c.cancelTask(ctx, taskID, contextID)
	return c.red.snapshot(snap), c.finish(err)
}

// CreatePushConfig asks the agent to push the task's changes to url
// (A2A 1.0 §3.1.7 CreateTaskPushNotificationConfig), carrying token both
// as the config's token (sent back in A2A-Notification-Token) and as its
// authentication, scheme Bearer (sent back as "Authorization: Bearer",
// A2A 1.0 §4.3.3): peers use one or the other. Errors are *CallError.
// The secrets this client sends are redacted from what comes back
// (Options.WithCredential).
func (c *Client) CreatePushConfig(ctx context.Context, taskID, url, token string) error {
	return c.finish(c.createPushConfig(ctx, taskID, url, token))
}

// Observer is told of what a Client and a Credentials do, for metrics
// (package internal/metrics implements it): every call to an agent
// (cards.Observer.AgentRequest: origin is the interface's URL, method
// the A2A method) and every token request (TokenRequest: tokenURL is the
// token endpoint, or the issuer when discovery failed; result "ok",
// "transient", "protocol" or "authorization"). It must not block.
type Observer interface {
	cards.Observer
	TokenRequest(tokenURL, result string)
}

// observe tells the client's Observer of one call.
func (c *Client) observe(method string, start time.Time, err *error) {
	if c.obs == nil {
		return
	}
	c.obs.AgentRequest(c.iface.URL, c.iface.Binding, method, CallResult(*err), time.Since(start))
}

// CallResult is the result a call's error is reported with: "ok" (nil),
// the category of a *CallError when it is transient, protocol,
// authorization or unknown_outcome, else "protocol".
func CallResult(err error) string {
	if err == nil {
		return "ok"
	}
	var ce *CallError
	if errors.As(err, &ce) {
		return resultOf(ce.Category)
	}
	return string(contracts.CategoryProtocol)
}

func resultOf(cat contracts.Category) string {
	switch cat {
	case contracts.CategoryTransient, contracts.CategoryProtocol, contracts.CategoryAuthorization, contracts.CategoryUnknownOutcome:
		return string(cat)
	}
	return string(contracts.CategoryProtocol)
}
