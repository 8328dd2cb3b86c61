package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// stub is a misbehaving agent: every request gets reply(method or path).
type stub struct {
	reply func(w http.ResponseWriter, r *http.Request, method string)
}

func (s stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	method := req.Method
	if method == "" {
		method = r.Method + " " + r.URL.Path
	}
	s.reply(&idWriter{ResponseWriter: w, id: req.ID}, r, method)
}

// idWriter carries the request's JSON-RPC id to rpcResult and rpcError,
// which answer with it (JSON-RPC 2.0 §5).
type idWriter struct {
	http.ResponseWriter
	id json.RawMessage
}

func (w *idWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func rpcID(w http.ResponseWriter) string {
	if iw, ok := w.(*idWriter); ok && len(iw.id) > 0 {
		return string(iw.id)
	}
	return "1"
}

func rpcResult(w http.ResponseWriter, result string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+rpcID(w)+`,"result":`+result+`}`)
}

func rpcError(w http.ResponseWriter, errObj string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+rpcID(w)+`,"error":`+errObj+`}`)
}

func dialStub(t *testing.T, h http.Handler, binding, version string) *Client {
	t.Helper()
	return dialStubWith(t, h, binding, version, Options{MaxResponseBytes: 1 << 20})
}

func dialStubWith(t *testing.T, h http.Handler, binding, version string, opts Options) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := Dial(ctx, contracts.Interface{URL: srv.URL + "/a2a", Binding: binding, Version: version}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func callError(t *testing.T, err error) *CallError {
	t.Helper()
	var ce *CallError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want *CallError", err, err)
	}
	return ce
}

const task1 = `{"id":"t-1","contextId":"c-1","status":{"state":"%s"}}`

// JSON-RPC 2.0 §5.1 lets error.data be any value; a2a-go decodes only a
// list of typed details. The code, the message and the category must
// survive any shape.
func TestJSONRPCErrorDataOfAnyShape(t *testing.T) {
	for _, data := range []string{`"stack trace here"`, `{"detail":"db down"}`, `42`, `[1,2]`, `null`, `[{"@type":"x","a":1}]`} {
		t.Run(data, func(t *testing.T) {
			c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
				rpcError(w, `{"code":-32603,"message":"internal hiccup","data":`+data+`}`)
			}}, "JSONRPC", "1.0")
			_, err := c.GetTask(context.Background(), "t-1", "")
			ce := callError(t, err)
			if ce.Category != contracts.CategoryTransient || !ce.HasCode || ce.Code != -32603 {
				t.Fatalf("error = %v (category %s, code %d), want transient -32603", err, ce.Category, ce.Code)
			}
			if !strings.Contains(err.Error(), "internal hiccup") {
				t.Errorf("error %q does not keep the agent's message", err)
			}
		})
	}
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcError(w, `{"code":-32001,"message":"no such task","data":"t-9"}`)
	}}, "JSONRPC", "0.3")
	_, err := c.GetTask(context.Background(), "t-9", "")
	if ce := callError(t, err); ce.Category != contracts.CategoryProtocol || ce.Code != -32001 {
		t.Errorf("0.3 TaskNotFound with string data: %v, want protocol -32001", err)
	}
}

// Over HTTP+JSON, a 4xx other than 408/429 is permanent whatever its body
// says; 5xx, 408 and 429 are transient.
func TestRESTStatusClassesWithoutReason(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   contracts.Category
	}{
		{404, `Cannot POST /a2a/message:send`, contracts.CategoryProtocol},
		{400, `{"error":{"message":"bad"}}`, contracts.CategoryProtocol},
		{405, ``, contracts.CategoryProtocol},
		{408, ``, contracts.CategoryTransient},
		{429, `slow down`, contracts.CategoryTransient},
		{503, `<html>down</html>`, contracts.CategoryTransient},
		{501, `not implemented`, contracts.CategoryProtocol},
	} {
		c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		}}, "HTTP+JSON", "1.0")
		_, err := c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
		ce := callError(t, err)
		if ce.Category != tc.want || ce.Status != tc.status {
			t.Errorf("HTTP %d %q: category %s status %d, want %s", tc.status, tc.body, ce.Category, ce.Status, tc.want)
		}
		if tc.body != "" && !strings.Contains(ce.Error(), tc.body) {
			t.Errorf("HTTP %d: error %q does not show the body excerpt", tc.status, ce.Error())
		}
	}
}

