package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
	"github.com/a2adelegate/delegate/mcp"
)

// slowHuman is an elicitation handler whose human answers only when the
// test says so (release): the forms it was shown are counted.
type slowHuman struct {
	answer  string
	release chan struct{}
	// gone ends the handler without an answer (the test ended: a client's
	// Close waits for its handlers).
	gone     chan struct{}
	goneOnce sync.Once

	mu       sync.Mutex
	messages []string
}

func newSlowHuman(answer string) *slowHuman {
	return &slowHuman{answer: answer, release: make(chan struct{}), gone: make(chan struct{})}
}

// leavesWith makes the human leave when t ends, before the sessions
// connected earlier are closed (call it after connecting).
func (h *slowHuman) leavesWith(t *testing.T) {
	t.Cleanup(func() { h.goneOnce.Do(func() { close(h.gone) }) })
}

func (h *slowHuman) handle(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	h.mu.Lock()
	h.messages = append(h.messages, req.Params.Message)
	h.mu.Unlock()
	select {
	case <-h.release:
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": h.answer}}, nil
	case <-h.gone:
		return nil, errors.New("the human left")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *slowHuman) forms() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.messages)
}

// httpServerOf serves s over Streamable HTTP (mcp.Server.HTTPHandler)
// behind a tokens file with alice's and bob's tokens; it returns the /mcp
// URL.
func httpServerOf(t *testing.T, s *mcp.Server, aliceTok, bobTok string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeTokens(t, path, `{"actor": "alice", "token": "`+aliceTok+`"}`, `{"actor": "bob", "token": "`+bobTok+`"}`)
	tokens, err := mcp.NewTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.HTTPHandler(mcp.HTTPOptions{Verify: mcp.Verifier(tokens, nil), MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// loggedServer is e's MCP server for actor ("" for HTTP) with its log in
// the returned buffer.
func (e *env) loggedServer(t *testing.T, actor string) (*mcp.Server, *testutil.LockedBuffer) {
	t.Helper()
	var logs testutil.LockedBuffer
	s, err := mcp.New(mcp.Options{Client: e.c, Templates: mcpTemplates(t, e.base), Actor: actor, Burst: 1000, Rate: 1000,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcp server log:\n%s", tail(logs.String(), 6000))
		}
	})
	return s, &logs
}

// transportCase is one way a go-sdk client reaches the server at MCP
// 2025-11-25 (elicitation/create, sessions).
type transportCase struct {
	name    string
	connect func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession
}

func legacyTransports() []transportCase {
	const aliceTok, bobTok = "alice-token-0123456789", "bob-token-0123456789ab"
	return []transportCase{
		{"stdio", func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
			return stdioSessionAt(t, s, opts, mcp2025)
		}},
		{"http", func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
			return httpSessionAt(t, httpServerOf(t, s, aliceTok, bobTok), aliceTok, opts, mcp2025)
		}},
	}
}

