package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// Values an int64 id, a 30-digit decimal and numbers no double holds: a
// float64 round trip changes each.
const (
	exactData = `{"ledger_ref":7615917337495251231,"amount":123456789012345678901234567890.123456789,"tiny":-1.000000000000000000001E-300,"list":[9007199254740993,1.10],"s":"\u00e9<>"}`
	exactMeta = `{"output_kind":"claim_opened","seq":18446744073709551615}`
	exactPart = `{"m":12345678901234567890.5}`
)

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// task10 and task03 are a completed task in the 1.0 and the 0.3 JSON
// forms, its status data, artifact metadata, part data and part metadata
// holding exactData, exactMeta, exactPart.
func task10(extra string) string {
	return `{"id":"t-1","contextId":"c-1",` + extra + `"status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"s-1","role":"ROLE_AGENT","parts":[{"data":` + exactData + `}]}},` +
		`"artifacts":[{"artifactId":"a-1","name":"claim_opened","metadata":` + exactMeta + `,"parts":[{"data":` + exactData + `,"metadata":` + exactPart + `}]}]}`
}

func task03(extra string) string {
	return `{"kind":"task","id":"t-1","contextId":"c-1",` + extra + `"status":{"state":"completed","message":{"kind":"message","messageId":"s-1","role":"agent","parts":[{"kind":"data","data":` + exactData + `}]}},` +
		`"artifacts":[{"artifactId":"a-1","name":"claim_opened","metadata":` + exactMeta + `,"parts":[{"kind":"data","data":` + exactData + `,"metadata":` + exactPart + `}]}]}`
}

// task03proto is the task of task03 in the proto JSON form of A2A 0.3
// over HTTP+JSON (a message's parts in "content", a data part
// {"data": {"data": V}}).
func task03proto(extra string) string {
	return `{"id":"t-1","contextId":"c-1",` + extra + `"status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"s-1","role":"ROLE_AGENT","content":[{"data":{"data":` + exactData + `}}]}},` +
		`"artifacts":[{"artifactId":"a-1","name":"claim_opened","metadata":` + exactMeta + `,"parts":[{"data":{"data":` + exactData + `},"metadata":` + exactPart + `}]}]}`
}

func checkExact(t *testing.T, snap contracts.TaskSnapshot) {
	t.Helper()
	if snap.State != contracts.TaskStateCompleted || len(snap.Artifacts) != 1 || len(snap.Artifacts[0].Parts) != 1 {
		t.Fatalf("snapshot = %+v", snap)
	}
	a := snap.Artifacts[0]
	for name, got := range map[string]struct{ got, want string }{
		"status data":       {string(snap.StatusData), compact(t, exactData)},
		"artifact metadata": {string(a.Metadata), compact(t, exactMeta)},
		"part data":         {string(a.Parts[0].Data), compact(t, exactData)},
		"part metadata":     {string(a.Parts[0].Metadata), compact(t, exactPart)},
	} {
		if got.got != got.want {
			t.Errorf("%s = %s, want %s (as the agent wrote it)", name, got.got, got.want)
		}
	}
}

// Every number an agent sends reaches the snapshot with its own text, over
// both HTTP bindings at both versions, from GetTask, SendMessage and
// CancelTask (a2a-go alone decodes each through float64).
func TestAgentNumbersStayExact(t *testing.T) {
	for _, tc := range []struct {
		binding, version string
		task             string
		send             string // the SendMessage result
	}{
		{"JSONRPC", "1.0", task10(""), `{"task":` + task10("") + `}`},
		{"HTTP+JSON", "1.0", task10(""), `{"task":` + task10("") + `}`},
		{"JSONRPC", "0.3", task03(""), task03("")},
		{"HTTP+JSON", "0.3", task03proto(""), `{"task":` + task03proto("") + `}`},
	} {
		t.Run(tc.binding+"@"+tc.version, func(t *testing.T) {
			c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
				body := tc.task
				if strings.Contains(m, "send") || strings.Contains(m, "Send") {
					body = tc.send
				}
				if tc.binding == "JSONRPC" {
					rpcResult(w, body)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, body)
			}}, tc.binding, tc.version)
			snap, err := c.GetTask(context.Background(), "t-1", "")
			if err != nil {
				t.Fatal(err)
			}
			checkExact(t, snap)
			snap, err = c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			checkExact(t, snap)
			if snap.Warnings != nil {
				t.Errorf("warnings = %q, want none", snap.Warnings)
			}
		})
	}
}