// A reply of the wrong shape must not carry the whole body into the error.
func TestWrongShapeReplyIsBounded(t *testing.T) {
	big := `{"kind":"surprise","secret":"` + strings.Repeat("A", 8000) + `SECRET-TOKEN-XYZ","pad":"` + strings.Repeat("b", 12000) + `"}`
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, big) }}, "JSONRPC", "1.0")
	_, err := c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	ce := callError(t, err)
	// Answered 2xx, so the agent took the message: what it made of it is
	// unknown (a protocol error ended the delegation, leaving a task the
	// agent may have created unrecorded).
	if ce.Category != contracts.CategoryUnknownOutcome {
		t.Errorf("category = %s, want unknown_outcome", ce.Category)
	}
	if _, err := c.GetTask(context.Background(), "t-1", ""); callError(t, err).Category != contracts.CategoryProtocol {
		t.Errorf("the same reply to GetTask: %v, want protocol", err)
	}
	if msg := err.Error(); len(msg) > maxErrorText+200 || strings.Contains(msg, "SECRET-TOKEN-XYZ") {
		t.Errorf("error is %d bytes (contains the secret: %v), want at most %d", len(msg), strings.Contains(msg, "SECRET-TOKEN-XYZ"), maxErrorText)
	}
}

func TestResponseOverLimitIsNotDecoded(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"pad":"`+strings.Repeat("x", 2<<20)+`"}`)
	}}, "JSONRPC", "1.0")
	_, err := c.GetTask(context.Background(), "t-1", "")
	ce := callError(t, err)
	if ce.Category != contracts.CategoryProtocol || !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), "1048576") {
		t.Errorf("error = %v, want protocol naming the limit of 1048576 bytes", err)
	}
	// The same to a send: the agent took the message (unknown outcome).
	_, err = c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if ce := callError(t, err); ce.Category != contracts.CategoryUnknownOutcome || !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("send answered over the limit: %v, want unknown_outcome", err)
	}
}

// A GetTask whose reply trickles (headers at once, then a byte every
// 100 ms) ends at Options.CallTimeout, as a transient failure, and its
// connection is closed: it held the read, its connection and goroutine
// until the activity's start-to-close timeout.
func TestTricklingReadIsCut(t *testing.T) {
	var closed atomic.Int32
	c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		defer closed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		testutil.Trickle(w, r, " ", 100*time.Millisecond, 100)
	}}, "JSONRPC", "1.0", Options{CallTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := c.GetTask(context.Background(), "t-1", "")
	if ce := callError(t, err); ce.Category != contracts.CategoryTransient {
		t.Errorf("trickled GetTask: %v (%s), want transient", err, ce.Category)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("trickled GetTask took %s, want about the call timeout", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closed.Load() == 0 {
		t.Error("the agent's handler still writes: the connection was not closed")
	}
}

// States spelled the other version's way are read on either interface.
func TestStateSpellingsOnEitherVersion(t *testing.T) {
	for _, tc := range []struct {
		version, sent string
		want          contracts.TaskState
	}{
		{"1.0", "completed", contracts.TaskStateCompleted},
		{"1.0", "input-required", contracts.TaskStateInputRequired},
		{"1.0", "cancelled", contracts.TaskStateCanceled},
		{"1.0", "TASK_STATE_FAILED", contracts.TaskStateFailed},
		{"0.3", "TASK_STATE_COMPLETED", contracts.TaskStateCompleted},
		{"0.3", "INPUT_REQUIRED", contracts.TaskStateInputRequired},
		{"0.3", "completed", contracts.TaskStateCompleted},
		{"1.0", "paused", contracts.TaskStateUnknown},
	} {
		result := strings.Replace(task1, "%s", tc.sent, 1)
		if tc.version == "0.3" {
			result = `{"kind":"task",` + result[1:]
		}
		c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, result) }}, "JSONRPC", tc.version)
		snap, err := c.GetTask(context.Background(), "t-1", "")
		if err != nil {
			t.Errorf("%s %q: GetTask error = %v", tc.version, tc.sent, err)
			continue
		}
		if snap.State != tc.want {
			t.Errorf("%s %q: state = %q, want %q", tc.version, tc.sent, snap.State, tc.want)
		}
		if tc.want == contracts.TaskStateUnknown && snap.RawState != tc.sent {
			t.Errorf("unknown state kept as %q, want %q", snap.RawState, tc.sent)
		}
	}
	// Remote content that happens to look like a status is not rewritten.
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"data":{"status":{"state":"completed"}}}]}]}`)
	}}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil || len(snap.Artifacts) != 1 || string(snap.Artifacts[0].Parts[0].Data) != `{"status":{"state":"completed"}}` {
		t.Errorf("GetTask = %+v, %v: artifact data must stay as sent", snap, err)
	}
}

