package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/interop/trpcpeer"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// trpcPeer is one agent of TestInteropTRPC.
type trpcPeer struct {
	name  string
	opts  trpcpeer.Options
	agent *trpcpeer.Agent
	wire  *testutil.LockedBuffer
}

// TestInteropTRPC runs delegations against agents built on trpc-a2a-go
// v0.2.5 (Tencent's A2A implementation, not a2a-go), in-process
// (internal/interop/trpcpeer): cards in the library's default shape, with
// "protocolVersion": "0.2.5" and a top-level url, spoken as the A2A 0.3
// JSON-RPC wire. With and without capabilities.streaming: lost-parcel
// answered once, instant, fail, a cancel of a slow task, and a task the
// agent forgets while the delegation waits (TaskNotFound over HTTP 500);
// with streaming, a question asked between the worker's last read and its
// tasks/resubscribe. And an agent that requires an API key in a header,
// with the key in the worker's credential store and without it.
func TestInteropTRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const apiKey = "trpc-interop-api-key-0f3c9a"
	peers := []*trpcPeer{
		{name: "jsonrpc", opts: trpcpeer.Options{}},
		{name: "jsonrpc-streaming", opts: trpcpeer.Options{Streaming: true}},
		{name: "api-key", opts: trpcpeer.Options{APIKey: apiKey}},
		{name: "api-key-no-credential", opts: trpcpeer.Options{APIKey: apiKey}},
	}
	for _, p := range peers {
		p.wire = &testutil.LockedBuffer{}
		w := p.wire
		p.opts.Log = func(line string) { fmt.Fprintln(w, line) }
		a, err := trpcpeer.Start(p.opts)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		t.Cleanup(a.Close)
		p.agent = a
	}
	byName := map[string]*trpcPeer{}
	for _, p := range peers {
		byName[p.name] = p
	}
	// The worker's credential store holds the key for the "api-key" agent's
	// origin only.
	credPath := filepath.Join(t.TempDir(), "credentials.json")
	doc, _ := json.Marshal(map[string]any{"origins": map[string]any{byName["api-key"].agent.URL: map[string]string{"api_key": apiKey}}})
	if err := os.WriteFile(credPath, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(o *options) {
		o.acts = func(a *activities.Activities, _ string) {
			creds, err := a2aclient.LoadCredentials(credPath)
			if err != nil {
				t.Fatal(err)
			}
			a.Credentials = creds
		}
	})

	contract := func(p *trpcPeer, id, scenario string) contracts.Delegation {
		return jsContract("trpc-"+p.name+"-"+id, p.agent.CardURL, scenario, nil)
	}
	// wireOnFailure logs what the agent received and answered when t
	// failed (all of it, always, with DELEGATE_TRPC_WIRE=1).
	wireOnFailure := func(t *testing.T, p *trpcPeer) {
		t.Cleanup(func() {
			switch {
			case os.Getenv("DELEGATE_TRPC_WIRE") == "1":
				t.Logf("%s wire:\n%s", p.name, p.wire.String())
			case t.Failed():
				t.Logf("%s wire (last 12 KiB; DELEGATE_TRPC_WIRE=1 logs it all):\n%s", p.name, tail(p.wire.String(), 12<<10))
			}
		})
	}
	// protocol checks the negotiated protocol recorded in the state and in
	// the Outcome: the 0.3 wire, the card's 0.2.5 kept as declared.
	protocol := func(t *testing.T, p *trpcPeer, id string, out contracts.Outcome) {
		t.Helper()
		s := stateOf(t, ctx, e.c, id)
		want := contracts.ProtocolInfo{Version: "0.3", Binding: "JSONRPC", URL: p.agent.URL + "/", DeclaredVersion: "0.2.5"}
		if s.Protocol != want {
			t.Errorf("State.Protocol = %+v, want %+v", s.Protocol, want)
		}
		if out.Protocol != want {
			t.Errorf("Outcome.Protocol = %+v, want %+v", out.Protocol, want)
		}
		if s.Interface.DeclaredVersion != "0.2.5" || s.Interface.Version != "0.3" {
			t.Errorf("State.Interface = %+v, want version 0.3 declared 0.2.5", s.Interface)
		}
		if out.Agent.Name != trpcpeer.AgentName {
			t.Errorf("agent = %+v", out.Agent)
		}
	}
	claim := func(t *testing.T, out contracts.Outcome) {
		t.Helper()
		if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 || out.Outputs[0].Kind != trpcpeer.ArtifactName {
			t.Fatalf("outcome = %s %+v (outputs %+v, rejected %+v), want completed with one claim_opened", out.Status, out.Error, out.Outputs, out.RejectedArtifacts)
		}
		var c struct {
			ClaimID string `json:"claim_id"`
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal(out.Outputs[0].Data, &c); err != nil || c.OrderID != "A-1001" || !strings.HasPrefix(c.ClaimID, "CLM-") {
			t.Errorf("claim = %s (%v)", out.Outputs[0].Data, err)
		}
	}
	// saw checks the agent's counts: one task per delegation, the messages
	// sent, the cancels (of the delegation's remote task), and no
	// tasks/resubscribe to an agent whose card does not declare streaming.
	saw := func(t *testing.T, p *trpcPeer, remoteTask string, messages, cancels int) trpcpeer.Counts {
		t.Helper()
		c := p.agent.Counts()
		if c.Tasks != 1 || c.Messages != messages || c.Cancels != cancels || c.Unauthorized != 0 {
			t.Errorf("agent counts = %+v, want 1 task, %d messages, %d cancels, no refusal", c, messages, cancels)
		}
		if len(c.TaskIDs) == 1 && c.TaskIDs[0] != remoteTask {
			t.Errorf("agent task %s, delegation's remote task %s", c.TaskIDs[0], remoteTask)
		}
		for _, id := range c.CanceledTasks {
			if id != remoteTask {
				t.Errorf("cancel of task %s, want %s", id, remoteTask)
			}
		}
		if !p.opts.Streaming && (c.Resubscribes != 0 || c.Streams != 0) {
			t.Errorf("agent counts = %+v: a card without streaming got a stream request", c)
		}
		return c
	}
	// answered runs lost-parcel with one answer.
	answered := func(t *testing.T, p *trpcPeer) (contracts.Delegation, contracts.Outcome) {
		t.Helper()
		d := contract(p, "lost-parcel", trpcpeer.ScenarioLostParcel)
		r, err := startRun(ctx, e.c, d)
		if err != nil {
			t.Fatal(err)
		}
		var s contracts.State
		waitFor(t, "input-required", time.Minute, func() (bool, string) {
			var err error
			s, err = dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return s.Question != nil, fmt.Sprintf("%s %+v", s.A2AState, s.Outcome)
		})
		if !strings.Contains(s.Question.Text, "photo of the box") || s.Question.Round != 1 {
			t.Errorf("question = %+v", s.Question)
		}
		if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "interop"}); err != nil {
			t.Fatalf("Answer() error = %v", err)
		}
		var out contracts.Outcome
		if err := r.Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return d, out
	}
	// ended waits (within d) for the delegation to end, and returns its
	// Outcome; the wait says what the delegation was doing when it did not
	// end. A delegation still running after the test is terminated.
	ended := func(t *testing.T, id string, d time.Duration) contracts.Outcome {
		t.Helper()
		t.Cleanup(func() { _ = e.c.TerminateWorkflow(context.Background(), id, "", "test over") })
		var s contracts.State
		waitFor(t, id+" to end", d, func() (bool, string) {
			var err error
			s, err = dclient.Get(e.c, id).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			retrying, _ := json.Marshal(s.Retrying)
			return s.Outcome != nil, fmt.Sprintf("a2a_state %s, retrying %s", s.A2AState, retrying)
		})
		return *s.Outcome
	}

	t.Run("peers", func(t *testing.T) {
		for _, name := range []string{"jsonrpc", "jsonrpc-streaming"} {
			p := byName[name]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				wireOnFailure(t, p)
				t.Run("lost-parcel", func(t *testing.T) {
					p.agent.ResetCounts()
					d, out := answered(t, p)
					claim(t, out)
					if out.InputRounds != 1 {
						t.Errorf("input rounds = %d, want 1", out.InputRounds)
					}
					protocol(t, p, d.LocalWorkflowID, out)
					if c := saw(t, p, out.RemoteTaskID, 2, 0); c.FollowUps != 1 {
						t.Errorf("agent counts = %+v, want the answer on the same task", c)
					}
				})
				t.Run("instant", func(t *testing.T) {
					p.agent.ResetCounts()
					d := contract(p, "instant", trpcpeer.ScenarioInstant)
					out := e.outcomeOf(t, ctx, d)
					claim(t, out)
					protocol(t, p, d.LocalWorkflowID, out)
					saw(t, p, out.RemoteTaskID, 1, 0)
				})
				t.Run("fail", func(t *testing.T) {
					p.agent.ResetCounts()
					d := contract(p, "fail", trpcpeer.ScenarioFail)
					out := e.outcomeOf(t, ctx, d)
					if out.Status != contracts.StatusFailed || out.Error == nil || out.Error.Category != contracts.CategoryRemoteBusiness ||
						!strings.Contains(out.Error.Message, trpcpeer.FailText) {
						t.Errorf("outcome = %s %+v, want failed (remote_business) with %q", out.Status, out.Error, trpcpeer.FailText)
					}
					saw(t, p, out.RemoteTaskID, 1, 0)
				})
				t.Run("cancel-slow", func(t *testing.T) {
					p.agent.ResetCounts()
					d := contract(p, "cancel", trpcpeer.ScenarioSlow)
					r, err := startRun(ctx, e.c, d)
					if err != nil {
						t.Fatal(err)
					}
					var remote string
					waitFor(t, "working", time.Minute, func() (bool, string) {
						s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
						if err != nil {
							return false, err.Error()
						}
						remote = s.RemoteTaskID
						return s.A2AState == "working" && s.RemoteTaskID != "", s.A2AState
					})
					if p.opts.Streaming {
						// The card declares streaming: the worker follows the
						// task over tasks/resubscribe before it is canceled.
						waitFor(t, "tasks/resubscribe", time.Minute, func() (bool, string) {
							c := p.agent.Counts()
							return c.Resubscribes > 0, fmt.Sprintf("%+v", c)
						})
					}
					if err := dclient.Get(e.c, d.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "interop"); err != nil {
						t.Fatal(err)
					}
					var out contracts.Outcome
					if err := r.Get(ctx, &out); err != nil {
						t.Fatal(err)
					}
					if out.Status != contracts.StatusCanceled || out.Error == nil || out.Error.Category != contracts.CategoryCanceled {
						t.Errorf("outcome = %s %+v, want canceled (local, confirmed)", out.Status, out.Error)
					}
					if out.RemoteTaskID != remote {
						t.Errorf("remote task = %s, want %s", out.RemoteTaskID, remote)
					}
					protocol(t, p, d.LocalWorkflowID, out)
					if c := saw(t, p, remote, 1, 1); !slices.Equal(c.CanceledTasks, []string{remote}) {
						t.Errorf("agent canceled %v, want [%s]", c.CanceledTasks, remote)
					}
				})
				// The agent forgets the task while the delegation waits for
				// an answer (its in-memory task manager restarted, or it
				// called CleanTask): every tasks/get is then answered with
				// TaskNotFound, JSON-RPC error -32001, over HTTP 500 (the
				// library's server answers every A2A error code so).
				// TaskNotFound is a protocol error (docs/operations.md#sends:
				// "TaskNotFound and every other A2A error code"), so the
				// delegation ends protocol_error at the next read.
				t.Run("task-forgotten", func(t *testing.T) {
					p.agent.ResetCounts()
					d := contract(p, "forgotten", trpcpeer.ScenarioLostParcel)
					d.WaitingPollSeconds = 1
					if _, err := startRun(ctx, e.c, d); err != nil {
						t.Fatal(err)
					}
					s := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
					if err := p.agent.Forget(s.RemoteTaskID); err != nil {
						t.Fatal(err)
					}
					out := ended(t, d.LocalWorkflowID, 20*time.Second)
					if out.Status != contracts.StatusProtocolError || out.Error == nil || out.Error.Category != contracts.CategoryProtocol {
						t.Errorf("outcome = %s %+v, want protocol_error (TaskNotFound)", out.Status, out.Error)
					}
				})
				if !p.opts.Streaming {
					return
				}
				// The agent asks its question between the worker's last
				// tasks/get and its tasks/resubscribe; the library does not
				// replay it on the new stream (A2A 0.3 §7.9 leaves that to
				// the server). The worker must still see the question, not
				// wait for an event that never comes.
				t.Run("question-on-resubscribe", func(t *testing.T) {
					p.agent.ResetCounts()
					d := contract(p, "on-resubscribe", trpcpeer.ScenarioQuestionOnResubscribe)
					r, err := startRun(ctx, e.c, d)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = e.c.TerminateWorkflow(context.Background(), d.LocalWorkflowID, "", "test over") })
					var s contracts.State
					waitFor(t, "the question", 20*time.Second, func() (bool, string) {
						var err error
						s, err = dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
						if err != nil {
							return false, err.Error()
						}
						return s.Question != nil, fmt.Sprintf("a2a_state %s, agent %+v", s.A2AState, p.agent.Counts())
					})
					if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "interop"}); err != nil {
						t.Fatalf("Answer() error = %v", err)
					}
					var out contracts.Outcome
					if err := r.Get(ctx, &out); err != nil {
						t.Fatal(err)
					}
					claim(t, out)
					saw(t, p, out.RemoteTaskID, 2, 0)
				})
			})
		}
		t.Run("api-key", func(t *testing.T) {
			t.Parallel()
			p := byName["api-key"]
			wireOnFailure(t, p)
			d, out := answered(t, p)
			claim(t, out)
			protocol(t, p, d.LocalWorkflowID, out)
			saw(t, p, out.RemoteTaskID, 2, 0)
			s := stateOf(t, ctx, e.c, d.LocalWorkflowID)
			if a := s.Interface.Auth; a == nil || a.Kind != "api_key" || a.Name != trpcpeer.APIKeyScheme || a.Header != trpcpeer.APIKeyHeader {
				t.Errorf("recorded scheme = %+v, want api_key %s in header %s", a, trpcpeer.APIKeyScheme, trpcpeer.APIKeyHeader)
			}
			if h := exportHistory(t, ctx, e.c, d.LocalWorkflowID); strings.Contains(h, apiKey) {
				t.Errorf("the API key is in the workflow history")
			}
		})
		t.Run("api-key-no-credential", func(t *testing.T) {
			t.Parallel()
			p := byName["api-key-no-credential"]
			wireOnFailure(t, p)
			d := contract(p, "instant", trpcpeer.ScenarioInstant)
			out := e.outcomeOf(t, ctx, d)
			if out.Status != contracts.StatusAuthorizationDenied || out.Error == nil || out.Error.Category != contracts.CategoryAuthorization ||
				!strings.Contains(out.Error.Message, "no entry for origin") {
				t.Errorf("outcome = %s %+v, want authorization_denied saying the store has no entry for the origin", out.Status, out.Error)
			}
			if c := p.agent.Counts(); c.Unauthorized == 0 || c.Messages != 0 || c.Tasks != 0 {
				t.Errorf("agent counts = %+v, want refused requests and no task", c)
			}
		})
	})
}
