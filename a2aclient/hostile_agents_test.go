package a2aclient

// Hostile and sloppy agents against the wire seam of "Lossless at the
// wire". Every test here fails because of a defect in delegate.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/a2adelegate/delegate/contracts"
)

// sse writes one event per data value, each with its own "data:" lines.
func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// An SSE event whose data spans several "data:" lines (WHATWG SSE: the
// lines are joined with "\n"; a2a-go's ParseDataStream joins them so) is
// valid; an agent that pretty-prints its JSON events sends exactly this.
// eventStream writes such an event back as ONE "data:" line with raw
// newlines inside it: every line after the first loses its "data:" prefix,
// a2a-go drops them, and the event no longer parses.
func TestBreakSSEEventOverSeveralDataLines(t *testing.T) {
	art := `{"artifactId":"a-1","name":"claim_opened","parts":[{"data":` + exactData + `}]}`
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		sseHeader(w)
		id := rpcID(w)
		ev := fmt.Sprintf("{\"jsonrpc\":\"2.0\",\"id\":%s,\n\"result\":{\"artifactUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\n\"artifact\":%s,\"lastChunk\":true}}}", id, art)
		for _, line := range strings.Split(ev, "\n") {
			fmt.Fprintf(w, "data: %s\n", line)
		}
		io.WriteString(w, "\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n", id)
	}}, "JSONRPC", "1.0")
	var chunks []ArtifactChunk
	for ev, err := range c.SubscribeStates(context.Background(), "t-1") {
		if err != nil {
			t.Fatalf("SubscribeStates: %v (the event was valid SSE: data over several data: lines)", err)
		}
		if ev.Chunk != nil {
			chunks = append(chunks, *ev.Chunk)
		}
	}
	if len(chunks) != 1 || len(chunks[0].Artifact.Parts) != 1 || string(chunks[0].Artifact.Parts[0].Data) != compact(t, exactData) {
		t.Fatalf("chunks = %+v, want the artifact with data %s", chunks, compact(t, exactData))
	}
}

// The same through SendStreaming: the first event, pretty-printed over
// several data: lines, names the task. delegate cannot read it, and the
// send whose task exists at the agent ends unknown_outcome.
func TestBreakSendStreamingFirstEventOverSeveralDataLines(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		sseHeader(w)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":\ndata: {\"id\":\"t-1\",\"contextId\":\"c-1\",\ndata: \"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", rpcID(w))
	}}, "JSONRPC", "1.0")
	snap, err := c.SendStreaming(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if err != nil || snap.TaskID != "t-1" {
		t.Fatalf("SendStreaming: %+v, %v; want task t-1 from the first event", snap, err)
	}
}

// A JSON-RPC error object without a usable code, with HTTP 503 (a
// framework's overload handler): the 5xx says "try again"; the
// "by its code" rule classes code 0 as protocol, so the delegation ends
// protocol_error on a transient overload.
func TestBreak5xxRPCErrorWithoutCodeIsNotTransient(t *testing.T) {
	for _, errObj := range []string{`{"message":"Service Unavailable"}`, `{"code":"UNAVAILABLE","message":"overloaded"}`, `{"code":-32000.0,"message":"server busy"}`} {
		c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+rpcID(w)+`,"error":`+errObj+`}`)
		}}, "JSONRPC", "1.0")
		_, err := c.GetTask(context.Background(), "t-1", "")
		if ce := callError(t, err); ce.Category != contracts.CategoryTransient {
			t.Errorf("HTTP 503 with error %s: %v (category %s), want transient", errObj, err, ce.Category)
		}
	}
}

