package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/testutil"
)

func agentServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = claimsagent.New(claimsagent.Config{BaseURL: "http://" + srv.Listener.Addr().String(), WorkDelay: 20 * time.Millisecond})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

var quiet = slog.New(slog.DiscardHandler)

func activityEnv(t *testing.T, a *Activities) *testsuite.TestActivityEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(quiet))
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	return env
}

func category(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestResolveSendWatch(t *testing.T) {
	base := agentServer(t)
	a := &Activities{PollInitial: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, Logger: quiet}
	env := activityEnv(t, a)

	v, err := env.ExecuteActivity(a.ResolveCard, contracts.ResolveCardInput{CardURL: base, Skill: "open-claim"})
	if err != nil {
		t.Fatalf("ResolveCard() error = %v", err)
	}
	var card contracts.ResolvedCard
	if err := v.Get(&card); err != nil {
		t.Fatal(err)
	}
	if card.Interface.Version != "1.0" || card.Interface.Binding != "JSONRPC" || !card.Streaming || card.Agent.CardDigest == "" {
		t.Fatalf("ResolveCard() = %+v", card)
	}

	v, err = env.ExecuteActivity(a.SendMessage, contracts.SendInput{Interface: card.Interface, Message: contracts.OutboundMessage{MessageID: "m-1", Text: "order A-5 lost"}})
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	var snap contracts.TaskSnapshot
	_ = v.Get(&snap)
	if snap.TaskID == "" {
		t.Fatalf("SendMessage() = %+v", snap)
	}
	// WatchTask returns only when the state differs from Since.
	since := snap.State
	for since != contracts.TaskStateInputRequired {
		v, err = env.ExecuteActivity(a.WatchTask, contracts.WatchInput{Interface: card.Interface, TaskID: snap.TaskID, Since: since})
		if err != nil {
			t.Fatalf("WatchTask() error = %v", err)
		}
		var next contracts.TaskSnapshot
		_ = v.Get(&next)
		if next.State == since {
			t.Fatalf("WatchTask(since %s) returned the same state", since)
		}
		since = next.State
	}

	_, err = env.ExecuteActivity(a.WatchTask, contracts.WatchInput{Interface: card.Interface, TaskID: "no-such-task", Since: "working"})
	if category(err) != string(contracts.CategoryProtocol) {
		t.Errorf("WatchTask(unknown task) error = %v, want category protocol", err)
	}
}

func TestResolveCardErrors(t *testing.T) {
	base := agentServer(t)
	a := &Activities{Logger: quiet}
	env := activityEnv(t, a)

	v, err := env.ExecuteActivity(a.ResolveCard, contracts.ResolveCardInput{CardURL: base, Skill: "refund"})
	if err != nil {
		t.Fatalf("missing skill: error = %v, want a result with SkillFound false", err)
	}
	var card contracts.ResolvedCard
	if err := v.Get(&card); err != nil || card.SkillFound || !card.Trusted() {
		t.Errorf("missing skill: %+v, %v", card, err)
	}
	_, err = env.ExecuteActivity(a.ResolveCard, contracts.ResolveCardInput{CardURL: "file:///etc/passwd", Skill: "open-claim"})
	var appErr *temporal.ApplicationError
	if category(err) != string(contracts.CategoryCard) || !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Errorf("bad card URL: error = %v, want non-retryable category card", err)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err = env.ExecuteActivity(a.ResolveCard, contracts.ResolveCardInput{CardURL: "http://" + addr, Skill: "open-claim"})
	if category(err) != string(contracts.CategoryTransient) {
		t.Errorf("unreachable card: error = %v, want category transient", err)
	}
}

// streamingStub answers GetTask with a WORKING task until the stream has
// been served, then with a COMPLETED task that keeps no artifacts, and
// serves SubscribeToTask as SSE: the task, artifact chunks, COMPLETED.
func streamingStub(t *testing.T, chunks ...string) string {
	t.Helper()
	var streamed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     string `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		state := "TASK_STATE_WORKING"
		if streamed.Load() {
			state = "TASK_STATE_COMPLETED"
		}
		task := `{"id":"t-1","contextId":"c-1","status":{"state":"` + state + `"}}`
		switch req.Method {
		case "SubscribeToTask":
			w.Header().Set("Content-Type", "text/event-stream")
			event := func(result string) {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%q,\"result\":%s}\n\n", req.ID, result)
			}
			event(`{"task":` + task + `}`)
			for _, c := range chunks {
				event(`{"artifactUpdate":` + c + `}`)
			}
			streamed.Store(true)
			event(`{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":%s}`, req.ID, task)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Artifact chunks streamed with append/lastChunk (A2A 1.0 §4.2.2) are
// assembled per artifactId when the task's own record has none; an append
// to an artifact never started is kept as a rejection.
func TestWatchAssemblesStreamedChunks(t *testing.T) {
	base := streamingStub(t,
		`{"taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a-1","name":"claim_opened","parts":[{"text":"Claim CLM-1 "}]}}`,
		`{"taskId":"t-1","contextId":"c-1","append":true,"lastChunk":true,"artifact":{"artifactId":"a-1","parts":[{"text":"opened."}]}}`,
		`{"taskId":"t-1","contextId":"c-1","append":true,"artifact":{"artifactId":"a-9","parts":[{"text":"stray"}]}}`,
	)
	a := &Activities{PollInitial: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, Logger: quiet}
	env := activityEnv(t, a)
	v, err := env.ExecuteActivity(a.WatchTask, contracts.WatchInput{Interface: contracts.Interface{URL: base, Binding: "JSONRPC", Version: "1.0"},
		TaskID: "t-1", Since: "working", Stream: true})
	if err != nil {
		t.Fatalf("WatchTask() error = %v", err)
	}
	var snap contracts.TaskSnapshot
	if err := v.Get(&snap); err != nil {
		t.Fatal(err)
	}
	if snap.State != contracts.TaskStateCompleted || len(snap.Artifacts) != 2 {
		t.Fatalf("snapshot = %+v, want completed with the assembled artifact and the stray chunk", snap)
	}
	d := contracts.Delegation{AllowedOutputs: []string{"claim_opened"}, WriteAuthority: "none"}
	outs, rej := contracts.ValidateArtifacts(d, snap.Artifacts)
	if len(outs) != 1 || outs[0].Text != "Claim CLM-1 opened." || len(rej) != 1 || !strings.HasPrefix(rej[0].Reason, contracts.ReasonOrphanChunk) {
		t.Errorf("outputs = %+v, rejected = %+v", outs, rej)
	}
}

// The contract's max_response_bytes bounds what is read from the agent
// before anything is decoded.
func TestContractLowersTheResponseLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":"1","result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"pad":%q}}`, strings.Repeat("x", 4096))
	}))
	t.Cleanup(srv.Close)
	a := &Activities{Logger: quiet}
	env := activityEnv(t, a)
	_, err := env.ExecuteActivity(a.GetTask, contracts.GetTaskInput{Interface: contracts.Interface{URL: srv.URL, Binding: "JSONRPC", Version: "1.0"},
		TaskID: "t-1", Limits: contracts.Limits{MaxResponseBytes: 1024}})
	if category(err) != string(contracts.CategoryProtocol) || !strings.Contains(err.Error(), "1024") {
		t.Errorf("GetTask over the contract's limit: %v, want protocol naming 1024", err)
	}
}

// A send the agent answered WORKING, whose settle read then trickles
// (headers at once, a byte every 100 ms, for ever), returns the send's own
// reply at the end of the settle window: the read hung the activity until
// its timeout, the reply was thrown away, and the message sent again.
func TestSettleReadThatHangsKeepsTheSend(t *testing.T) {
	var sends atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Method == "SendMessage" {
			sends.Add(1)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}}`, req.ID)
			return
		}
		w.WriteHeader(http.StatusOK)
		testutil.Trickle(w, r, " ", 100*time.Millisecond, -1)
	}))
	t.Cleanup(srv.Close)
	a := &Activities{Logger: quiet, SettleWindow: 200 * time.Millisecond}
	env := activityEnv(t, a)
	env.SetTestTimeout(20 * time.Second)
	start := time.Now()
	v, err := env.ExecuteActivity(a.SendMessage, contracts.SendInput{Interface: contracts.Interface{URL: srv.URL, Binding: "JSONRPC", Version: "1.0"},
		Message: contracts.OutboundMessage{MessageID: "m-1", Text: "hi"}})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	var snap contracts.TaskSnapshot
	if err := v.Get(&snap); err != nil {
		t.Fatal(err)
	}
	if snap.TaskID != "t-1" || snap.State != contracts.TaskStateWorking || sends.Load() != 1 {
		t.Errorf("snapshot %+v after %d sends, want task t-1 working from the one send", snap, sends.Load())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the send took %s, want the settle window and a grace second", d)
	}
}