// A streamed artifact keeps its numbers too.
func TestStreamedNumbersStayExact(t *testing.T) {
	art := `{"artifactId":"a-1","name":"claim_opened","metadata":` + exactMeta + `,"parts":[{"data":` + exactData + `,"metadata":` + exactPart + `}]}`
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		w.Header().Set("Content-Type", "text/event-stream")
		id := rpcID(w)
		fmt.Fprintf(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"artifactUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"artifact\":%s,\"lastChunk\":true}}}\n\n", id, art)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\",\"timestamp\":1733076000}}}}\n\n", id)
	}}, "JSONRPC", "1.0")
	var chunks []ArtifactChunk
	var states []contracts.TaskState
	for ev, err := range c.SubscribeStates(context.Background(), "t-1") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Chunk != nil {
			chunks = append(chunks, *ev.Chunk)
		}
		if ev.State != "" {
			states = append(states, ev.State)
		}
	}
	if len(chunks) != 1 || len(chunks[0].Artifact.Parts) != 1 {
		t.Fatalf("chunks = %+v", chunks)
	}
	if got := string(chunks[0].Artifact.Parts[0].Data); got != compact(t, exactData) {
		t.Errorf("streamed data = %s, want %s", got, compact(t, exactData))
	}
	if got := string(chunks[0].Artifact.Metadata); got != compact(t, exactMeta) {
		t.Errorf("streamed metadata = %s, want %s", got, compact(t, exactMeta))
	}
	// The epoch timestamp a2a-go cannot read does not end the stream.
	if len(states) != 1 || states[0] != contracts.TaskStateCompleted {
		t.Errorf("states = %v, want [completed]", states)
	}
}

// The contract's data reaches the agent with its own numbers, over every
// HTTP binding and version; over gRPC (protobuf doubles) a number a double
// cannot hold is refused before anything is sent, naming it.
func TestOutboundNumbersStayExact(t *testing.T) {
	data := `{"order_id":"A-1001","ledger_ref":7615917337495251231,"amount":0.1000000000000000000000000001}`
	for _, tc := range []struct{ binding, version string }{{"JSONRPC", "1.0"}, {"HTTP+JSON", "1.0"}, {"JSONRPC", "0.3"}, {"HTTP+JSON", "0.3"}} {
		t.Run(tc.binding+"@"+tc.version, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			c := dialStub(t, workingStub(tc.binding, tc.version, true, func(_ string, b []byte) {
				mu.Lock()
				got = b
				mu.Unlock()
			}), tc.binding, tc.version)
			if _, err := c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi", Data: json.RawMessage(data)}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, want := range []string{`7615917337495251231`, `0.1000000000000000000000000001`} {
				if !bytes.Contains(got, []byte(want)) {
					t.Errorf("request %s does not carry %s as written", got, want)
				}
			}
			// Over 0.3 HTTP+JSON historyLength is a proto3 int32 whose 0 is
			// the default, never written (a2apb/v0/pbjson): the history a
			// server sends anyway is skipped unread.
			if tc.binding+tc.version != "HTTP+JSON0.3" && !bytes.Contains(got, []byte(`"historyLength":0`)) {
				t.Errorf("request %s does not ask for historyLength 0 (A2A 1.0 §3.2.4)", got)
			}
		})
	}
	v, err := outboundData(json.RawMessage(`{"a":7615917337495251231}`), true)
	if err == nil || !strings.Contains(err.Error(), "message.data.a") || !strings.Contains(err.Error(), "7615917337495251231") {
		t.Errorf("gRPC, an int64 no double holds: %v, %v; want a refusal naming message.data.a", v, err)
	}
	v, err = outboundData(json.RawMessage(`{"a":[0.1,1e2,9007199254740992,-0]}`), true)
	if err != nil {
		t.Errorf("gRPC, numbers a double holds: %v", err)
	} else if b, _ := json.Marshal(v); string(b) != `{"a":[0.1,100,9007199254740992,-0]}` {
		t.Errorf("gRPC data = %s", b)
	}
}

