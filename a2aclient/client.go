// Package a2aclient dials a remote A2A agent through the interface selected
// from its (verified) Agent Card and makes the calls a delegation needs:
// SendMessage, GetTask, CancelTask.
//
// It is a thin layer over github.com/a2aproject/a2a-go/v2/a2aclient: the 1.0
// JSON-RPC and HTTP+JSON transports, and the 0.3 ones from a2acompat/a2av0.
// The SDK sends the negotiated version as the A2A-Version service parameter
// (header) on every call (A2A 1.0 §3.6.1). On top it records, per call,
// whether the request was written and which HTTP status came back, so that
// errors can be classified (Classify) into the categories of contracts.
package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Client talks to one remote agent over one selected interface.
type Client struct {
	iface cards.Interface
	sdk   *sdk.Client
}

// Options configure Dial.
type Options struct {
	// HTTPClient carries the calls; nil means a client with connect timeout
	// 5 s and no overall timeout (calls are bounded by their context).
	HTTPClient *http.Client
	// Interceptors are a2a-go call interceptors (auth, logging).
	Interceptors []sdk.CallInterceptor
}

// Dial makes a client for the selected interface. It does no I/O.
func Dial(ctx context.Context, iface cards.Interface, opts Options) (*Client, error) {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}}
	}
	rec := *hc
	rec.Transport = &recordingTransport{base: transportOf(hc)}
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
	ver := a2a.ProtocolVersion(iface.Version)
	c, err := sdk.NewFactory(fopts...).CreateFromEndpoints(ctx, []*a2a.AgentInterface{{
		URL: iface.URL, ProtocolBinding: a2a.TransportProtocol(iface.Binding), ProtocolVersion: ver, Tenant: iface.Tenant,
	}})
	if err != nil {
		return nil, &CallError{Category: contracts.CategoryProtocol, Op: "dial", Err: err}
	}
	return &Client{iface: iface, sdk: c}, nil
}

func transportOf(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}

// Interface returns the interface the client talks to.
func (c *Client) Interface() cards.Interface { return c.iface }

// Close releases the transport.
func (c *Client) Close() error { return c.sdk.Destroy() }