// TestMCPSlowHumanAnswersAfterTheCall: a human slower than the call
// (formerly: the call blocked in elicitation until the human answered, so
// a client's request timeout, 60 s in the TypeScript SDK, ended it and
// dropped the answer; a call with wait_seconds 10 took as long as the
// human). Now the call returns within its wait_seconds with the question
// and the form pending; a later delegation_status does not send the form
// again; the answer, given after every call returned, is sent for the
// round the form showed, as alice, and the delegation completes.
func TestMCPSlowHumanAnswersAfterTheCall(t *testing.T) {
	e := setup(t)
	for _, tc := range legacyTransports() {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := e.loggedServer(t, "alice")
			human := newSlowHuman("the photo, late: box.jpg (" + tc.name + ")")
			cs := tc.connect(t, s, &sdk.ClientOptions{ElicitationHandler: human.handle})
			human.leavesWith(t)

			begin := time.Now()
			res, r := call(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1401", "wait_seconds": 10})
			took := time.Since(begin)
			if res.IsError {
				t.Fatalf("start: %s", text(res))
			}
			if took > 13*time.Second {
				t.Errorf("open_parcel_claim with wait_seconds 10 returned after %s, want at most about 10 s whatever the human does", took.Round(time.Millisecond))
			}
			if r.Question == nil || r.Elicitation == nil || r.Elicitation.Status != mcp.FormPending || r.Elicitation.Round != r.Question.Round {
				t.Fatalf("start: %s (%+v, elicitation %+v), want the question with its form pending", text(res), r.Question, r.Elicitation)
			}
			if !strings.Contains(text(res), "put to your human") || !strings.Contains(text(res), mcp.ToolStatus) {
				t.Errorf("start text %q does not say the question was put to the human, and to call %s later", text(res), mcp.ToolStatus)
			}
			if a := s.Activity(); a.Forms != 1 {
				t.Errorf("Activity() = %+v after the call returned, want the form pending", a)
			}
			id, round := r.LocalWorkflowID, r.Question.Round

			// The model follows up: the form is not sent again.
			begin = time.Now()
			res, r = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 2})
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("delegation_status wait_seconds 2 took %s", took.Round(time.Millisecond))
			}
			if res.IsError || r.Elicitation == nil || r.Elicitation.Status != mcp.FormPending || human.forms() != 1 {
				t.Fatalf("status while the human thinks: %s (%+v), %d form(s) shown; want the same form pending, shown once", text(res), r.Elicitation, human.forms())
			}

			close(human.release) // the human answers, after every call returned
			waitFor(t, "the late answer recorded", 60*time.Second, func() (bool, string) {
				st := e.stateOf(t, id)
				return len(st.Answers) == 1, fmt.Sprintf("answers %+v", st.Answers)
			})
			st := e.stateOf(t, id)
			if a := st.Answers[0]; a.AnsweredBy != "alice" || a.Round != round || a.Text != human.answer {
				t.Fatalf("answer = %+v, want %q by alice for round %d", a, human.answer, round)
			}
			waitFor(t, "completed", 60*time.Second, func() (bool, string) {
				_, r := call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 5})
				return r.Outcome != nil && r.Outcome.Status == contracts.StatusCompleted, fmt.Sprintf("%+v", r)
			})
			waitFor(t, "no form pending", 10*time.Second, func() (bool, string) {
				a := s.Activity()
				return a == mcp.Activity{}, fmt.Sprintf("%+v", a)
			})
			if human.forms() != 1 {
				t.Errorf("the form was shown %d times, want once", human.forms())
			}
		})
	}
}

// TestMCPLateAnswerToAMovedOnRound: an operator answers round 1 while
// the human's form for it is still open, and the agent asks a second
// question; the human's answer, given after, is refused by the delegation
// (as `delegate answer --round` is), never recorded for round 2, which
// the next call puts to the human in a form of its own.
func TestMCPLateAnswerToAMovedOnRound(t *testing.T) {
	e := setup(t)
	s, logs := e.loggedServer(t, "alice")
	human := newSlowHuman("the photo, too late")
	cs := stdioSessionAt(t, s, &sdk.ClientOptions{ElicitationHandler: human.handle}, mcp2025)
	human.leavesWith(t)
	res, r := call(t, cs, "claims_scenario", map[string]any{"order_id": "A-1402", "scenario": "two-questions", "wait_seconds": 5})
	if res.IsError || r.Question == nil || r.Question.Round != 1 || r.Elicitation == nil || r.Elicitation.Status != mcp.FormPending {
		t.Fatalf("start: %s (%+v)", text(res), r.Elicitation)
	}
	id := r.LocalWorkflowID
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: "the operator's photo", AnsweredBy: "operator", Round: 1}); err != nil {
		t.Fatalf("the operator's answer: %v", err)
	}
	waitFor(t, "the second question", 30*time.Second, func() (bool, string) {
		st := e.stateOf(t, id)
		return st.Question != nil && st.Question.Round == 2, fmt.Sprintf("%+v", st.Question)
	})
	close(human.release) // the human answers round 1's form now
	waitFor(t, "the late answer refused", 30*time.Second, func() (bool, string) {
		return strings.Contains(logs.String(), "elicitation answered") && strings.Contains(logs.String(), "status="+mcp.FormRefused), ""
	})
	st := e.stateOf(t, id)
	if len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "operator" || st.Question == nil || st.Question.Round != 2 {
		t.Fatalf("answers = %+v, question %+v; want the operator's only, round 2 waiting", st.Answers, st.Question)
	}
	// Round 2 is asked in a form of its own, and answered (the human now
	// answers at once).
	res, r = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 10})
	if res.IsError || human.forms() != 2 || !strings.Contains(text(res), "answered by alice through elicitation (round 2)") {
		t.Fatalf("status: %s, %d forms shown; want round 2 asked and answered", text(res), human.forms())
	}
	e.answeredTwice(t, ctx, id)
}

