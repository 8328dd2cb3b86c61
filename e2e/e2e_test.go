// Package e2e runs delegations end to end in one process: the embedded
// Temporal server (in-memory SQLite), the claims agent (a real a2asrv
// server), and a worker, all on free loopback ports.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/workflows"
)

type env struct {
	srv   *devserver.Server
	c     client.Client
	agent *claimsagent.Agent
	base  string
	// startWorker starts an in-process worker (setup does, unless
	// options.noWorker).
	startWorker func()
}

// options of setup.
type options struct {
	agent claimsagent.Config
	// trust builds the worker's trust store once the agent's base URL is
	// known.
	trust func(base string) *cards.TrustStore
	// proxy, when set, stands between the worker and the agent: the card
	// names the proxy's URL, the proxy forwards to the agent.
	proxy func(agentURL string) http.Handler
	// acts adjusts the worker's activities; base is the agent's URL.
	acts func(a *activities.Activities, base string)
	// noWorker: the test starts the worker itself (env.startWorker).
	noWorker bool
	// workflows configure the worker's Delegation workflow.
	workflows workflows.Options
	// keys, when set, seal every payload of the env's client (the test's
	// and the worker's: package codec).
	keys *codec.Keys
	// interceptors of the Temporal client (the worker's and the test's).
	interceptors []interceptor.ClientInterceptor
	// register, when set, registers the test's own workflows on the
	// worker too (a parent workflow of a delegation).
	register func(worker.Worker)
}

func setup(t *testing.T, opts ...func(*options)) *env {
	t.Helper()
	o := options{agent: claimsagent.Config{WorkDelay: 50 * time.Millisecond}}
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	srv, err := devserver.Start(ctx, devserver.Config{Memory: true, UIPort: 0, SearchAttributes: contracts.SearchAttributeNames, LogLevel: "fatal"})
	if err != nil {
		t.Fatalf("devserver.Start() error = %v", err)
	}
	t.Cleanup(srv.Stop)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if o.proxy != nil {
		p := httptest.NewUnstartedServer(nil)
		p.Config.Handler = o.proxy(base)
		p.Start()
		t.Cleanup(p.Close)
		base = p.URL
	}
	o.agent.BaseURL = base
	agent := claimsagent.New(o.agent)
	go func() { _ = agent.Serve(ctx, ln) }()

	copts := client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Interceptors: o.interceptors}
	if o.keys != nil {
		copts.DataConverter, copts.FailureConverter = o.keys.DataConverter(), o.keys.FailureConverter()
	}
	c, err := client.Dial(copts)
	if err != nil {
		t.Fatalf("client.Dial() error = %v", err)
	}
	t.Cleanup(c.Close)
	var ts *cards.TrustStore
	if o.trust != nil {
		ts = o.trust(base)
	}
	startWorker := func() {
		w := worker.New(c, contracts.TaskQueue, worker.Options{})
		a := &activities.Activities{PollInitial: 50 * time.Millisecond, PollMax: 500 * time.Millisecond,
			Fetcher: &cards.Fetcher{Trust: ts}, Temporal: c, Logger: slog.New(slog.DiscardHandler)}
		if o.acts != nil {
			o.acts(a, base)
		}
		workflows.RegisterWorkflows(w, o.workflows)
		activities.Register(w, a)
		if o.register != nil {
			o.register(w)
		}
		if err := w.Start(); err != nil {
			t.Fatalf("worker.Start() error = %v", err)
		}
		t.Cleanup(w.Stop)
	}
	if !o.noWorker {
		startWorker()
	}
	return &env{srv: srv, c: c, agent: agent, base: base, startWorker: startWorker}
}