// A bearer token echoed by the agent in a streamed event, its characters
// spelled as JSON escapes (\u0053 for S, a legal spelling many encoders
// use for non-ASCII and some for everything). Bodies are re-spelled before
// redaction (wireBody); stream events are not, and the exact text kept
// for data values carries the escapes: the secret reaches the snapshot.
func TestBreakStreamedEscapedSecretIsNotRedacted(t *testing.T) {
	const secret = "SECRET-ORIGIN-28001"
	escaped := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		return b.String()
	}
	opts := Options{MaxResponseBytes: 1 << 20}.WithCredential(nil, Secret{Bearer: secret})
	c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		tok := escaped(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		sseHeader(w)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\",\"message\":{\"messageId\":\"s\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"data\":{\"you_sent\":\"%s\"}}]}},\"artifacts\":[{\"artifactId\":\"a-1\",\"metadata\":{\"hdr\":\"%s\"},\"parts\":[{\"data\":{\"hdr\":\"%s\"}}]}]}}}\n\n", rpcID(w), tok, tok, tok)
	}}, "JSONRPC", "1.0", opts)
	snap, err := c.SendStreaming(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string]json.RawMessage{"status data": snap.StatusData, "artifact metadata": snap.Artifacts[0].Metadata, "part data": snap.Artifacts[0].Parts[0].Data} {
		var v any
		_ = json.Unmarshal(raw, &v)
		if s := fmt.Sprint(v); strings.Contains(s, secret) {
			t.Errorf("%s = %s: decodes to %s, the bearer token the client sent", name, raw, s)
		}
	}
}

// exactDelegation allows claim_opened with a schema any ledger contract
// writes: an amount that is a non-negative number.
func exactDelegation() contracts.Delegation {
	return contracts.Delegation{
		LocalWorkflowID: "wf", AgentCardURL: "http://a", Skill: "s", Purpose: "p",
		Message: contracts.MessageSpec{Text: "x"}, AllowedOutputs: []string{"claim_opened"},
		Deadline: time.Now().Add(time.Hour), WriteAuthority: "none",
		OutputSchemas: map[string]json.RawMessage{"claim_opened": json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number","minimum":0},"amounts":{"type":"array","items":{"type":"number","minimum":0}}}}`)},
	}
}

// validateWithin runs contracts.ValidateArtifacts (what the workflow runs on
// a completed task's artifacts, workflows/outcome.go) and reports a panic
// or a run longer than d.
func validateWithin(t *testing.T, d time.Duration, arts []contracts.Artifact) {
	t.Helper()
	done := make(chan any, 1)
	start := time.Now()
	go func() {
		defer func() { done <- recover() }()
		contracts.ValidateArtifacts(exactDelegation(), arts)
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("contracts.ValidateArtifacts panicked on the artifact the client passed on: %v (in the workflow: the workflow task fails on every replay)", p)
		}
	case <-time.After(d):
		t.Fatalf("contracts.ValidateArtifacts still running after %s (in the workflow task: past its 10 s timeout on every replay)", time.Since(start).Round(time.Second))
	}
}

// The agent's number text is now kept exact all the way to the workflow's
// schema check. 1e999999999 is valid JSON; a2a-go alone refused it
// (float64 overflow), the seam passes it on, and the schema validator
// (santhosh-tekuri/jsonschema: big.Rat.SetString, which refuses exponents
// past 1e6 and returns nil) dereferences nil on "minimum".
func TestBreakHugeExponentCrashesTheOutcomeCheck(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a-1","name":"claim_opened","parts":[{"data":{"amount":1e999999999}}]}]}`)
	}}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	validateWithin(t, 10*time.Second, snap.Artifacts)
}

// Within the default limits (256 KiB an artifact), 25,000 numbers of
// 1e999999 (8 bytes each): big.Rat builds 10^999999 for each one (about
// 20 ms), so the check of one artifact takes minutes of the workflow task.
func TestBreakManyHugeExponentsStallTheOutcomeCheck(t *testing.T) {
	nums := strings.TrimSuffix(strings.Repeat("1e999999,", 25000), ",")
	c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a-1","name":"claim_opened","parts":[{"data":{"amounts":[`+nums+`]}}]}]}`)
	}}, "JSONRPC", "1.0", Options{MaxResponseBytes: 8 << 20})
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if n := contracts.ArtifactSize(snap.Artifacts[0]); n > contracts.DefaultLimits.MaxArtifactBytes {
		t.Fatalf("artifact of %d bytes is over the default limit; the attack must fit", n)
	}
	validateWithin(t, 10*time.Second, snap.Artifacts)
}