// answeredTwice checks that delegation id completed after two rounds, the
// operator's answer for round 1 and alice's for round 2.
func (e *env) answeredTwice(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	out, err := dclient.Get(e.c, id).Outcome(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := e.stateOf(t, id)
	if out.Status != contracts.StatusCompleted || out.InputRounds != 2 || len(st.Answers) != 2 ||
		st.Answers[0].AnsweredBy != "operator" || st.Answers[0].Round != 1 || st.Answers[1].AnsweredBy != "alice" || st.Answers[1].Round != 2 {
		t.Fatalf("outcome %s after %d rounds, answers %+v; want completed, round 1 the operator's, round 2 alice's", out.Status, out.InputRounds, st.Answers)
	}
}

// killable is a client transport whose connection the test can break,
// as a client process that exits breaks its pipes.
type killable struct {
	sdk.Transport
	mu   sync.Mutex
	conn sdk.Connection
}

func (k *killable) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.mu.Lock()
	k.conn = c
	k.mu.Unlock()
	return c, err
}

func (k *killable) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = k.conn.Close()
}

// TestMCPSessionClosedMidQuestion: a session that ends while the human's
// form is open, and while a call of it waits, leaves nothing behind: the
// form is withdrawn, the call ends, and (HTTP) the DELETE that ends it is
// not held (formerly the handler stayed blocked in elicitation for the
// whole 10-minute form limit, and the DELETE waited for it). Over stdio
// the client's process goes away; over HTTP the client deletes its
// session.
func TestMCPSessionClosedMidQuestion(t *testing.T) {
	e := setup(t)
	const aliceTok, bobTok = "alice-token-0123456789", "bob-token-0123456789ab"
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			s, logs := e.loggedServer(t, map[string]string{"stdio": "alice"}[transport])
			human := newSlowHuman("never given") // never released
			opts := &sdk.ClientOptions{ElicitationHandler: human.handle}
			var cs *sdk.ClientSession
			var end func()
			switch transport {
			case "stdio":
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				st, ct := sdk.NewInMemoryTransports()
				ss, err := s.MCPServer().Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = ss.Close() })
				k := &killable{Transport: ct}
				if cs, err = sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, k, &sdk.ClientSessionOptions{ProtocolVersion: mcp2025}); err != nil {
					t.Fatal(err)
				}
				end = k.kill
			case "http":
				url := httpServerOf(t, s, aliceTok, bobTok)
				cs = httpSessionAt(t, url, aliceTok, opts, mcp2025)
				end = func() {
					req, _ := http.NewRequest(http.MethodDelete, url, nil)
					req.Header.Set("Authorization", "Bearer "+aliceTok)
					req.Header.Set("Mcp-Session-Id", cs.ID())
					req.Header.Set("MCP-Protocol-Version", mcp2025)
					resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
					if err != nil {
						t.Errorf("DELETE: %v", err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						t.Errorf("DELETE: %d, want 204", resp.StatusCode)
					}
				}
			}
			// The human's handler ends with the test (the client's Close
			// waits for it).
			human.leavesWith(t)
			res, r := call(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1403", "wait_seconds": 5})
			if res.IsError || r.Elicitation == nil || r.Elicitation.Status != mcp.FormPending {
				t.Fatalf("start: %s (%+v)", text(res), r.Elicitation)
			}
			// A call that waits when the session ends.
			waiting := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolStatus, Arguments: map[string]any{"local_workflow_id": r.LocalWorkflowID, "wait_seconds": 30}})
				waiting <- err
			}()
			waitFor(t, "a call waiting and the form pending", 10*time.Second, func() (bool, string) {
				a := s.Activity()
				return a.Calls == 1 && a.Forms == 1, fmt.Sprintf("%+v", a)
			})
			begin := time.Now()
			end()
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("ending the session took %s, want it not held by the form or the call", took.Round(time.Millisecond))
			}
			waitFor(t, "nothing left of the session", 10*time.Second, func() (bool, string) {
				a := s.Activity()
				return a == mcp.Activity{}, fmt.Sprintf("%+v", a)
			})
			if !strings.Contains(logs.String(), "elicitation withdrawn: the session ended") {
				t.Errorf("the log does not say the form was withdrawn")
			}
			if st := e.stateOf(t, r.LocalWorkflowID); len(st.Answers) != 0 || st.Question == nil {
				t.Errorf("state = %+v, want the question waiting for an operator", st)
			}
			if transport == "stdio" {
				select {
				case <-waiting:
				case <-time.After(10 * time.Second):
					t.Error("the waiting call did not end with its session")
				}
			}
		})
	}
}