// What an activity returns is bounded by its encoded size: an artifact of
// 10,000 parts with metadata passes the content limits but not the
// encoded one, and is withheld (then rejected too_large); the result fits.
func TestBoundByEncodedSize(t *testing.T) {
	parts := make([]contracts.Part, 10000)
	for i := range parts {
		parts[i] = contracts.Part{Kind: contracts.PartText, Text: "x", Metadata: json.RawMessage(`{"note":"` + strings.Repeat("m", 300) + `"}`)}
	}
	snap := contracts.TaskSnapshot{TaskID: "t-1", ContextID: "c-1", State: contracts.TaskStateCompleted, Artifacts: []contracts.Artifact{
		{ArtifactID: "big", Name: "claim_opened", Parts: parts},
		{ArtifactID: "small", Name: "claim_opened", Parts: []contracts.Part{{Kind: contracts.PartText, Text: "ok"}}},
	}}
	got := bound(snap, contracts.Limits{})
	b, _ := json.Marshal(got)
	if len(b) > MaxResultBytes {
		t.Fatalf("bounded result is %d bytes, want at most %d", len(b), MaxResultBytes)
	}
	if got.Artifacts[0].Withheld == "" || !strings.HasPrefix(got.Artifacts[0].Withheld, contracts.ReasonTooLarge) || got.Artifacts[1].Withheld != "" {
		t.Errorf("artifacts = %+v, want the big one withheld too_large and the small one kept", got.Artifacts)
	}
}