// walk re-parses the whole subtree at every level of the reply's structure
// (json.Unmarshal of the object, then walk of each member): a member
// delegate never reads, nested a few thousand deep around one long string,
// costs depth x size. protect runs inside RoundTrip after the body is read,
// where no context or CallTimeout reaches: GetTask's 30 s bound does not
// end it, and the activity's goroutine burns a core long after its
// heartbeat timed out (and again on each retry).
func TestBreakDeepUnreadMemberMakesProtectQuadratic(t *testing.T) {
	const depth = 2000
	body := `{"jsonrpc":"2.0","id":"1","result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"x":` +
		strings.Repeat(`{"a":`, depth) + `"` + strings.Repeat("p", 3<<20) + `"` + strings.Repeat("}", depth) + `}}`
	if len(body) > DefaultMaxResponseBytes {
		t.Fatal("the reply must fit the default bound")
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		newExactValues().protect([]byte(body))
	}()
	select {
	case <-done:
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("protect of a %d-byte reply took %s", len(body), d)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("protect of a %d-byte reply (a member nested %d deep around a 3 MiB string) still running after 20 s", len(body), depth)
	}
}

// The same through GetTask with a CallTimeout of 2 s: the call does not
// return within its bound.
func TestBreakDeepUnreadMemberOutlivesCallTimeout(t *testing.T) {
	const depth = 2000
	body := `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"x":` +
		strings.Repeat(`[`, depth) + `"` + strings.Repeat("p", 3<<20) + `"` + strings.Repeat("]", depth) + `}`
	c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, body) }}, "JSONRPC", "1.0",
		Options{MaxResponseBytes: 8 << 20, CallTimeout: 2 * time.Second})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c.GetTask(context.Background(), "t-1", "")
		done <- err
	}()
	select {
	case err := <-done:
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("GetTask (CallTimeout 2 s) returned after %s: %v", d, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("GetTask with CallTimeout 2 s has not returned after 30 s")
	}
}

// The agent's data text is kept exact, duplicate keys too. The schema
// check (jsonschema.UnmarshalJSON: last member wins) sees order_id
// "A-1001", in resource_scope; the Outcome carries the text with
// "A-9999" first, which a first-wins reader takes, and which serde_json
// (Rust) and other strict readers refuse outright. Before the seam a2a-go
// collapsed the object; delegate refuses duplicate keys in its own inputs
// (contracts.DuplicateKeys) but not in what an agent sends.
func TestBreakDuplicateKeysSmuggleAnOutOfScopeValue(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a-1","name":"claim_opened","parts":[{"data":{"claim_id":"C-1","order_id":"A-9999","order_id":"A-1001"}}]}]}`)
	}}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	d := exactDelegation()
	d.OutputSchemas = map[string]json.RawMessage{"claim_opened": json.RawMessage(`{"type":"object","properties":{"claim_id":{"type":"string"},"order_id":{"type":"string","x-resource-ref":true}},"required":["claim_id","order_id"],"additionalProperties":false}`)}
	d.ResourceScope = []string{"A-1001"}
	outputs, rejected := contracts.ValidateArtifacts(d, snap.Artifacts)
	for _, o := range outputs {
		if strings.Contains(string(o.Data), "A-9999") {
			t.Errorf("accepted output %s (rejected %v): it names order A-9999, outside resource_scope [A-1001], in a member given twice", o.Data, rejected)
		}
	}
}

// repeatReader yields n bytes of b.
type repeatReader struct {
	b byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for i := range p {
		p[i] = r.b
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// A streamed send answered with one plain, pretty-printed JSON body (Flask
// in debug mode, Express with "json spaces", a proxy that re-indents): the
// seam wraps it as "data: " + body, raw newlines and all, so a2a-go reads
// only its first line ("{") and the send ends unknown_outcome, though the
// body named the task. (A reply that protect re-encodes happens to be
// compacted; one with nothing to protect is not.)
func TestBreakStreamAnsweredWithPrettyJSONBody(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": %s,\n  \"result\": {\n    \"task\": {\n      \"id\": \"t-1\",\n      \"contextId\": \"c-1\",\n      \"status\": {\"state\": \"TASK_STATE_SUBMITTED\"}\n    }\n  }\n}\n", rpcID(w))
	}}, "JSONRPC", "1.0")
	snap, err := c.SendStreaming(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if err != nil || snap.TaskID != "t-1" {
		t.Fatalf("SendStreaming: %q, %v; want task t-1 from the body", snap.TaskID, err)
	}
}