// The tracked task id never changes silently.
func TestRepliesNamingAnotherTask(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, strings.Replace(strings.Replace(task1, "%s", "TASK_STATE_WORKING", 1), "t-1", "t-other", 1))
	}}, "JSONRPC", "1.0")
	_, err := c.GetTask(context.Background(), "t-1", "")
	var ide *IDError
	if !errors.As(err, &ide) || callError(t, err).Category != contracts.CategoryProtocol ||
		!strings.Contains(err.Error(), `"t-1"`) || !strings.Contains(err.Error(), `"t-other"`) {
		t.Errorf("GetTask naming another task: %v, want a protocol IDError naming both ids", err)
	}
	c = dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, `{"kind":"surprise"}`) }}, "JSONRPC", "1.0")
	if _, err := c.GetTask(context.Background(), "t-1", ""); !errors.As(err, &ide) {
		t.Errorf("GetTask reply with no id: %v, want IDError", err)
	}
	c = dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"task":{"id":"t-1","contextId":"c-other","status":{"state":"TASK_STATE_WORKING"}}}`)
	}}, "JSONRPC", "1.0")
	if _, err := c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-2", TaskID: "t-1", ContextID: "c-1", Text: "hi"}); !errors.As(err, &ide) || ide.Field != "contextId" {
		t.Errorf("follow-up reply with another contextId: %v, want IDError on contextId", err)
	}
}

func TestStatusKey(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-01-02T03:04:05.123Z","message":{"messageId":"q-1","role":"ROLE_AGENT","parts":[{"text":"photo?"}]}}}`)
	}}, "JSONRPC", "1.0")
	a, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if a.StatusKey != "msg:q-1" || a.StatusTimestamp != "2026-01-02T03:04:05.123Z" {
		t.Errorf("snapshot = %+v, want status key msg:q-1", a)
	}
	b := a
	if !contracts.SameStatus(a, b) {
		t.Error("contracts.SameStatus(a, a) = false")
	}
	b.StatusKey = contracts.StatusKeyOf(b.State, "", "", "photo?", nil)
	if contracts.SameStatus(a, b) {
		t.Error("SameStatus with another key = true")
	}
}

// A reply cut before its end: the request was taken, the answer lost. A
// send is then unknown_outcome, a read transient.
func TestCutReply(t *testing.T) {
	cut := stub{func(w http.ResponseWriter, r *http.Request, m string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "400")
		w.WriteHeader(200)
		io.WriteString(w, `{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t-1"`)
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}}
	c := dialStub(t, cut, "JSONRPC", "1.0")
	_, err := c.GetTask(context.Background(), "t-1", "")
	if ce := callError(t, err); ce.Category != contracts.CategoryTransient {
		t.Errorf("GetTask cut: %v, want transient", err)
	}
	_, err = c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if ce := callError(t, err); ce.Category != contracts.CategoryUnknownOutcome {
		t.Errorf("SendMessage cut: %v, want unknown_outcome", err)
	}
}

// A reply that calls itself a stream, to a call that asked for none, is
// capped and normalized like any body.
func TestEventStreamHeaderOnAPlainCall(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"pad":"`+strings.Repeat("x", 2<<20)+`"}}`)
	}}, "JSONRPC", "1.0")
	if _, err := c.GetTask(context.Background(), "t-1", ""); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("3 MiB reply labelled text/event-stream: %v, want ErrResponseTooLarge", err)
	}
}

// A 503 is transient even when its body is over the limit.
func TestOversizeServerErrorIsTransient(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		w.WriteHeader(503)
		io.WriteString(w, strings.Repeat("busy ", 1<<19))
	}}, "JSONRPC", "1.0")
	_, err := c.GetTask(context.Background(), "t-1", "")
	if ce := callError(t, err); ce.Category != contracts.CategoryTransient {
		t.Errorf("oversize 503: %v, want transient", err)
	}
}

// GetTask and CancelTask replies naming another contextId are refused.
func TestReadNamingAnotherContext(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-OTHER","status":{"state":"TASK_STATE_CANCELED"}}`)
	}}, "JSONRPC", "1.0")
	var ide *IDError
	if _, err := c.GetTask(context.Background(), "t-1", "c-1"); !errors.As(err, &ide) || ide.Field != "contextId" {
		t.Errorf("GetTask: %v, want IDError on contextId", err)
	}
	if _, err := c.CancelTask(context.Background(), "t-1", "c-1"); !errors.As(err, &ide) || ide.Field != "contextId" {
		t.Errorf("CancelTask: %v, want IDError on contextId", err)
	}
}