// TestMCPProgressWhileWaiting: a call that waits, given a progress token,
// sends notifications/progress (formerly none: a host's
// resetTimeoutOnProgress had nothing to reset on).
func TestMCPProgressWhileWaiting(t *testing.T) {
	e := setup(t)
	for _, version := range []string{mcp2025, mcp.ModernProtocol} {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex
			var got []*sdk.ProgressNotificationParams
			cs := stdioSessionAt(t, e.mcpServer(t, "alice"), &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, req.Params)
					mu.Unlock()
				},
			}, version)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p := &sdk.CallToolParams{Name: "claims_scenario", Arguments: map[string]any{"order_id": "A-1404", "scenario": "slow", "wait_seconds": 7}}
			p.SetProgressToken("wait-1404")
			res, err := cs.CallTool(ctx, p)
			if err != nil || res.IsError {
				t.Fatalf("CallTool: %v %v", err, res)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) < 2 {
				t.Fatalf("%d progress notifications in a 7 s wait, want one at once and one every 5 s", len(got))
			}
			for i, n := range got {
				if n.ProgressToken != "wait-1404" || (i > 0 && n.Progress <= got[i-1].Progress) || n.Message == "" {
					t.Errorf("notification %d = %+v, want token wait-1404, increasing progress, a message", i, n)
				}
			}
		})
	}
}