// A card that declares streaming, an agent whose JSON-RPC server does not
// serve SendStreamingMessage: it answers as JSON-RPC servers do, a plain
// JSON error with HTTP 200 (a2a-js answers an error before a stream so).
// SendStreaming's doc and docs/operations.md: UnsupportedOperation or
// method not found is refused (StreamingRefused) and the send goes by
// SendMessage. The error body is neither an event nor "a reply", a2a-go's
// stream reader finds no data: line in it, the loop ends with no event, and
// delegate reports "the stream ended before its first event",
// unknown_outcome: nothing is resent, the operator is asked, for an agent
// that said it made nothing. -32603 (transient) fares the same.
func TestBreakStreamRefusedByAPlainRPCError(t *testing.T) {
	for _, tc := range []struct {
		code    int
		refused bool
		cat     contracts.Category
	}{{-32004, true, contracts.CategoryProtocol}, {-32601, true, contracts.CategoryProtocol}, {-32603, false, contracts.CategoryTransient}} {
		c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
			rpcError(w, fmt.Sprintf(`{"code":%d,"message":"streaming is not served here"}`, tc.code))
		}}, "JSONRPC", "1.0")
		_, err := c.SendStreaming(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
		ce := callError(t, err)
		if StreamingRefused(err) != tc.refused || ce.Category != tc.cat {
			t.Errorf("JSON-RPC error %d with HTTP 200: %v (category %s, StreamingRefused %v), want %s, StreamingRefused %v", tc.code, err, ce.Category, StreamingRefused(err), tc.cat, tc.refused)
		}
	}
}

// 0xE9). a2a-go alone decoded it to U+FFFD; the seam keeps the bytes, so
// the data the Outcome, the history, status --json, MCP results and the
// push webhook carry is not valid UTF-8, which JSON between systems must
// be (RFC 8259 §8.1): strict readers (serde_json, many webhook receivers)
// refuse the whole Outcome.
func TestBreakInvalidUTF8ReachesTheOutcome(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, "{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},\"artifacts\":[{\"artifactId\":\"a-1\",\"name\":\"claim_opened\",\"metadata\":{\"by\":\"Ren\xe9\"},\"parts\":[{\"data\":{\"customer\":\"Ren\xe9\"}}]}]}")
	}}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string]json.RawMessage{"part data": snap.Artifacts[0].Parts[0].Data, "artifact metadata": snap.Artifacts[0].Metadata} {
		if !utf8.Valid(raw) {
			t.Errorf("%s = %q: not UTF-8", name, raw)
		}
	}
}

// FindTaskByMessage asks for each task's last 20 messages: that is what it
// reads. A ListTasks answer over max_response_bytes (100 tasks x 20
// messages of a few kB each is past the default 8 MiB) is sent through
// skipHistory, which drops every "history" member: the task whose history
// holds our messageId is silently "not found" (nil error), and the
// workflow resends, making a second task.
func TestBreakListTasksOverTheBoundLosesTheHistoryItReads(t *testing.T) {
	const msgID = "m-ours"
	pad := strings.Repeat("x", 64<<10)
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		if m != "ListTasks" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		var tasks []string
		for i := range 30 {
			hist := fmt.Sprintf(`[{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"%s"}]}]`, i, pad)
			if i == 29 {
				hist = `[{"messageId":"` + msgID + `","role":"ROLE_USER","parts":[{"text":"hi"}]},{"messageId":"a","role":"ROLE_AGENT","parts":[{"text":"` + pad + `"}]}]`
			}
			tasks = append(tasks, fmt.Sprintf(`{"id":"t-%d","contextId":"c-%d","status":{"state":"TASK_STATE_WORKING"},"history":%s}`, i, i, hist))
		}
		rpcResult(w, `{"tasks":[`+strings.Join(tasks, ",")+`],"nextPageToken":"","pageSize":100,"totalSize":30}`)
	}}, "JSONRPC", "1.0")
	snap, found, err := c.FindTaskByMessage(context.Background(), msgID, time.Now().Add(-time.Hour))
	if err == nil && !found {
		t.Fatalf("FindTaskByMessage: not found, no error; the answer (about 2 MiB, bound 1 MiB) held task t-29 whose history has %s: the histories were skipped unread", msgID)
	}
	if found && snap.TaskID != "t-29" {
		t.Errorf("found %q, want t-29", snap.TaskID)
	}
}