// Whatever the agent sends, the result fits: 60,000 empty artifacts (each
// small, so no artifact is over a limit) were one withheld entry each,
// 10.7 MB, and the activity failed with the task it had created unrecorded;
// so did 40 artifacts with 100 KB ids, and a 3 MB status message id.
func TestBoundHostileShapes(t *testing.T) {
	many := make([]contracts.Artifact, 60000)
	for i := range many {
		many[i] = contracts.Artifact{ArtifactID: fmt.Sprintf("x%06d", i), Parts: []contracts.Part{}}
	}
	longIDs := make([]contracts.Artifact, 40)
	for i := range longIDs {
		longIDs[i] = contracts.Artifact{ArtifactID: fmt.Sprintf("%d-%s", i, strings.Repeat("i", 100_000)), Name: "claim_opened",
			Parts: []contracts.Part{{Kind: contracts.PartText, Text: "ok"}}}
	}
	for name, snap := range map[string]contracts.TaskSnapshot{
		"many artifacts": {TaskID: "t-1", State: contracts.TaskStateCompleted, Artifacts: many},
		"long ids":       {TaskID: "t-1", State: contracts.TaskStateCompleted, Artifacts: longIDs},
		"long message id": {TaskID: "t-1", State: contracts.TaskStateInputRequired, StatusMessageID: strings.Repeat("m", 3<<20),
			StatusKey: "msg:" + strings.Repeat("m", 3<<20)},
	} {
		got := bound(snap, contracts.Limits{})
		b, _ := json.Marshal(got)
		if len(b) > MaxResultBytes {
			t.Errorf("%s: bounded result is %d bytes, want at most %d", name, len(b), MaxResultBytes)
		}
		if got.TaskID != "t-1" {
			t.Errorf("%s: task id %q, want it kept", name, got.TaskID)
		}
	}
	got := bound(contracts.TaskSnapshot{TaskID: "t-1", Artifacts: many}, contracts.Limits{})
	last := got.Artifacts[len(got.Artifacts)-1]
	if len(got.Artifacts) != 65 || !strings.Contains(last.Withheld, "(59936 more artifacts, not listed)") || last.SHA256 == "" {
		t.Errorf("60,000 artifacts: %d entries, last %+v; want 32 kept, 32 listed withheld and one for the rest", len(got.Artifacts), last)
	}
}