// Outbound is one outbound user Message (A2A 1.0 §4.1.4). TaskID and
// ContextID are empty for the first message of a delegation and set for
// follow-ups (A2A 1.0 §3.4.3).
type Outbound struct {
	MessageID string          `json:"message_id"`
	TaskID    string          `json:"task_id,omitempty"`
	ContextID string          `json:"context_id,omitempty"`
	Text      string          `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// SendMessage sends msg (A2A 1.0 §3.1.1) and returns the Task it created or
// continued. A reply that is a Message and not a Task comes back as a
// Snapshot with Reply set and no TaskID. Errors are *CallError.
func (c *Client) SendMessage(ctx context.Context, msg Outbound) (Snapshot, error) {
	parts := a2a.ContentParts{}
	if msg.Text != "" {
		parts = append(parts, a2a.NewTextPart(msg.Text))
	}
	if d := bytes.TrimSpace(msg.Data); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		var v any
		if err := json.Unmarshal(msg.Data, &v); err != nil {
			return Snapshot{}, &CallError{Category: contracts.CategoryInvalidInput, Op: "SendMessage", Err: fmt.Errorf("message data is not JSON: %w", err)}
		}
		parts = append(parts, a2a.NewDataPart(v))
	}
	m := &a2a.Message{ID: msg.MessageID, Role: a2a.MessageRoleUser, TaskID: a2a.TaskID(msg.TaskID), ContextID: msg.ContextID, Parts: parts}
	ctx, rec := withRecord(ctx)
	// returnImmediately (A2A 1.0 §3.2.2): the send is a short call; the
	// task is then followed by GetTask or a stream, never by a long blocking
	// send whose outcome a timeout would make unknown.
	req := &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
	res, err := c.sdk.SendMessage(ctx, req)
	if err != nil {
		return Snapshot{}, classify("SendMessage", err, rec)
	}
	switch r := res.(type) {
	case *a2a.Task:
		return SnapshotOf(r), nil
	case *a2a.Message:
		return Snapshot{ContextID: r.ContextID, TaskID: string(r.TaskID), State: StateMessage, Reply: partsText(r.Parts)}, nil
	default:
		return Snapshot{}, &CallError{Category: contracts.CategoryProtocol, Op: "SendMessage", Err: fmt.Errorf("unexpected result %T", res)}
	}
}

// GetTask reads the Task (A2A 1.0 §3.1.3). Errors are *CallError.
func (c *Client) GetTask(ctx context.Context, taskID string) (Snapshot, error) {
	ctx, rec := withRecord(ctx)
	t, err := c.sdk.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
	if err != nil {
		return Snapshot{}, classify("GetTask", err, rec)
	}
	return SnapshotOf(t), nil
}

// SubscribeStates follows the Task's stream (A2A 1.0 §3.1.6
// SubscribeToTask) and yields the state of every status event and task
// snapshot, in short form; artifact events yield "". The sequence ends
// when the stream ends (a terminal state, or a dropped connection: then
// with an error, or silently).
func (c *Client) SubscribeStates(ctx context.Context, taskID string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		ctx, rec := withRecord(ctx)
		for ev, err := range c.sdk.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(taskID)}) {
			if err != nil {
				yield("", classify("SubscribeToTask", err, rec))
				return
			}
			st := ""
			switch e := ev.(type) {
			case *a2a.Task:
				st = ShortState(e.Status.State)
			case *a2a.TaskStatusUpdateEvent:
				st = ShortState(e.Status.State)
			}
			if !yield(st, nil) {
				return
			}
		}
	}
}

// CancelTask asks the agent to cancel the Task (A2A 1.0 §3.1.5) and returns
// the Task as the agent reports it. Errors are *CallError; a task that is
// not cancelable gives a2a.ErrTaskNotCancelable inside.
func (c *Client) CancelTask(ctx context.Context, taskID string) (Snapshot, error) {
	ctx, rec := withRecord(ctx)
	t, err := c.sdk.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)})
	if err != nil {
		return Snapshot{}, classify("CancelTask", err, rec)
	}
	return SnapshotOf(t), nil
}

// CallError is an error of one call, with its category.
type CallError struct {
	Category contracts.Category
	Op       string
	// Status is the HTTP status, when one came back.
	Status int
	// Written reports whether the request was written to the connection: a
	// call that failed after that may have taken effect (DESIGN principle 4).
	Written bool
	Err     error
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Op, e.Category)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	return s + ": " + e.Err.Error()
}

func (e *CallError) Unwrap() error { return e.Err }

// Retryable reports whether the same call may simply be made again.
func (e *CallError) Retryable() bool { return e.Category == contracts.CategoryTransient }

func classify(op string, err error, rec *record) error {
	rec.mu.Lock()
	status, written := rec.status, rec.written
	rec.mu.Unlock()
	ce := &CallError{Op: op, Status: status, Written: written, Err: err}
	switch {
	case errors.Is(err, cards.ErrGuard):
		// The HTTP guard refused the address: permanent, nothing sent.
		ce.Category = contracts.CategoryCard
	case status == http.StatusUnauthorized || status == http.StatusForbidden,
		errors.Is(err, a2a.ErrUnauthenticated), errors.Is(err, a2a.ErrUnauthorized):
		ce.Category = contracts.CategoryAuthorization
	case errors.Is(err, a2a.ErrTaskNotFound), errors.Is(err, a2a.ErrTaskNotCancelable),
		errors.Is(err, a2a.ErrInvalidParams), errors.Is(err, a2a.ErrInvalidRequest),
		errors.Is(err, a2a.ErrMethodNotFound), errors.Is(err, a2a.ErrParseError),
		errors.Is(err, a2a.ErrVersionNotSupported), errors.Is(err, a2a.ErrUnsupportedOperation),
		errors.Is(err, a2a.ErrUnsupportedContentType), errors.Is(err, a2a.ErrInvalidAgentResponse),
		errors.Is(err, a2a.ErrExtensionSupportRequired):
		ce.Category = contracts.CategoryProtocol
	case status == http.StatusTooManyRequests || status == http.StatusInternalServerError || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout,
		errors.Is(err, a2a.ErrInternalError), errors.Is(err, a2a.ErrServerError):
		ce.Category = contracts.CategoryTransient
	case status >= 400:
		ce.Category = contracts.CategoryProtocol
	case status == 0 && !written:
		ce.Category = contracts.CategoryTransient
	case status == 0 && written:
		// Timeout or reset after the request was written: it may have been
		// processed.
		ce.Category = contracts.CategoryUnknownOutcome
	default:
		ce.Category = contracts.CategoryProtocol
	}
	return ce
}

type recordKey struct{}

type record struct {
	mu      sync.Mutex
	status  int
	written bool
}

func withRecord(ctx context.Context) (context.Context, *record) {
	rec := &record{}
	ctx = context.WithValue(ctx, recordKey{}, rec)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			rec.mu.Lock()
			rec.written = true
			rec.mu.Unlock()
		},
	})
	return ctx, rec
}

// recordingTransport notes the HTTP status of each call in its record.
type recordingTransport struct{ base http.RoundTripper }

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if rec, ok := req.Context().Value(recordKey{}).(*record); ok && resp != nil {
		rec.mu.Lock()
		rec.status = resp.StatusCode
		rec.mu.Unlock()
	}
	return resp, err
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
