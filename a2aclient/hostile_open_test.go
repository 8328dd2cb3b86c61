//go:build hostileopen

// Hostile agents whose attacks still succeed (a session's break-it run,
// 2026-12-01): each test fails today. Not built by make test; run with
// go test -tags hostileopen -run TestBreak ./a2aclient, fix, and move the
// test to hostile_agents_test.go.

package a2aclient

// Hostile and sloppy agents against the wire seam of "Lossless at the
// wire". Every test here fails because of a defect in delegate.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
)

// The same echo in a plain (non-stream) body is redacted, but the
// redaction re-encodes the whole body (wireBody): every data value of the
// reply, not only the one that held the secret, loses the text the agent
// wrote (key order, escapes, and duplicate keys).
func TestBreakSecretAnywhereRewritesAllData(t *testing.T) {
	const secret = "SECRET-ORIGIN-28001"
	const data = `{"z":1,"a":"\u00e9<b>","z2":7615917337495251231}`
	opts := Options{MaxResponseBytes: 1 << 20}.WithCredential(nil, Secret{Bearer: secret})
	c := dialStubWith(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		rpcResult(w, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"s","role":"ROLE_AGENT","parts":[{"text":"you sent `+r.Header.Get("Authorization")+`"}]}},"artifacts":[{"artifactId":"a-1","parts":[{"data":`+data+`}]}]}`)
	}}, "JSONRPC", "1.0", opts)
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(snap.StatusText, secret) {
		t.Fatalf("status text %q leaks", snap.StatusText)
	}
	if got := string(snap.Artifacts[0].Parts[0].Data); got != data {
		t.Errorf("artifact data (no secret in it) = %s, want %s as the agent wrote it (the secret was in the status text only)", got, data)
	}
}

// A long-lived subscription: each status update carries a text part with
// metadata (the a2a-js SDKs put it there) or a second data part. protect
// holds every part's metadata and data value; snapshotOf resolves (and so
// forgets) only the first data part of a status message. The rest stays in
// exactValues.vals for the life of the stream: memory grows with every
// event.
func TestBreakStreamHoldsWhatItNeverReads(t *testing.T) {
	const events = 400
	meta := `{"trace":"` + strings.Repeat("m", 100<<10) + `"}`
	release := make(chan struct{})
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		sseHeader(w)
		id := rpcID(w)
		for i := range events {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\",\"message\":{\"messageId\":\"s-%d\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"step %d\",\"metadata\":%s}]}}}}}\n\n", id, i, i, meta)
		}
		w.(http.Flusher).Flush()
		<-release
	}}, "JSONRPC", "1.0")
	t.Cleanup(func() { close(release) }) // before the server's Close (cleanups run last first)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for _, err := range c.SubscribeStates(ctx, "t-1") {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == events {
			// Every event has been yielded and nothing of it is needed
			// any more: what is still live is what the stream holds.
			runtime.GC()
			runtime.ReadMemStats(&during)
			break
		}
	}
	if grown := int64(during.HeapAlloc) - int64(before.HeapAlloc); grown > 10<<20 {
		t.Errorf("after %d status events (each with 100 kB of part metadata nobody reads) the heap holds %d MiB more: the stream keeps every held value", events, grown>>20)
	}
}

// A 3 MiB artifact-update event, well within a2a-go's own 10 MiB line
// bound, whose text part is HTML. protect re-encodes every event with a
// parts list through encoding/json, which escapes each <, > and & as
// \u003c (6 bytes), and puts a ~60-byte placeholder where each small data
// value was: the event it hands a2a-go is over 10 MiB, and the stream
// fails ("token too long").
func TestBreakProtectInflatesAnEventPastTheLineBound(t *testing.T) {
	html := strings.Repeat("<b>", 1<<20) // 3 MiB
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		sseHeader(w)
		id := rpcID(w)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"artifactUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"artifact\":{\"artifactId\":\"a-1\",\"name\":\"report\",\"parts\":[{\"text\":\"%s\",\"mediaType\":\"text/html\"}]},\"lastChunk\":true}}}\n\n", id, html)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n", id)
	}}, "JSONRPC", "1.0")
	var got []ArtifactChunk
	for ev, err := range c.SubscribeStates(context.Background(), "t-1") {
		if err != nil {
			t.Fatalf("SubscribeStates: %v (the agent's event was 3 MiB)", err)
		}
		if ev.Chunk != nil {
			got = append(got, *ev.Chunk)
		}
	}
	if len(got) != 1 || got[0].Artifact.Parts[0].Text != html {
		t.Fatalf("chunks: %d, want the 3 MiB HTML artifact", len(got))
	}
}

// An HTTP+JSON agent whose 200 task body carries a member named "error"
// (here false: "no error"; a2a-go ignores unknown members) is not
// protected at all: protect takes any top-level "error" that is not null
// for a JSON-RPC error, whatever the binding. Its numbers go through
// float64.
func TestBreakRESTTaskWithErrorMemberLosesNumbers(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, task10(`"error":false,`))
	}}, "HTTP+JSON", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, snap)
}

// A reply over the bound because of its history goes through skipHistory,
// which drops a "history" member at every depth outside data and metadata:
// inside a part of unknown kind too, which is meant to be "kept whole"
// (the Outcome's rejection then shows an altered part). The same reply
// under the bound keeps it.
func TestBreakSkipHistoryAltersAnUnknownPart(t *testing.T) {
	const part = `{"video":{"codec":"av1","history":[{"frame":1}]}}`
	hist := `"history":[{"messageId":"h","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("h", 2<<20) + `"}]}],`
	task := `{"id":"t-1","contextId":"c-1",` + hist + `"status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a-1","parts":[` + part + `]}]}`
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) { rpcResult(w, task) }}, "JSONRPC", "1.0")
	snap, err := c.GetTask(context.Background(), "t-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Artifacts) != 1 || len(snap.Artifacts[0].Parts) != 1 || string(snap.Artifacts[0].Parts[0].Data) != part {
		t.Fatalf("artifact = %+v, want the unknown part kept whole: %s", snap.Artifacts, part)
	}
}

// A streamed send whose event is a JSON-RPC response with "jsonrpc":
// "1.0": the same reply as a body is refused (JSON-RPC 2.0 §5,
// checkRPCResponse; docs/operations.md: protocol), as an SSE event it is
// taken, and its task adopted.
func TestBreakStreamEventWithJSONRPC10IsTaken(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		sseHeader(w)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"1.0\",\"id\":%s,\"result\":{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", rpcID(w))
	}}, "JSONRPC", "1.0")
	snap, err := c.SendStreaming(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	if err == nil {
		t.Errorf("SendStreaming: task %q taken from a response with \"jsonrpc\":\"1.0\"; want the protocol error a body gets", snap.TaskID)
	}
}

// A JSON-RPC error inside an SSE event (a2a-js sends its errors so):
// -32603 internal is transient by the table in docs/operations.md, and as a
// body it is; in an event the code is never recorded (eventStream drops
// normalizeBody's info), so the send ends unknown_outcome (and with
// ask_operator waits for an operator) on an error that said nothing was
// made.
func TestBreakStreamEventRPCErrorLosesItsCode(t *testing.T) {
	c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
		sseHeader(w)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32603,\"message\":\"model overloaded\"}}\n\n", rpcID(w))
	}}, "JSONRPC", "1.0")
	_, err := c.SendStreaming(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
	ce := callError(t, err)
	if ce.Category != contracts.CategoryTransient || !ce.HasCode || ce.Code != -32603 {
		t.Errorf("SendStreaming: %v (category %s, has code %v %d), want transient -32603 as for the same error in a body", err, ce.Category, ce.HasCode, ce.Code)
	}
}

// skipHistory "reads past [a history] without holding it": a history that
// is one 60 MiB string (under MaxSkippedBytes) is a single token, which
// json.Decoder.Token reads whole into its buffer and then copies into a Go
// string: one call allocates several times the 60 MiB it claims not to
// hold (against a response bound of 8 MiB), per concurrent call.
func TestBreakSkipHistoryHoldsAHistoryOfOneString(t *testing.T) {
	const n = 60 << 20
	in := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":"1","result":{"id":"t-1","contextId":"c-1","history":"`),
		&repeatReader{b: 'h', n: n}, strings.NewReader(`","status":{"state":"TASK_STATE_WORKING"}}}`))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, skipped, err := skipHistory(in, 8<<20, MaxSkippedBytes)
	runtime.ReadMemStats(&after)
	if err != nil || skipped < n {
		t.Fatalf("skipHistory: %s, %d, %v", out, skipped, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("skipping a 60 MiB history allocated %d MiB (the reply's bound is 8 MiB)", alloc>>20)
	}
}