// workingStub is an agent that answers every call with a working task in
// the form of binding and version (send: as a SendMessage result), and
// hands each request (its query and body) to seen.
func workingStub(binding, version string, send bool, seen func(query string, body []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen(r.URL.RawQuery, b)
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(b, &req)
		w.Header().Set("Content-Type", "application/json")
		task := fmt.Sprintf(task1, "TASK_STATE_WORKING")
		switch {
		case version == "0.3" && binding == "JSONRPC":
			task = `{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"working"}}`
		case send:
			task = `{"task":` + task + `}`
		}
		if binding == "JSONRPC" {
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+task+`}`)
			return
		}
		io.WriteString(w, task)
	})
}

// GetTask asks for no history on both versions (A2A 1.0 §3.2.4; 0.3
// §7.3 historyLength).
func TestGetTaskAsksForNoHistory(t *testing.T) {
	for _, tc := range []struct{ binding, version, want string }{
		{"JSONRPC", "1.0", `"historyLength":0`}, {"JSONRPC", "0.3", `"historyLength":0`},
		{"HTTP+JSON", "1.0", `historyLength=0`}, {"HTTP+JSON", "0.3", `historyLength=0`},
	} {
		var mu sync.Mutex
		var seen string
		c := dialStub(t, workingStub(tc.binding, tc.version, false, func(query string, b []byte) {
			mu.Lock()
			seen = query + " " + string(b)
			mu.Unlock()
		}), tc.binding, tc.version)
		if _, err := c.GetTask(context.Background(), "t-1", ""); err != nil {
			t.Fatalf("%s@%s: %v", tc.binding, tc.version, err)
		}
		mu.Lock()
		if !strings.Contains(seen, tc.want) {
			t.Errorf("%s@%s: GetTask sent %q, want %s", tc.binding, tc.version, seen, tc.want)
		}
		mu.Unlock()
	}
}