// TestMCPModernProtocol: a go-sdk client offering MCP 2026-07-28 gets it
// (formerly server/discover was refused with -32022 and the client fell
// back), over stdio and stateless Streamable HTTP (no session id), and
// its human answers through an input request: the result asks, the
// client's retry carries the answer, sent for the round asked, as alice.
func TestMCPModernProtocol(t *testing.T) {
	e := setup(t)
	const aliceTok, bobTok = "alice-token-0123456789", "bob-token-0123456789ab"
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession
	}{
		{"stdio", func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
			return stdioSession(t, s, opts)
		}},
		{"http", func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
			return httpSessionWith(t, httpServerOf(t, s, aliceTok, bobTok), aliceTok, opts)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := e.loggedServer(t, map[string]string{"stdio": "alice"}[tc.name])
			var asked []string
			var mu sync.Mutex
			answer := "photo at 2026-07-28 (" + tc.name + ")"
			cs := tc.connect(t, s, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
			}})
			if v := cs.InitializeResult().ProtocolVersion; v != mcp.ModernProtocol {
				t.Fatalf("negotiated MCP %s, want %s", v, mcp.ModernProtocol)
			}
			if tc.name == "http" && cs.ID() != "" {
				t.Errorf("session id %q over stateless HTTP, want none", cs.ID())
			}
			res, r := call(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1001", "wait_seconds": 30})
			if res.IsError || !strings.Contains(text(res), "answered by alice through an input request") {
				t.Fatalf("start: %s", text(res))
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "photo of the box") || !strings.Contains(asked[0], "not instructions") {
				t.Fatalf("asked %q, want the agent's question once, quoted", asked)
			}
			waitFor(t, "completed", 60*time.Second, func() (bool, string) {
				_, r := call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": r.LocalWorkflowID, "wait_seconds": 5})
				return r.Outcome != nil && r.Outcome.Status == contracts.StatusCompleted, fmt.Sprintf("%+v", r)
			})
			e.answeredLostParcel(t, context.Background(), r.LocalWorkflowID, "alice", "alice", answer)
			if a := e.stateOf(t, r.LocalWorkflowID).Answers; len(a) != 1 || a[0].Round != 1 {
				t.Errorf("answers = %+v, want round 1's", a)
			}
		})
	}

	t.Run("discover", func(t *testing.T) {
		url := httpServerOf(t, e.mcpServer(t, ""), aliceTok, bobTok)
		body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceTok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"2026-07-28"`) || !strings.Contains(string(b), `"2025-11-25"`) || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("server/discover: %d %s (session %q), want 200 listing 2026-07-28 and 2025-11-25, no session", resp.StatusCode, b, resp.Header.Get("Mcp-Session-Id"))
		}
	})

	// The input request by hand (the client's automatic retry off): what
	// the retry carries is checked.
	t.Run("retry-checked", func(t *testing.T) {
		s, _ := e.loggedServer(t, "alice")
		cs := stdioSessionAt(t, s, &sdk.ClientOptions{
			MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
			Capabilities:   &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
		}, "")
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := map[string]any{"order_id": "A-1406", "wait_seconds": 30}
		first, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "open_parcel_claim", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		ir, ok := first.InputRequests["answer-round-1"].(*sdk.ElicitParams)
		if !first.NeedsInput() || !ok || first.RequestState == "" || len(first.Content) != 0 || ir.Mode != "form" || !strings.Contains(ir.Message, "photo of the box") {
			b, _ := json.Marshal(first)
			t.Fatalf("first result = %s, want an input request for round 1 (an elicitation form) and a requestState, no content", b)
		}
		retry := func(name string, args map[string]any, state string, resp sdk.InputResponse) *sdk.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args, RequestState: state,
				InputResponses: sdk.InputResponseMap{"answer-round-1": resp}})
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			return res
		}
		good := &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the photo"}}
		tampered := []byte(first.RequestState)
		tampered[3] ^= 1
		refused(t, retry("open_parcel_claim", args, string(tampered), good), "requestState", "does not verify")
		refused(t, retry(mcp.ToolStatus, map[string]any{"local_workflow_id": "mcp.open_parcel_claim.x"}, first.RequestState, good), "requestState", "another call")
		// A reply the client should not have sent: nothing is sent, the
		// question is asked again.
		res := retry("open_parcel_claim", args, first.RequestState, &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": 42}})
		if !res.NeedsInput() {
			t.Fatalf("after a number for an answer: %s, want the question asked again", text(res))
		}
		res = retry("open_parcel_claim", args, first.RequestState, good)
		if res.IsError || res.NeedsInput() || !strings.Contains(text(res), "answered by alice through an input request (round 1)") {
			t.Fatalf("the retry with the answer: %s", text(res))
		}
		var r mcp.Result
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &r)
		st := e.stateOf(t, r.LocalWorkflowID)
		if len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice" || st.Answers[0].Text != "the photo" || st.Answers[0].Round != 1 {
			t.Fatalf("answers = %+v, want one: the photo, by alice, round 1", st.Answers)
		}
		// The same retry again: round 1 was answered; refused, nothing more
		// recorded, and no second delegation started (a retry of a start
		// is the started delegation's).
		res = retry("open_parcel_claim", args, first.RequestState, good)
		var again mcp.Result
		b, _ = json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &again)
		if !strings.Contains(text(res), "refused by the delegation") || again.LocalWorkflowID != r.LocalWorkflowID {
			t.Fatalf("the retry replayed: %s, want the answer refused, for %s", text(res), r.LocalWorkflowID)
		}
		if st := e.stateOf(t, r.LocalWorkflowID); len(st.Answers) != 1 {
			t.Fatalf("answers = %+v after the replay", st.Answers)
		}
	})
}