// ListTasks lists every client's tasks: one sloppy message in another
// task's history (a part that is a bare string, parts that are a string)
// is outside what protect tolerates (it holds only parts that are
// objects), a2a-go fails the whole page, and the look for our task fails
// ("ListTasks failed"): the resend that follows makes a second task,
// though our task, with our messageId, was on the page.
func TestBreakOneSloppyTaskSpoilsListTasks(t *testing.T) {
	const msgID = "m-ours"
	for name, other := range map[string]string{
		"part a bare string": `[{"messageId":"x","role":"ROLE_USER","parts":["hello"]}]`,
		"parts a string":     `[{"messageId":"x","role":"ROLE_USER","parts":"hello"}]`,
		"message a string":   `["hello"]`,
	} {
		c := dialStub(t, stub{func(w http.ResponseWriter, r *http.Request, m string) {
			rpcResult(w, `{"tasks":[{"id":"t-other","contextId":"c-o","status":{"state":"TASK_STATE_COMPLETED"},"history":`+other+`},`+
				`{"id":"t-ours","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"`+msgID+`","role":"ROLE_USER","parts":[{"text":"hi"}]}]}],"nextPageToken":""}`)
		}}, "JSONRPC", "1.0")
		snap, found, err := c.FindTaskByMessage(context.Background(), msgID, time.Now().Add(-time.Hour))
		if err != nil || !found || snap.TaskID != "t-ours" {
			t.Errorf("%s in another task's history: found %v %q, %v; want t-ours", name, found, snap.TaskID, err)
		}
	}
}