// Members delegate does not need that a2a-go cannot read are ignored with
// a warning, and the finished task is read whole: a status timestamp as an
// epoch number or in another layout, extensions as objects, metadata that
// is not an object, a history entry of an unknown part kind. A part of an
// unknown kind in an artifact is kept whole, as a part of kind "unknown"
// (the artifact is then rejected for it, never shortened).
func TestMembersNotNeededAreTolerated(t *testing.T) {
	for name, tc := range map[string]struct {
		version, task, warning string
	}{
		"epoch timestamp":              {"1.0", strings.Replace(task10(""), `"state":"TASK_STATE_COMPLETED"`, `"state":"TASK_STATE_COMPLETED","timestamp":1733076000`, 1), "status.timestamp 1733076000 is not an RFC 3339 time"},
		"timestamp with a space":       {"1.0", strings.Replace(task10(""), `"state":"TASK_STATE_COMPLETED"`, `"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-01 18:00:00"`, 1), `status.timestamp "2026-12-01 18:00:00" is not an RFC 3339 time`},
		"0.3 epoch timestamp":          {"0.3", strings.Replace(task03(""), `"state":"completed"`, `"state":"completed","timestamp":1733076000`, 1), "status.timestamp 1733076000"},
		"extensions as objects":        {"1.0", strings.Replace(task10(""), `"messageId":"s-1"`, `"messageId":"s-1","extensions":[{"uri":"x"}]`, 1), "extensions is not a list of strings"},
		"task metadata not an object":  {"1.0", task10(`"metadata":"oops",`), "metadata is not a JSON object"},
		"history with an unknown part": {"1.0", task10(`"history":[{"messageId":"h","role":"ROLE_USER","parts":[{"video":"x"}]}],`), ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, tc.task) }}, "JSONRPC", tc.version)
			snap, err := c.GetTask(context.Background(), "t-1", "")
			if err != nil {
				t.Fatalf("GetTask: %v, want the completed task read", err)
			}
			checkExact(t, snap)
			if tc.warning != "" && !strings.Contains(strings.Join(snap.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings = %q, want one saying %q", snap.Warnings, tc.warning)
			}
		})
	}
	unknown := strings.Replace(task10(""), `"parts":[{"data":`+exactData+`,"metadata"`, `"parts":[{"video":{"codec":"av1","frames":7615917337495251231}},{"data":`+exactData+`,"metadata"`, 1)
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, unknown) }}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Artifacts) != 1 || len(snap.Artifacts[0].Parts) != 2 || snap.Artifacts[0].Parts[0].Kind != contracts.PartUnknown ||
		string(snap.Artifacts[0].Parts[0].Data) != `{"video":{"codec":"av1","frames":7615917337495251231}}` {
		t.Fatalf("artifact = %+v, want the unknown part kept whole, then the data part", snap.Artifacts)
	}
	if !strings.Contains(strings.Join(snap.Warnings, "\n"), "artifacts[0].parts[0] is a part of no kind") {
		t.Errorf("warnings = %q", snap.Warnings)
	}
}

// A reply over the response bound only because of a history the client did
// not ask for is read past it; one over the bound in what it needs, or with
// more history than MaxSkippedBytes, is still refused unread.
func TestHistoryOverTheBoundIsSkipped(t *testing.T) {
	hist := func(n int) string {
		return `"history":[{"messageId":"h","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("h", n) + `"}]}],`
	}
	for name, tc := range map[string]struct {
		task string
		ok   bool
	}{
		"history over the bound":  {task10(hist(3 << 20)), true},
		"artifact over the bound": {strings.Replace(task10(""), `"name":"claim_opened"`, `"name":"claim_opened","pad":"`+strings.Repeat("p", 3<<20)+`"`, 1), false},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, tc.task) }}, "JSONRPC", "1.0", Options{MaxResponseBytes: 1 << 20})
			snap, err := c.GetTask(context.Background(), "t-1", "")
			if !tc.ok {
				if ce := callError(t, err); ce.Category != contracts.CategoryProtocol || !strings.Contains(err.Error(), "over the limit") {
					t.Errorf("GetTask: %v, want protocol, over the limit", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetTask: %v, want the task read past its history", err)
			}
			checkExact(t, snap)
			if !strings.Contains(strings.Join(snap.Warnings, "\n"), "history") {
				t.Errorf("warnings = %q, want one naming the skipped history", snap.Warnings)
			}
		})
	}
	// The report's case: a 9 MiB history past the default 8 MiB bound.
	c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, task10(hist(9<<20))) }}, "JSONRPC", "1.0", Options{})
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatalf("GetTask with a 9 MiB history at the default bound: %v", err)
	}
	checkExact(t, snap)
	out, skipped, err := skipHistory(strings.NewReader(`{"a":{"history":[1,2,3],"data":{"history":7615917337495251231}},"history":"x","b":[{"history":{}}],"c":1.50}`), 1<<10, 1<<10)
	if err != nil || string(out) != `{"a":{"data":{"history":7615917337495251231}},"b":[{}],"c":1.50}` || skipped == 0 {
		t.Errorf("skipHistory = %s, %d, %v", out, skipped, err)
	}
	if _, _, err := skipHistory(strings.NewReader(`{"history":"`+strings.Repeat("x", 5000)+`"}`), 100, 1000); err == nil {
		t.Error("skipHistory over maxSkip: no error")
	}
	// A long member outside a history is refused as it is read, not read
	// whole first.
	r := &countingReader{r: strings.NewReader(`{"pad":"` + strings.Repeat("p", 8<<20) + `"}`)}
	if _, _, err := skipHistory(r, 1<<20, 64<<20); !errors.Is(err, ErrResponseTooLarge) || r.n > 2<<20 {
		t.Errorf("skipHistory of an 8 MiB member past a 1 MiB limit: %v after reading %d bytes, want ErrResponseTooLarge within 2 MiB", err, r.n)
	}
}

