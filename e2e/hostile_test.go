package e2e

import (
	"github.com/a2aproject/a2a-go/v2/a2a"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// Hostile agents and racing operators: each case asserts the Outcome and
// the agent's own counts.

// A cancel that arrives while the first send is in flight: the send is
// abandoned at once, the task it created is found (ListTasks) and canceled
// at the agent, and the Outcome names it.
func TestHostileCancelDuringTheSend(t *testing.T) {
	release := make(chan struct{})
	e := setup(t, func(o *options) {
		o.proxy = func(agentURL string) http.Handler {
			return interceptRPC(agentURL, "SendMessage", func(w http.ResponseWriter, r *http.Request, _ []byte, forward http.Handler) {
				rec := httptest.NewRecorder()
				forward.ServeHTTP(rec, r)
				<-release // the agent has the message; its answer is held
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
			})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.agent.Update(func(c *a2a.AgentCard) { c.Capabilities.Streaming = false }) // the send held is SendMessage
	d := lostParcel("hostile-cancel-sending", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"slow"}`)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the send to reach the agent", 30*time.Second, func() (bool, string) {
		return e.agent.TaskCount() == 1, fmt.Sprint(e.agent.TaskCount())
	})
	if err := dclient.Get(e.c, d.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, string(contracts.PhaseSending))
	close(release)
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusCanceled || out.RemoteTaskID == "" {
		t.Fatalf("outcome = %s, task %q (%+v), want canceled naming the task the send created", out.Status, out.RemoteTaskID, out.Error)
	}
	c, err := a2aclient.Dial(ctx, contracts.Interface{URL: e.base + "/a2a/jsonrpc", Binding: "JSONRPC", Version: "1.0"}, a2aclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := c.GetTask(ctx, out.RemoteTaskID, "")
	if err != nil || snap.State != contracts.TaskStateCanceled {
		t.Errorf("the agent's task is %q (%v), want canceled", snap.State, err)
	}
	if n, m := e.agent.TaskCount(), e.agent.MessageCount(); n != 1 || m != 1 {
		t.Errorf("agent counts: %d tasks, %d messages; want 1 and 1", n, m)
	}
}

// A 100 MB reply is not read whole: protocol_error naming the limit, and
// the message is not sent again.
func TestHostileHugeReply(t *testing.T) {
	e := setup(t, func(o *options) {
		o.proxy = func(agentURL string) http.Handler {
			return interceptRPC(agentURL, "SendMessage", func(w http.ResponseWriter, r *http.Request, _ []byte, forward http.Handler) {
				forward.ServeHTTP(httptest.NewRecorder(), r) // the agent takes it
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t","contextId":"c","pad":"`))
				chunk := bytes.Repeat([]byte("x"), 1<<20)
				for range 100 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
				w.Write([]byte(`"}}}`))
			})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The agent answered 2xx, so it took the message: its outcome is
	// unknown (it ended protocol_error, leaving the task it created
	// unrecorded); the task it made is found by its messageId (ListTasks)
	// and followed, the message never sent again.
	e.agent.Update(func(c *a2a.AgentCard) { c.Capabilities.Streaming = false })
	d := lostParcel("hostile-huge-reply", e.base)
	if _, err := startRun(ctx, e.c, d); err != nil {
		t.Fatal(err)
	}
	st := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	if len(st.Sends) != 2 || st.Sends[0].Result != "unknown_outcome" || !strings.Contains(st.Sends[0].Error, "over the limit") ||
		st.Sends[1].Result != "adopted: found by ListTasks" || st.RemoteTaskID == "" {
		t.Fatalf("sends = %+v, want the unknown outcome saying the reply was over the limit, then the task found", st.Sends)
	}
	if m := e.agent.MessageCount(); m != 1 {
		t.Errorf("agent got %d messages, want 1 (never sent again)", m)
	}
}