// A stream that sends only comments is closed after Activities.StreamIdle
// and the task is read instead; the connection does not stay open.
func TestCommentOnlyStreamIsLetGo(t *testing.T) {
	var streams, closed, byClient, gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     string `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Method == "SubscribeToTask" {
			streams.Add(1)
			defer closed.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 200; i++ {
				if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					byClient.Add(1)
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			return
		}
		state := "TASK_STATE_WORKING"
		if gets.Add(1) > 1 {
			state = "TASK_STATE_COMPLETED"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"id":"t-1","contextId":"c-1","status":{"state":%q}}}`, req.ID, state)
	}))
	t.Cleanup(srv.Close)
	a := &Activities{PollInitial: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, Logger: quiet, StreamIdle: 300 * time.Millisecond}
	env := activityEnv(t, a)
	v, err := env.ExecuteActivity(a.WatchTask, contracts.WatchInput{Interface: contracts.Interface{URL: srv.URL, Binding: "JSONRPC", Version: "1.0"},
		TaskID: "t-1", Since: "working", Stream: true})
	if err != nil {
		t.Fatalf("WatchTask() error = %v", err)
	}
	var snap contracts.TaskSnapshot
	_ = v.Get(&snap)
	if snap.State != contracts.TaskStateCompleted {
		t.Fatalf("state = %q, want completed", snap.State)
	}
	deadline := time.Now().Add(5 * time.Second)
	for closed.Load() < streams.Load() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if closed.Load() != streams.Load() || byClient.Load() != streams.Load() {
		t.Errorf("%d streams: %d closed, %d of them by the client; want every idle stream closed by the client", streams.Load(), closed.Load(), byClient.Load())
	}
}

// A send that finishes within the heartbeat interval records no heartbeat:
// the SDK sends a first heartbeat synchronously (a server write), so one
// at the start cost every send a round trip. A longer call still does.
func TestHeartbeatOnlyWhenTheCallIsLong(t *testing.T) {
	base := agentServer(t)
	a := &Activities{PollInitial: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, Logger: quiet}
	env := activityEnv(t, a)
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	v, err := env.ExecuteActivity(a.ResolveCard, contracts.ResolveCardInput{CardURL: base, Skill: "open-claim"})
	if err != nil {
		t.Fatal(err)
	}
	var card contracts.ResolvedCard
	if err := v.Get(&card); err != nil {
		t.Fatal(err)
	}
	if _, err := env.ExecuteActivity(a.SendMessage, contracts.SendInput{Interface: card.Interface, Message: contracts.OutboundMessage{MessageID: "m-hb", Text: "order A-5 lost"}}); err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	if n := beats.Load(); n != 0 {
		t.Fatalf("a send within the interval recorded %d heartbeats, want 0", n)
	}

	long := func(ctx context.Context) error {
		stop := keepHeartbeating(ctx, 5*time.Millisecond)
		defer stop()
		deadline := time.Now().Add(10 * time.Second)
		for beats.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	env.RegisterActivityWithOptions(long, activity.RegisterOptions{Name: "long"})
	if _, err := env.ExecuteActivity("long"); err != nil {
		t.Fatal(err)
	}
	if beats.Load() == 0 {
		t.Fatal("a call longer than the interval recorded no heartbeat")
	}
}

// streamingAgent serves JSON-RPC: SendStreamingMessage answers with the
// task WORKING (with submitted: SUBMITTED, then a status update WORKING),
// then, after done (0: never), a status update COMPLETED, and keeps the
// stream open until the client closes it; GetTask reads the task (with its
// artifact once done). It counts the GetTask calls.
func streamingAgent(t *testing.T, done time.Duration, submitted bool) (string, *atomic.Int32) {
	t.Helper()
	var gets atomic.Int32
	var completedAt atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Method {
		case "SendStreamingMessage":
			w.Header().Set("Content-Type", "text/event-stream")
			if submitted {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\"}}}}\n\n", req.ID)
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", req.ID)
			} else {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":{\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", req.ID)
			}
			w.(http.Flusher).Flush()
			if done > 0 {
				select {
				case <-time.After(done):
				case <-r.Context().Done():
					return
				}
				completedAt.Store(time.Now().UnixNano())
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"statusUpdate\":{\"taskId\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n", req.ID)
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
		case "GetTask":
			gets.Add(1)
			w.Header().Set("Content-Type", "application/json")
			if completedAt.Load() == 0 {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`, req.ID)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a-1","name":"claim_opened","parts":[{"data":{"claim_id":1.50}}]}]}}`, req.ID)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &gets
}