// A task id over MaxIDBytes is refused (it would go into every later call
// and into history).
func TestOversizeTaskID(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"task":{"id":"`+strings.Repeat("t", 3000)+`","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`)
	}}, "JSONRPC", "1.0")
	_, err := c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if ce := callError(t, err); ce.Category != contracts.CategoryProtocol || !strings.Contains(err.Error(), "1024") {
		t.Errorf("3000-byte task id: %v, want protocol naming 1024", err)
	}
}

// A JSON-RPC response that does not answer its request (JSON-RPC 2.0 §5)
// is not read as its answer: another id (a2a-go took it), or both a result
// and an error (a2a-go read the error, -32603: transient, read again for
// ever).
func TestRPCResponseMustAnswerTheRequest(t *testing.T) {
	task := `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}`
	for name, tc := range map[string]struct {
		reply func(w http.ResponseWriter, r *http.Request, m string)
		want  string
	}{
		"another id": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":"2.0","id":"some-other-id","result":`+task+`}`)
		}, "its id is \"some-other-id\""},
		"no jsonrpc member": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"id":`+rpcID(w)+`,"result":`+task+`}`)
		}, `no "jsonrpc" member`},
		"jsonrpc 1.0": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":"1.0","id":`+rpcID(w)+`,"result":`+task+`}`)
		}, `"jsonrpc" member is "1.0"`},
		"jsonrpc with a space": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":"2.0 ","id":`+rpcID(w)+`,"result":`+task+`}`)
		}, `"jsonrpc" member is "2.0 "`},
		"jsonrpc 2": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":2,"id":`+rpcID(w)+`,"result":`+task+`}`)
		}, `"jsonrpc" member is 2 (`},
		"a result with a null id": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"result":`+task+`}`)
		}, "null id"},
		// a2a-go reads the first value only: what follows was never
		// looked at, and a response with another id before it was taken.
		"data after the response": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":"2.0","id":"nope","result":`+task+`}`+"\n{}")
		}, "data follows the response object"},
		"result and error": {func(w http.ResponseWriter, r *http.Request, m string) {
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+rpcID(w)+`,"result":`+task+`,"error":{"code":-32603,"message":"x"}}`)
		}, "both a result and an error"},
	} {
		c := dialStub(t, stub{tc.reply}, "JSONRPC", "1.0")
		_, err := c.GetTask(context.Background(), "t-1", "")
		if ce := callError(t, err); ce.Category != contracts.CategoryProtocol || !errors.Is(err, ErrRPCMismatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: GetTask %v, want protocol saying %q", name, err, tc.want)
		}
		// To a send: the agent answered 2xx, so it took the message.
		_, err = c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
		if ce := callError(t, err); ce.Category != contracts.CategoryUnknownOutcome {
			t.Errorf("%s: SendMessage %v, want unknown_outcome", name, err)
		}
	}
}

// A JSON-RPC error sent with HTTP 500 (trpc-a2a-go answers every A2A error
// so) is classed by its code: TaskNotFound is protocol, not transient;
// -32603 internal stays transient.
func TestRPCErrorWithServerStatusByItsCode(t *testing.T) {
	for code, want := range map[int]contracts.Category{-32001: contracts.CategoryProtocol, -32002: contracts.CategoryProtocol, -32601: contracts.CategoryProtocol, -32603: contracts.CategoryTransient} {
		c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"Task not found"}}`, rpcID(w), code))
		}}, "JSONRPC", "0.3")
		_, err := c.GetTask(context.Background(), "t-1", "")
		if ce := callError(t, err); ce.Category != want || ce.Code != code {
			t.Errorf("HTTP 500 with JSON-RPC %d: %v, want %s", code, err, want)
		}
	}
}