// A reply whose artifact passes the content limits but not the encoded
// one (10,000 parts with metadata): the artifact is rejected too_large,
// the send is not repeated.
func TestHostileOversizedResult(t *testing.T) {
	parts := make([]map[string]any, 10000)
	for i := range parts {
		parts[i] = map[string]any{"text": "x", "metadata": map[string]any{"note": strings.Repeat("m", 300)}}
	}
	e := setup(t, func(o *options) {
		o.proxy = func(agentURL string) http.Handler {
			return interceptRPC(agentURL, "SendMessage", func(w http.ResponseWriter, r *http.Request, body []byte, forward http.Handler) {
				forward.ServeHTTP(httptest.NewRecorder(), r)
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(body, &req)
				reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"task": map[string]any{
					"id": "t-big", "contextId": "c-big", "status": map[string]any{"state": "TASK_STATE_COMPLETED"},
					"artifacts": []any{map[string]any{"artifactId": "a-1", "name": "claim_opened", "parts": parts}}}}})
				w.Header().Set("Content-Type", "application/json")
				w.Write(reply)
			})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.agent.Update(func(c *a2a.AgentCard) { c.Capabilities.Streaming = false }) // the reply is SendMessage's
	out := e.outcomeOf(t, ctx, lostParcel("hostile-oversized-result", e.base))
	if out.Status != contracts.StatusInvalidOutput || len(out.RejectedArtifacts) != 1 || !strings.HasPrefix(out.RejectedArtifacts[0].Reason, contracts.ReasonTooLarge) {
		t.Fatalf("outcome = %s %+v, want invalid_output with a1 too_large", out.Status, out.RejectedArtifacts)
	}
	if m := e.agent.MessageCount(); m != 1 {
		t.Errorf("agent got %d messages, want 1", m)
	}
}

// An answer over the limit is refused at once by the Update, naming the
// limit; the delegation still takes a good one.
func TestHostileHugeAnswer(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("hostile-huge-answer", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	_, err = dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: strings.Repeat("a", 2200<<10)})
	if err == nil || !strings.Contains(err.Error(), "65536") {
		t.Fatalf("2.2 MB answer: %v, want a refusal naming 65536", err)
	}
	e.answerAndFinish(t, ctx, d.LocalWorkflowID, run)
	if m := e.agent.MessageCount(); m != 2 {
		t.Errorf("agent got %d messages, want 2", m)
	}
}

// An agent whose streams send only comments: each stream is closed after
// Activities.StreamIdle and, after three in a row, the task is polled;
// never more than one stream is open for the delegation, none after it
// ends.
func TestHostileCommentOnlyStreams(t *testing.T) {
	var open, total, maxOpen, cancels atomic.Int32
	stub := httptest.NewUnstartedServer(nil)
	base := "http://" + stub.Listener.Addr().String()
	stub.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"streamer","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
				"capabilities":{"streaming":true},"defaultInputModes":["text/plain","application/json"],"defaultOutputModes":["application/json"],
				"skills":[{"id":"open-claim","name":"o","description":"d","tags":[]}]}`, base+"/rpc")
			return
		}
		var req struct {
			ID     string `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		state := "TASK_STATE_WORKING"
		switch req.Method {
		case "SubscribeToTask":
			n := open.Add(1)
			total.Add(1)
			for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
			}
			defer open.Add(-1)
			w.Header().Set("Content-Type", "text/event-stream")
			testutil.Trickle(w, r, ": nothing\n\n", 20*time.Millisecond, 2000)
			return
		case "CancelTask":
			cancels.Add(1)
			state = "TASK_STATE_CANCELED"
		}
		task := `{"id":"t-1","contextId":"c-1","status":{"state":"` + state + `"}}`
		if req.Method == "SendMessage" || req.Method == "SendStreamingMessage" {
			// A streamed send answered with one plain JSON reply: read as
			// its one event.
			task = `{"task":` + task + `}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":%s}`, req.ID, task)
	})
	stub.Start()
	t.Cleanup(stub.Close)
	e := setup(t, func(o *options) {
		o.acts = func(a *activities.Activities, _ string) { a.StreamIdle = 300 * time.Millisecond }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("hostile-comment-streams", base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three idle streams closed", time.Minute, func() (bool, string) {
		return total.Load() >= 3 && open.Load() == 0, fmt.Sprintf("total %d, open %d", total.Load(), open.Load())
	})
	if err := dclient.Get(e.c, d.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusCanceled || cancels.Load() != 1 {
		t.Errorf("outcome %s, agent cancels %d; want canceled and 1", out.Status, cancels.Load())
	}
	if m, o := maxOpen.Load(), open.Load(); m != 1 || o != 0 {
		t.Errorf("streams: at most %d open at once, %d open at the end; want 1 and 0", m, o)
	}
}