// streamSend runs SendMessage by stream (the card declares streaming) to
// the agent at url and returns the snapshot.
func streamSend(t *testing.T, a *Activities, url, msgID string) contracts.TaskSnapshot {
	t.Helper()
	env := activityEnv(t, a)
	v, err := env.ExecuteActivity(a.SendMessage, contracts.SendInput{Interface: contracts.Interface{URL: url, Binding: "JSONRPC", Version: "1.0"},
		Message: contracts.OutboundMessage{MessageID: msgID, Text: "hi"}, Stream: true})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	var snap contracts.TaskSnapshot
	if err := v.Get(&snap); err != nil {
		t.Fatal(err)
	}
	return snap
}

// A streamed send is watched for the settle window: the status update that
// completes the task is read at once, by one GetTask, with its artifact.
// (The settle reads used to poll at 2, 6, 14, 30 ms ... while the stream
// had already said when: four reads or more of a task still working.)
func TestStreamedSendReadsTheTaskWhenTheStreamSaysItEnded(t *testing.T) {
	url, gets := streamingAgent(t, 60*time.Millisecond, false)
	a := &Activities{Logger: quiet, SettleWindow: 2 * time.Second}
	snap := streamSend(t, a, url, "m-1")
	if snap.State != contracts.TaskStateCompleted || len(snap.Artifacts) != 1 || !strings.Contains(string(snap.Artifacts[0].Parts[0].Data), "1.50") {
		t.Errorf("snapshot %+v, want the completed task with its artifact, its number as sent", snap)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("%d GetTask reads, want 1 (after the stream's COMPLETED)", n)
	}
}

// A stream that says nothing more within the settle window is closed at
// its end, and the task is left to the waiting reads: no GetTask guesses.
// One whose task moved on (submitted, then working) is read once at the
// window's end, so that the state recorded is the one the stream last
// reported (list --state working finds it).
func TestStreamedSendQuietForTheWindow(t *testing.T) {
	url, gets := streamingAgent(t, 0, false)
	a := &Activities{Logger: quiet, SettleWindow: 150 * time.Millisecond}
	snap := streamSend(t, a, url, "m-1")
	if snap.TaskID != "t-1" || snap.State != contracts.TaskStateWorking {
		t.Errorf("snapshot %+v, want task t-1 working", snap)
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("%d GetTask reads, want none (the stream was watched for the window)", n)
	}

	url, gets = streamingAgent(t, 0, true)
	snap = streamSend(t, a, url, "m-2")
	if snap.TaskID != "t-1" || snap.State != contracts.TaskStateWorking || gets.Load() != 1 {
		t.Errorf("snapshot %+v after %d reads, want task t-1 working after 1 (the stream said submitted, then working)", snap, gets.Load())
	}
}

// FindTask whose card the agent's host does not answer (the send never said
// which interface it used, and the agent is down): a transient error, so
// that the look is tried again while the agent is away; before, the look
// was given up at once ("resolving the card: ...").
func TestFindTaskRetriesACardTheAgentDidNotServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	a := &Activities{Logger: quiet}
	env := activityEnv(t, a)
	_, err = env.ExecuteActivity(a.FindTask, contracts.FindTaskInput{MessageID: "m-1", Card: contracts.ResolveCardInput{CardURL: down, Skill: "open-claim"}})
	if category(err) != string(contracts.CategoryTransient) {
		t.Errorf("FindTask with the agent down: %v, want a transient error (retried)", err)
	}
}
