package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// faultProxy forwards to the agent and lets a test decide, per JSON-RPC
// SendMessage or SendStreamingMessage call (counted from 1; a first
// message to an agent that streams goes by the latter), what happens: "pass", "503" (refused
// before the agent sees it) or "hang" (forwarded, so the agent commits,
// but the answer is held until the client gives up).
type faultProxy struct {
	decide func(n int) string
	sends  atomic.Int64
	stop   chan struct{}
	once   sync.Once
}

func newFaultProxy(decide func(int) string) *faultProxy {
	return &faultProxy{decide: decide, stop: make(chan struct{})}
}

func (p *faultProxy) close() { p.once.Do(func() { close(p.stop) }) }

func (p *faultProxy) handler(agentURL string) http.Handler {
	return interceptRPCs(agentURL, []string{"SendMessage", "SendStreamingMessage"}, func(w http.ResponseWriter, r *http.Request, _ []byte, forward http.Handler) {
		switch p.decide(int(p.sends.Add(1))) {
		case "503":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case "hang":
			// The agent gets the message and commits; its answer is
			// dropped; the client sees nothing until it gives up.
			rec := &discard{header: http.Header{}}
			forward.ServeHTTP(rec, r.Clone(context.WithoutCancel(r.Context())))
			select {
			case <-r.Context().Done():
			case <-p.stop:
			}
		default:
			forward.ServeHTTP(w, r)
		}
	})
}

// interceptRPC forwards every request to the agent, except JSON-RPC calls
// of method, which go to h (with the body read and restored, and the
// forwarding handler).
func interceptRPC(agentURL, method string, h func(w http.ResponseWriter, r *http.Request, body []byte, forward http.Handler)) http.Handler {
	return interceptRPCs(agentURL, []string{method}, h)
}

// interceptRPCs is interceptRPC for any of methods.
func interceptRPCs(agentURL string, methods []string, h func(w http.ResponseWriter, r *http.Request, body []byte, forward http.Handler)) http.Handler {
	target, _ := url.Parse(agentURL)
	forward := httputil.NewSingleHostReverseProxy(target)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var rpc struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &rpc)
		if !slices.Contains(methods, rpc.Method) {
			forward.ServeHTTP(w, r)
			return
		}
		h(w, r, body, forward)
	})
}

// withoutListTasks makes next an agent that serves no ListTasks while
// refuse says so: its JSON-RPC ListTasks is answered "method not found".
func withoutListTasks(next http.Handler, refuse func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Method != "ListTasks" || !refuse() {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, req.ID)
	})
}

type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