// FuzzAgentDataStaysExact: any JSON value an agent sends as a data part
// (and any object as metadata) reaches the snapshot as the same JSON text,
// compacted: the same numbers, digit for digit.
func FuzzAgentDataStaysExact(f *testing.F) {
	for _, s := range []string{exactData, `7615917337495251231`, `[1e400,-0,0.1]`, `"x"`, `{"a":{"b":[1,{"c":2.50}]}}`, `true`, `123456789012345678901234567890.123456789012345678901234567890`} {
		f.Add(s, "1.0")
		f.Add(s, "0.3")
	}
	f.Fuzz(func(t *testing.T, value, version string) {
		if version != "1.0" && version != "0.3" {
			return
		}
		var probe any
		if !json.Valid([]byte(value)) || json.Unmarshal([]byte(value), &probe) != nil || probe == nil {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(value)); err != nil {
			return
		}
		if version == "0.3" && !strings.HasPrefix(want.String(), "{") {
			return // 0.3 data parts are objects (A2A 0.3 §6.5.2)
		}
		task := `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"data":` + value + `}]}]}`
		if version == "0.3" {
			task = `{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"data","data":` + value + `}]}]}`
		}
		x := newExactValues()
		body := x.protect([]byte(task))
		var snap contracts.TaskSnapshot
		if version == "1.0" {
			var tk a2a.Task
			if err := json.Unmarshal(body, &tk); err != nil {
				t.Fatalf("a2a-go cannot read the protected body %s: %v", body, err)
			}
			snap = snapshotOf(&tk, x, version)
		} else {
			c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, task) }}, "JSONRPC", "0.3")
			var err error
			if snap, err = c.GetTask(context.Background(), "t-1", ""); err != nil {
				t.Fatal(err)
			}
		}
		if len(snap.Artifacts) != 1 || len(snap.Artifacts[0].Parts) != 1 || string(snap.Artifacts[0].Parts[0].Data) != want.String() {
			t.Fatalf("data %s reached the snapshot as %+v", want.String(), snap.Artifacts)
		}
	})
}

// A 2xx reply GetTask cannot read is read again before the protocol error:
// garbled once, the task is read; garbled every time, the error says how
// often it was read.
func TestUnreadableReplyIsReadAgain(t *testing.T) {
	var calls atomic.Int32
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		if calls.Add(1) == 1 {
			rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":`)
			return
		}
		rpcResult(w, task10(""))
	}}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil || calls.Load() != 2 {
		t.Fatalf("GetTask: %v after %d calls, want the task on the second read", err, calls.Load())
	}
	checkExact(t, snap)
	calls.Store(0)
	c = dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		calls.Add(1)
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":"garbled"}`)
	}}, "JSONRPC", "1.0")
	_, err = c.GetTask(context.Background(), "t-1", "")
	if ce := callError(t, err); ce.Category != contracts.CategoryProtocol || calls.Load() != ReadAttempts || !strings.Contains(err.Error(), "read 3 times") {
		t.Errorf("GetTask: %v after %d calls, want protocol after %d reads", err, calls.Load(), ReadAttempts)
	}
}