// dialKeys is a client of the test's server with keys' data converter
// (nil keys: the default one), closed with the test.
func (e *env) dialKeys(t *testing.T, keys *codec.Keys) client.Client {
	t.Helper()
	o := client.Options{HostPort: e.srv.FrontendAddr(), Namespace: e.srv.Namespace()}
	if keys != nil {
		o.DataConverter, o.FailureConverter = keys.DataConverter(), keys.FailureConverter()
	}
	c, err := client.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// ownWorker starts a worker on c that the test stops itself (setup's
// worker runs to the test's end).
func (e *env) ownWorker(t *testing.T, c client.Client) worker.Worker {
	t.Helper()
	w := worker.New(c, contracts.TaskQueue, worker.Options{})
	workflows.RegisterWorkflows(w, workflows.Options{})
	activities.Register(w, &activities.Activities{PollInitial: 50 * time.Millisecond, PollMax: 500 * time.Millisecond,
		Temporal: c, Logger: slog.New(slog.DiscardHandler)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

func lostParcel(id, base string) contracts.Delegation {
	return contracts.Delegation{
		LocalWorkflowID: id,
		AgentCardURL:    base + "/.well-known/agent-card.json",
		Skill:           "open-claim",
		Purpose:         "open a claim for a lost parcel",
		Message:         contracts.MessageSpec{Text: "My parcel for order A-1001 never arrived.", Data: json.RawMessage(`{"order_id":"A-1001"}`)},
		AllowedOutputs:  []string{"claim_opened"},
		Deadline:        time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second),
		WriteAuthority:  "none",
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, info := cond()
		if ok {
			return
		}
		last = info
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last: %s)", d, what, last)
}

func TestLostParcelEndToEnd(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	d := lostParcel("lost-parcel-e2e", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatalf("startRun() error = %v", err)
	}

	waitFor(t, "input-required", 60*time.Second, func() (bool, string) {
		s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.A2AState == "input-required" && s.Question != nil, s.A2AState
	})
	s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Question.Text != claimsagent.Question {
		t.Errorf("question = %q, want %q", s.Question.Text, claimsagent.Question)
	}

	// The UI's list and first page say what the delegation is: its static
	// summary and details (user metadata of the start event).
	desc, err := e.c.DescribeWorkflowExecution(ctx, d.LocalWorkflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	var summary, details string
	if md := desc.GetExecutionConfig().GetUserMetadata(); md != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(md.GetSummary(), &summary)
		_ = converter.GetDefaultDataConverter().FromPayload(md.GetDetails(), &details)
	}
	if !strings.Contains(summary, d.Purpose) || !strings.Contains(summary, d.Skill) {
		t.Errorf("static summary = %q, want the purpose and the skill", summary)
	}
	for _, want := range []string{"Purpose: ` open a claim for a lost parcel `", "Skill: ` open-claim `", "Allowed outputs: ` claim_opened `", d.Deadline.UTC().Format(time.RFC3339)} {
		if !strings.Contains(details, want) {
			t.Errorf("static details lack %q:\n%s", want, details)
		}
	}

	// A second delegation under the running id is refused.
	if _, err := startRun(ctx, e.c, d); !errors.Is(err, dclient.ErrAlreadyRunning) {
		t.Errorf("second Start() error = %v, want ErrAlreadyRunning", err)
	}

	// Visibility finds it waiting for an operator.
	waitFor(t, "visibility A2AState", 30*time.Second, func() (bool, string) {
		resp, err := e.c.ListWorkflow(ctx, listRequest(e.srv.Namespace(), `A2AState = "input-required"`))
		if err != nil {
			return false, err.Error()
		}
		for _, ex := range resp.Executions {
			if ex.Execution.WorkflowId == d.LocalWorkflowID {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d executions", len(resp.Executions))
	})

	// An empty answer is refused by the Update's validator.
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{}); err == nil {
		t.Errorf("Answer(empty) error = nil, want a refusal")
	}
	round, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo: box.jpg", AnsweredBy: "e2e"})
	if err != nil {
		t.Fatalf("Answer() error = %v", err)
	}
	if round != 1 {
		t.Errorf("Answer() round = %d, want 1", round)
	}

	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("run.Get() error = %v", err)
	}
	if out.Status != contracts.StatusCompleted {
		t.Fatalf("status = %q (error %+v), want completed", out.Status, out.Error)
	}
	if len(out.Outputs) != 1 || out.Outputs[0].Kind != "claim_opened" {
		t.Fatalf("outputs = %+v, want one claim_opened", out.Outputs)
	}
	var claim struct {
		ClaimID string `json:"claim_id"`
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(out.Outputs[0].Data, &claim); err != nil {
		t.Fatalf("output data %s: %v", out.Outputs[0].Data, err)
	}
	if claim.OrderID != "A-1001" || claim.ClaimID == "" {
		t.Errorf("claim = %+v, want order A-1001 and a claim id", claim)
	}
	if out.InputRounds != 1 {
		t.Errorf("input_rounds = %d, want 1", out.InputRounds)
	}
	if out.Protocol.Version != "1.0" || out.Protocol.Binding != "JSONRPC" {
		t.Errorf("protocol = %+v, want 1.0 over JSONRPC", out.Protocol)
	}
	if out.Agent.Name != "Claims Agent" || len(out.Agent.CardDigest) != len("sha256:")+64 {
		t.Errorf("agent = %+v", out.Agent)
	}
	if out.RemoteTaskID == "" || out.ContextID == "" {
		t.Errorf("remote ids missing: %+v", out)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("agent task count = %d, want 1", n)
	}

	// The id of an ended delegation may be used again: a new delegation with
	// new message ids, so the agent opens a new task.
	if _, err := startRun(ctx, e.c, d); err != nil {
		t.Fatalf("Start() again after completion error = %v", err)
	}
	waitFor(t, "a second task", 60*time.Second, func() (bool, string) {
		s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.Question != nil && s.RemoteTaskID != out.RemoteTaskID, s.A2AState
	})
	if n := e.agent.TaskCount(); n != 2 {
		t.Errorf("agent task count after reuse = %d, want 2", n)
	}
	if err := dclient.Get(e.c, d.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "test done"); err != nil {
		t.Errorf("Cancel() error = %v", err)
	}

	// The UI is served.
	resp, err := http.Get(e.srv.UIURL())
	if err != nil {
		t.Fatalf("GET UI: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET UI status = %d", resp.StatusCode)
	}
}