func stateOf(t *testing.T, ctx context.Context, c client.Client, id string) contracts.State {
	t.Helper()
	s, err := dclient.Get(c, id).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitA2AState(t *testing.T, ctx context.Context, c client.Client, id, want string) contracts.State {
	t.Helper()
	var s contracts.State
	waitFor(t, want, 60*time.Second, func() (bool, string) {
		var err error
		s, err = dclient.Get(c, id).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.A2AState == want, s.A2AState
	})
	return s
}

// Fault: the remote answers 503 three times, then succeeds: the send is
// retried (nothing was processed), completed, attempts recorded.
func TestFault503ThenSuccess(t *testing.T) {
	p := newFaultProxy(func(n int) string {
		if n <= 3 {
			return "503"
		}
		return "pass"
	})
	e := setup(t, func(o *options) { o.proxy = p.handler })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("fault-503", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"instant"}`)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %+v, %v; want completed", out, err)
	}
	s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
	if len(s.Sends) != 1 || s.Sends[0].Attempts != 4 || s.Sends[0].Result != "sent" {
		t.Errorf("sends = %+v, want one send on attempt 4", s.Sends)
	}
	if e.agent.TaskCount() != 1 {
		t.Errorf("task count = %d, want 1", e.agent.TaskCount())
	}
}

// Fault: the agent takes the first message (the task is made) and its
// answer never comes (send timeout 1 s): the outcome is unknown. The task
// the send made is looked for by its messageId (A2A 1.0 ListTasks) and
// adopted: never sent again, one task. An agent that serves no ListTasks
// leaves it to an operator: resolve-unknown "resend" gets the same task
// (same messageId, the agent deduplicates).
func TestFaultAcceptedNeverAnswered(t *testing.T) {
	for _, listTasks := range []bool{true, false} {
		name := map[bool]string{true: "the task found by ListTasks", false: "no ListTasks: an operator resends"}[listTasks]
		t.Run(name, func(t *testing.T) {
			p := newFaultProxy(func(n int) string {
				if n == 1 {
					return "hang"
				}
				return "pass"
			})
			defer p.close()
			e := setup(t, func(o *options) {
				o.proxy = func(agentURL string) http.Handler {
					return withoutListTasks(p.handler(agentURL), func() bool { return !listTasks })
				}
				o.acts = func(a *activities.Activities, _ string) { a.SendTimeout = time.Second }
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d := lostParcel("fault-hang", e.base)
			run, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			if listTasks {
				s := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
				if len(s.Sends) != 2 || s.Sends[0].Result != "unknown_outcome" || s.Sends[1].Result != "adopted: found by ListTasks" {
					t.Fatalf("sends = %+v, want the unknown outcome, then the task found", s.Sends)
				}
				e.answerAndFinish(t, ctx, d.LocalWorkflowID, run)
				if n := e.agent.TaskCount(); n != 1 {
					t.Errorf("agent task count = %d, want 1", n)
				}
				return
			}
			s := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, string(contracts.PhaseUnknownOutcome))
			if s.Unknown == nil || s.Unknown.MessageID != s.Sends[0].MessageID || s.Sends[0].Result != "unknown_outcome" ||
				len(s.Sends) != 2 || s.Sends[1].Result != "not found: the agent serves no ListTasks" {
				t.Fatalf("state = %+v / %+v", s.Unknown, s.Sends)
			}
			if e.agent.TaskCount() != 1 {
				t.Fatalf("the agent should hold the task the lost answer was about; count %d", e.agent.TaskCount())
			}
			h, err := e.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: d.LocalWorkflowID, UpdateName: contracts.ResolveUnknown,
				Args: []any{contracts.Resolution{Action: contracts.ActionResend}}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				err = h.Get(ctx, nil)
			}
			if err != nil {
				t.Fatalf("resolve-unknown: %v", err)
			}
			e.answerAndFinish(t, ctx, d.LocalWorkflowID, run)
			if n := e.agent.TaskCount(); n != 1 {
				t.Errorf("agent task count = %d, want 1", n)
			}
		})
	}
}

// Fault: cancel while the remote keeps working: cancel_unconfirmed, and
// the COMPLETED that comes later is under late_results, not outputs.
// cancelWhenWorking starts d, cancels it (package client) once it is
// working, and returns its Outcome.
func cancelWhenWorking(t *testing.T, ctx context.Context, e *env, d contracts.Delegation) contracts.Outcome {
	t.Helper()
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "working")
	if err := dclient.Get(e.c, d.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "customer called back"); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFaultCancelWhileRemoteKeepsWorking(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("fault-stubborn", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"stubborn"}`)
	out := cancelWhenWorking(t, ctx, e, d)
	if out.Status != contracts.StatusCancelUnconfirmed || len(out.Outputs) != 0 || len(out.LateResults) != 1 ||
		out.LateResults[0].Name != claimsagent.ArtifactKind {
		t.Fatalf("outcome = %+v, want cancel_unconfirmed with one late result and no output", out)
	}
	if !strings.Contains(out.Error.Message, "(reason: customer called back)") {
		t.Errorf("error = %q, want the cancel's reason", out.Error.Message)
	}
}

// Fault: the policy is revoked while the delegation waits for input: no
// follow-up is sent, authorization_denied.
func TestFaultPolicyRevokedWhileWaiting(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"allowed_skills": ["open-claim"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(o *options) {
		o.acts = func(a *activities.Activities, _ string) { a.Policy = &activities.PolicyFile{Path: policy} }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("fault-revoked", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	messages := e.agent.MessageCount()
	if err := os.WriteFile(policy, []byte(`{"allowed_skills": ["open-claim"], "revoked_local_workflow_ids": ["fault-revoked"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo"}); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != contracts.StatusAuthorizationDenied || !strings.Contains(out.Error.Message, "revoked") {
		t.Fatalf("outcome = %+v, want authorization_denied", out)
	}
	if n := e.agent.MessageCount(); n != messages {
		t.Errorf("the agent got %d message(s) after the revocation, want none", n-messages)
	}
	s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
	if s.A2AState != "canceled" {
		t.Errorf("remote state = %s, want canceled (the remote task is canceled on denial)", s.A2AState)
	}
}

// Fault: the bearer token travels to the agent but appears nowhere in the
// workflow history (exported as JSON) nor in the worker's logs; without it
// the agent answers 401 and the delegation ends authorization_denied.
func TestFaultBearerTokenNeverInHistoryOrLogs(t *testing.T) {
	const token = "s3cr3t-T0KEN-do-not-leak"
	var logs bytes.Buffer
	var mu sync.Mutex
	e := setup(t, func(o *options) {
		o.agent.RequireBearer = token
		o.acts = func(a *activities.Activities, base string) {
			a.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
			a.Credentials = credentialsFile(t, base, token)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("fault-token", e.base)
	e.answeredOnce(t, ctx, d)
	history := exportHistory(t, ctx, e.c, d.LocalWorkflowID)
	if len(history) < 1000 || !strings.Contains(history, "claim_opened") {
		t.Fatalf("history export looks empty (%d bytes)", len(history))
	}
	if strings.Contains(history, token) {
		t.Errorf("the bearer token is in the workflow history")
	}
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if logged == "" || strings.Contains(logged, token) {
		t.Errorf("worker logs (%d bytes) are empty or carry the token", len(logged))
	}

	// Without the credential: 401, authorization_denied, not retried.
	e2 := setup(t, func(o *options) { o.agent.RequireBearer = token })
	d2 := lostParcel("fault-no-token", e2.base)
	run, err := startRun(ctx, e2.c, d2)
	if err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusAuthorizationDenied {
		t.Fatalf("without token: outcome = %+v, %v; want authorization_denied", out, err)
	}
	// The refusal says what to fix: no credential went, none is held for
	// the interface's origin.
	if out.Error == nil || !strings.Contains(out.Error.Message, "the worker sent no credential") || !strings.Contains(out.Error.Message, "no entry for origin "+e2.base) {
		t.Errorf("without token: error = %+v, want it to say no credential went for %s", out.Error, e2.base)
	}
	if n := e2.agent.Unauthorized.Load(); n != 1 {
		t.Errorf("401s = %d, want 1 (not retried)", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// credentialsFile writes a credential store with token for the agent's
// origin and loads it as the worker does.
func credentialsFile(t *testing.T, base, token string) *a2aclient.Credentials {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials.json")
	doc, _ := json.Marshal(map[string]any{"origins": map[string]any{base: map[string]string{"bearer": token}}})
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func exportHistory(t *testing.T, ctx context.Context, c client.Client, id string) string {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var b strings.Builder
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		j, _ := protojson.Marshal(ev)
		b.Write(j)
		b.WriteByte('\n')
		// Payloads are base64 in protojson: decode every "data" too.
		var v any
		_ = json.Unmarshal(j, &v)
		appendPayloads(&b, v)
	}
	return b.String()
}

func appendPayloads(b *strings.Builder, v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && k == "data" {
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					b.Write(raw)
					b.WriteByte('\n')
				}
			}
			appendPayloads(b, x)
		}
	case []any:
		for _, x := range t {
			appendPayloads(b, x)
		}
	}
}

// streamCutter forwards to the agent and cuts every SubscribeToTask stream
// after its first event.
func streamCutter(cuts *atomic.Int64) func(string) http.Handler {
	return func(agentURL string) http.Handler {
		return interceptRPC(agentURL, "SubscribeToTask", func(w http.ResponseWriter, r *http.Request, body []byte, _ http.Handler) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, agentURL+r.URL.Path, bytes.NewReader(body))
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			var first bytes.Buffer
			buf := make([]byte, 1)
			for !bytes.HasSuffix(first.Bytes(), []byte("\n\n")) {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
				first.Write(buf)
			}
			_, _ = w.Write(first.Bytes())
			w.(http.Flusher).Flush()
			cuts.Add(1) // the stream ends here, mid-task
		})
	}
}

// Fault: the stream drops mid-task: no state change is lost.
func TestFaultStreamDropsMidTask(t *testing.T) {
	var cuts atomic.Int64
	e := setup(t, func(o *options) {
		o.proxy = streamCutter(&cuts)
		o.agent.WorkDelay = 400 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("fault-stream", e.base)
	e.answeredOnce(t, ctx, d)
	if cuts.Load() == 0 {
		t.Fatalf("no stream was followed and cut: the test did not exercise streaming")
	}
	s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
	var seq []string
	for _, tr := range s.Transitions {
		seq = append(seq, tr.State)
	}
	if !strings.Contains(strings.Join(seq, ","), "input-required,sending,working,completed") {
		t.Errorf("transitions = %v, want input-required, sending, working, completed in order", seq)
	}
}

// Fault: the worker process is killed right after the remote committed a
// send (before the answer reached it); a new worker retries the send with
// the same messageId and finishes the delegation; the agent holds exactly
// one task for it.
func TestFaultWorkerKilledAfterCommit(t *testing.T) {
	var child *exec.Cmd
	killed := make(chan struct{})
	var once sync.Once
	e := setup(t, func(o *options) {
		o.noWorker = true
		o.agent.OnCommit = func(string) {
			once.Do(func() {
				_ = child.Process.Kill() // SIGKILL: no cleanup, no answer
				_, _ = child.Process.Wait()
				close(killed)
			})
		}
	})
	child = exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childWorkerEnv+"="+e.srv.FrontendAddr())
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill() })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("fault-killed", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-killed:
	case <-ctx.Done():
		t.Fatal("the agent never committed a send")
	}
	e.startWorker()
	e.answerAndFinish(t, ctx, d.LocalWorkflowID, run)
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("agent task count = %d, want exactly 1", n)
	}
	s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
	if len(s.Sends) < 1 || s.Sends[0].Attempts < 2 {
		t.Errorf("sends = %+v, want the first send completed on a retry", s.Sends)
	}
}

// AUTH_REQUIRED: the operator answers with a credential reference; the
// worker's store supplies the secret for the follow-up; the secret never
// enters history.
func TestAuthRequiredAnsweredWithACredentialRef(t *testing.T) {
	const secret = "ref-s3cret-never-in-history"
	const otherSecret = "other-agents-s3cret"
	var mu sync.Mutex
	var seen []string // Authorization headers that reached the agent
	e := setup(t, func(o *options) {
		o.agent.AuthToken = secret
		o.proxy = func(agentURL string) http.Handler {
			target, _ := url.Parse(agentURL)
			forward := httputil.NewSingleHostReverseProxy(target)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if h := r.Header.Get("Authorization"); h != "" {
					mu.Lock()
					seen = append(seen, h)
					mu.Unlock()
				}
				forward.ServeHTTP(w, r)
			})
		}
		o.acts = func(a *activities.Activities, base string) {
			a.Credentials = &a2aclient.Credentials{Refs: map[string]a2aclient.Ref{
				"claims-prod": {Secret: a2aclient.Secret{Bearer: secret}, Origins: []string{base}},
				// Another agent's credential: an agent on this origin must
				// never receive it, whoever names it.
				"other-agent": {Secret: a2aclient.Secret{Bearer: otherSecret}, Origins: []string{"https://other.example"}},
			}}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("auth-1", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"auth"}`)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "auth-required")
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "here is the token: " + secret}); err == nil {
		t.Fatalf("an answer without credential_ref to AUTH_REQUIRED was accepted")
	}
	// A ref bound to another origin, and one the worker does not hold, are
	// refused by the Update itself (the caller gets the error, naming the
	// ref and why), before anything is sent; the question stays pending.
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{CredentialRef: "other-agent", AnsweredBy: "ops"}); err == nil ||
		!strings.Contains(err.Error(), "credential_ref other-agent may not be sent to this agent") || !strings.Contains(err.Error(), "https://other.example") {
		t.Fatalf("Answer with a ref bound to another origin: %v, want it refused naming the ref and its origins", err)
	}
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{CredentialRef: "nope", AnsweredBy: "ops"}); err == nil ||
		!strings.Contains(err.Error(), "credential_ref nope is not in the worker's credential store") {
		t.Fatalf("Answer with an unknown ref: %v, want it refused naming the ref", err)
	}
	if s := stateOf(t, ctx, e.c, d.LocalWorkflowID); len(s.Answers) != 0 || s.Question == nil {
		t.Fatalf("after two refused answers: answers %+v, question %+v; want none recorded, the question pending", s.Answers, s.Question)
	}
	mu.Lock()
	for _, h := range seen {
		if strings.Contains(h, otherSecret) {
			t.Fatalf("the agent received another agent's credential")
		}
	}
	mu.Unlock()
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{CredentialRef: "claims-prod", AnsweredBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithTimeout(ctx, 20*time.Second)
	defer gcancel()
	if err := run.Get(gctx, nil); err != nil {
		s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
		b, _ := json.MarshalIndent(s, "", " ")
		t.Fatalf("not done: %v\n%s", err, b)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	h := exportHistory(t, ctx, e.c, d.LocalWorkflowID)
	if strings.Contains(h, secret) || strings.Contains(h, otherSecret) {
		t.Errorf("a secret is in the history")
	}
}

// answeredOnce starts d, answers its one question ("photo") when it comes,
// and returns the Outcome, which must be completed with one output after
// one input round.
func (e *env) answeredOnce(t *testing.T, ctx context.Context, d contracts.Delegation) contracts.Outcome {
	t.Helper()
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	out := e.answerAndFinish(t, ctx, d.LocalWorkflowID, run)
	if len(out.Outputs) != 1 || out.InputRounds != 1 {
		t.Fatalf("outcome = %+v, want one output after one input round", out)
	}
	return out
}

// answerAndFinish waits for the question, answers it ("photo") and
// returns the Outcome, which must be completed.
func (e *env) answerAndFinish(t *testing.T, ctx context.Context, id string, run client.WorkflowRun) contracts.Outcome {
	t.Helper()
	waitA2AState(t, ctx, e.c, id, "input-required")
	if _, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: "photo"}); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	return out
}
