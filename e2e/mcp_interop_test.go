package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// mcpClientDir is the MCP client on the official TypeScript SDK
// (interop/mcp, `make test-interop` installs it). Missing node or SDK is a
// skip, or a failure under DELEGATE_INTEROP=1.
func mcpClientDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "interop", "mcp"))
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("MCP interop client unavailable: %v", err)
		}
		testutil.SkipGroup(t, testutil.GroupInterop, fmt.Sprintf("MCP interop client unavailable (make test-interop installs it): %v", err))
	}
	return dir
}

// mcpProtocol is the MCP version the server speaks (issue 30) and
// @modelcontextprotocol/sdk 1.32 asks for first.
const mcpProtocol = "2025-11-25"

// mcpLine is one JSON line the client printed.
type mcpLine map[string]any

func (l mcpLine) str(k string) string { s, _ := l[k].(string); return s }

// mcpLines is what one run of the client printed.
type mcpLines []mcpLine

// step is the first line of that step; missing is a test failure.
func (ls mcpLines) step(t *testing.T, name string) mcpLine {
	t.Helper()
	for _, l := range ls {
		if l.str("step") == name {
			return l
		}
	}
	t.Fatalf("the MCP client printed no %q step:\n%s", name, ls)
	return nil
}

// index is the position of the first line of that step, or -1.
func (ls mcpLines) index(name string) int {
	for i, l := range ls {
		if l.str("step") == name {
			return i
		}
	}
	return -1
}

func (ls mcpLines) String() string {
	var b strings.Builder
	for _, l := range ls {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// mcpClient runs interop/mcp/client.mjs.
type mcpClient struct {
	dir string
}

// command is `node client.mjs scenario` with params in MCP_INTEROP.
func (m mcpClient) command(ctx context.Context, scenario string, params map[string]any) *exec.Cmd {
	raw, err := json.Marshal(params)
	if err != nil {
		panic(err)
	}
	cmd := exec.CommandContext(ctx, "node", "client.mjs", scenario)
	cmd.Dir = m.dir
	cmd.Env = append(os.Environ(), "MCP_INTEROP="+string(raw))
	return cmd
}

// run runs a scenario to its end; a non-zero exit fails the test with
// what the client printed and the server's stderr (stdio).
func (m mcpClient) run(t *testing.T, ctx context.Context, scenario string, params map[string]any) mcpLines {
	t.Helper()
	cmd := m.command(ctx, scenario, params)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	lines := parseLines(t, stdout.Bytes())
	if err != nil {
		t.Fatalf("MCP client %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, lines, tail(stderr.String(), 4000))
	}
	t.Logf("MCP client %s:\n%s", scenario, lines)
	// (A client joining a session with session_id negotiates nothing.)
	if v := lines.step(t, "initialized").str("protocol"); v != mcpProtocol && params["session_id"] == nil {
		t.Errorf("negotiated MCP version %q, want %s (the SDK's latest, which the server speaks)", v, mcpProtocol)
	}
	return lines
}

func parseLines(t *testing.T, out []byte) mcpLines {
	t.Helper()
	var lines mcpLines
	for _, raw := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var l mcpLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("MCP client printed a line that is not JSON: %q", raw)
		}
		lines = append(lines, l)
	}
	return lines
}

// buildDelegate builds cmd/delegate into dir and returns its path.
func buildDelegate(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "delegate")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/a2adelegate/delegate/cmd/delegate").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// requireMCPCommand skips when the binary has no `mcp` command (a tree
// without issue 30's server), or fails under DELEGATE_INTEROP=1.
func requireMCPCommand(t *testing.T, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "mcp", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--templates") {
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("`delegate mcp` is not in this build: %v\n%s", err, tail(string(out), 500))
		}
		t.Skipf("`delegate mcp` is not in this build (issue 30's server); nothing to test against: %v\n%s", err, tail(string(out), 500))
	}
}

// interopMCPTemplates writes the templates file: open_claim (answered by the
// human, through elicitation) and open_claim_model (answered by the model,
// delegation_answer), both for the claims agent at base. The claims agent
// takes the scenario from the message's data, which the parameters become:
// {"order_id": ...} alone is its default scenario, lost-parcel, which asks
// for a photo of the box (INPUT_REQUIRED) and completes on any follow-up
// with one claim_opened artifact (docs/claims-agent.md).
func interopMCPTemplates(t *testing.T, dir, base string) string {
	t.Helper()
	params := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"order_id": map[string]any{"type": "string", "pattern": "^A-[0-9]{4}$", "description": "the order whose parcel was lost"},
		},
		"required": []string{"order_id"},
	}
	tmpl := func(name, answer string) map[string]any {
		return map[string]any{
			"name":            name,
			"description":     "Open a claim for a lost parcel with the claims agent; it may ask for a photo of the box.",
			"agent_card_url":  base + "/.well-known/agent-card.json",
			"skill":           "open-claim",
			"purpose":         "open a claim for a lost parcel",
			"allowed_outputs": []string{"claim_opened"},
			"deadline_after":  "10m",
			"text":            "My parcel for order {{order_id}} never arrived.",
			"parameters":      params,
			"answer":          answer,
		}
	}
	f := filepath.Join(dir, "templates.json")
	writeJSON(t, f, map[string]any{"templates": []any{tmpl("open_claim", "human"), tmpl("open_claim_model", "model")}})
	return f
}

// writeJSON writes v to path through a rename, so that a reader sees the
// old file or the new one, never half of it.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// freeAddr is a loopback address nothing listens on (it did a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// answeredLostParcel checks a delegation that the MCP client started and
// answered: completed with one claim for A-1001, one answer, given by
// answeredBy with text answer, and started by starter.
func (e *env) answeredLostParcel(t *testing.T, ctx context.Context, id, starter, answeredBy, answer string) {
	t.Helper()
	h := dclient.Get(e.c, id)
	out, err := h.Outcome(ctx)
	if err != nil {
		t.Fatalf("Outcome(%s): %v", id, err)
	}
	if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 || out.Outputs[0].Kind != "claim_opened" || out.InputRounds != 1 {
		t.Errorf("outcome = %s %+v outputs %+v rounds %d, want completed with one claim_opened after one round", out.Status, out.Error, out.Outputs, out.InputRounds)
	} else if !strings.Contains(string(out.Outputs[0].Data), `"A-1001"`) {
		t.Errorf("claim = %s, want order A-1001 (the template's parameter)", out.Outputs[0].Data)
	}
	s, err := h.State(ctx)
	if err != nil {
		t.Fatalf("State(%s): %v", id, err)
	}
	if len(s.Answers) != 1 || s.Answers[0].AnsweredBy != answeredBy || s.Answers[0].Text != answer {
		t.Errorf("answers = %+v, want one %q by %q", s.Answers, answer, answeredBy)
	}
	if got := e.starterOf(t, id); got != starter {
		t.Errorf("%s = %q, want %q", contracts.SearchAttributeDelegationStarter, got, starter)
	}
}

// TestInteropMCP drives `delegate mcp` with an MCP client this project did
// not write (the official TypeScript SDK, interop/mcp) over stdio and
// Streamable HTTP, through the embedded Temporal server, a worker and the
// claims agent: the probes of issue 30's Tests section.
func TestInteropMCP(t *testing.T) {
	dir := mcpClientDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := buildDelegate(t, ctx, tmp)
	requireMCPCommand(t, bin)

	e := setup(t)
	templates := interopMCPTemplates(t, tmp, e.base)
	serverEnv := map[string]string{"TEMPORAL_CONFIG_FILE": testutil.EmptyFile(t)}
	conn := []string{"--address", e.srv.FrontendAddr(), "--namespace", e.srv.Namespace()}
	mc := mcpClient{dir: dir}
	stdio := func(actor string) map[string]any {
		args := append([]string{"mcp", "--stdio", "--actor", actor, "--templates", templates}, conn...)
		return map[string]any{"transport": "stdio", "command": bin, "args": args, "env": serverEnv}
	}
	with := func(base map[string]any, kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	order := map[string]any{"order_id": "A-1001"}
	const (
		humanAnswer = "photo attached: box.jpg (taken by alice)"
		modelAnswer = "the model says: photo at https://example.invalid/box.jpg"
	)
	var notFoundText string // delegation_status of an id that never existed

	t.Run("stdio", func(t *testing.T) {
		t.Run("tools", func(t *testing.T) {
			ls := mc.run(t, ctx, "tools", with(stdio("alice"),
				"expect_tools", []string{"open_claim", "open_claim_model", "delegation_status", "delegation_list", "delegation_cancel", "delegation_answer"},
				"expect_properties", map[string][]string{
					"open_claim": {"order_id", "wait_seconds"}, "open_claim_model": {"order_id", "wait_seconds"},
					"delegation_status": {"local_workflow_id"}, "delegation_answer": {"local_workflow_id", "text"},
					"delegation_cancel": {"local_workflow_id", "reason"},
				}))
			tools, _ := ls.step(t, "tools")["tools"].([]any)
			if len(tools) != 6 {
				// One tool per template and the four fixed ones: nothing
				// that sends elsewhere.
				t.Errorf("%d tools listed, want 6: %v", len(tools), tools)
			}
			for _, raw := range tools {
				tool, _ := raw.(map[string]any)
				if tool["name"] != "open_claim" {
					continue
				}
				schema, _ := tool["inputSchema"].(map[string]any)
				props, _ := schema["properties"].(map[string]any)
				if len(props) != 2 {
					t.Errorf("open_claim input schema properties = %v, want order_id (the template's) and wait_seconds only", props)
				}
				if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "order_id" {
					t.Errorf("open_claim required = %v, want [order_id]", schema["required"])
				}
				// Absent hints mean the same (MCP's ToolAnnotations defaults).
				ann, _ := tool["annotations"].(map[string]any)
				if ann["readOnlyHint"] == true || ann["openWorldHint"] == false {
					t.Errorf("open_claim annotations = %v, want not read-only, open world", ann)
				}
				for _, forbidden := range []string{"agent_card_url", "skill", "answered_by", "deadline"} {
					if _, ok := props[forbidden]; ok {
						t.Errorf("open_claim offers %q to the model", forbidden)
					}
				}
			}
		})

		t.Run("human-answers-through-elicitation", func(t *testing.T) {
			// A start that waits asks the question itself (over HTTP below,
			// delegation_status does).
			ls := mc.run(t, ctx, "human", with(stdio("alice"),
				"tool", "open_claim", "arguments", with(order, "wait_seconds", 10), "elicitation", true, "answer", humanAnswer))
			if i, j := ls.index("elicitation"), ls.index("started"); i < 0 || j < 0 || i > j {
				t.Errorf("the elicitation (line %d) did not come during the start that waits (line %d)", i, j)
			}
			el := ls.step(t, "elicitation")
			if !strings.Contains(el.str("message"), "photo of the box") {
				t.Errorf("elicitation message = %q, want the agent's question (photo of the box)", el.str("message"))
			}
			// Exactly the interface's form: one required string "answer".
			schema, _ := json.Marshal(el["requestedSchema"])
			if want := `{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"}`; string(schema) != want {
				t.Errorf("requestedSchema = %s, want %s", schema, want)
			}
			id := ls.step(t, "started").str("local_workflow_id")
			e.answeredLostParcel(t, ctx, id, "alice", "alice", humanAnswer)
		})

		t.Run("human-declines-then-an-operator-answers", func(t *testing.T) {
			ls := mc.run(t, ctx, "decline", with(stdio("alice"),
				"tool", "open_claim", "arguments", order, "elicitation", true, "elicit_action", "decline"))
			id := ls.step(t, "waiting").str("local_workflow_id")
			// The delegation waits for an operator, who answers from the CLI
			// (package client) under their own name.
			if s := e.stateOf(t, id); s.Question == nil || len(s.Answers) != 0 {
				t.Fatalf("after the decline: question %+v, answers %+v; want waiting, no answer", s.Question, s.Answers)
			}
			if _, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: humanAnswer, AnsweredBy: "operator"}); err != nil {
				t.Fatalf("Answer() error = %v", err)
			}
			e.answeredLostParcel(t, ctx, id, "alice", "operator", humanAnswer)
		})

		var modelID string
		t.Run("model-answers-through-delegation_answer", func(t *testing.T) {
			ls := mc.run(t, ctx, "model", with(stdio("alice"),
				"tool", "open_claim_model", "arguments", with(order, "wait_seconds", 10), "elicitation", true, "answer", modelAnswer,
				"subscribe", true))
			modelID = ls.step(t, "started").str("local_workflow_id")
			// The delegation is also a resource the client read and was
			// told about when it changed.
			if rt, _ := json.Marshal(ls.step(t, "resource-templates")["resourceTemplates"]); !strings.Contains(string(rt), `"uriTemplate":"delegation://{id}"`) {
				t.Errorf("resource templates = %s, want delegation://{id}", rt)
			}
			if mt := ls.step(t, "resource-read").str("mimeType"); mt != "application/json" {
				t.Errorf("resource mimeType = %q, want application/json", mt)
			}
			if u := ls.step(t, "resource-updated").str("uri"); u != "delegation://"+modelID {
				t.Errorf("resource updated = %q, want delegation://%s", u, modelID)
			}
			e.answeredLostParcel(t, ctx, modelID, "alice", "alice (model)", modelAnswer)
		})

		t.Run("refusals", func(t *testing.T) {
			answerID := modelID
			if answerID == "" {
				answerID = "no-such-delegation"
			}
			probe := func(tool string, args map[string]any, contains string) map[string]any {
				return map[string]any{"tool": tool, "arguments": args, "error_contains": contains}
			}
			ls := mc.run(t, ctx, "probes", with(stdio("alice"), "probes", []any{
				probe("open_claim", with(order, "agent_card_url", "http://127.0.0.1:1/.well-known/agent-card.json"), "agent_card_url"),
				probe("open_claim", with(order, "skill", "refund"), "skill"),
				probe("open_claim", with(order, "wait_seconds", 31), "wait_seconds"),
				probe("open_claim", map[string]any{}, "order_id"),
				probe("open_claim", map[string]any{"order_id": "../../etc"}, "order_id"),
				probe("delegation_answer", map[string]any{"local_workflow_id": answerID, "text": "t", "answered_by": "mallory"}, "answered_by"),
				probe("delegation_status", map[string]any{"local_workflow_id": "no-such-delegation"}, "not found"),
			}))
			for _, l := range ls {
				if l.str("step") == "probe" && l.str("tool") == "delegation_status" {
					notFoundText = l.str("text")
				}
			}
		})
	})

	t.Run("http", func(t *testing.T) {
		aliceToken, bobToken := randomToken(t), randomToken(t)
		sum := sha256.Sum256([]byte(aliceToken))
		tokens := filepath.Join(tmp, "tokens.json")
		aliceEntry := map[string]any{"actor": "alice", "sha256": hex.EncodeToString(sum[:])}
		bobEntry := map[string]any{"actor": "bob", "token": bobToken}
		writeJSON(t, tokens, map[string]any{"tokens": []any{aliceEntry, bobEntry}})

		addr := freeAddr(t)
		url := "http://" + addr + "/mcp"
		cmd := exec.Command(bin, append([]string{"mcp", "--addr", addr, "--tokens", tokens, "--templates", templates}, conn...)...)
		cmd.Env = append(os.Environ(), "TEMPORAL_CONFIG_FILE="+serverEnv["TEMPORAL_CONFIG_FILE"])
		var logs testutil.LockedBuffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			if t.Failed() {
				t.Logf("delegate mcp --addr log:\n%s", tail(logs.String(), 4000))
			}
		})

		// Ready when a request without a token is refused as the spec
		// says (401 with a Bearer challenge).
		hc := &http.Client{Timeout: 2 * time.Second}
		waitFor(t, "delegate mcp listening", time.Minute, func() (bool, string) {
			select {
			case <-exited:
				t.Fatalf("delegate mcp --addr exited:\n%s", tail(logs.String(), 4000))
			default:
			}
			resp, err := hc.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if err != nil {
				return false, err.Error()
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("POST /mcp without a token = %d, WWW-Authenticate %q; want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			return true, ""
		})
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer not-"+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := hc.Do(req); err != nil {
			t.Fatal(err)
		} else {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST /mcp with an unknown token = %d, want 401", resp.StatusCode)
			}
		}

		alice := map[string]any{"transport": "http", "url": url, "token": aliceToken}
		bob := map[string]any{"transport": "http", "url": url, "token": bobToken}

		// Alice starts; her client has no elicitation, so the question
		// comes back in delegation_status and the delegation waits.
		ls := mc.run(t, ctx, "start", with(alice, "tool", "open_claim", "arguments", order, "until_question", true))
		id := ls.step(t, "started").str("local_workflow_id")

		t.Run("another-actor-sees-nothing", func(t *testing.T) {
			probe := func(tool string, args map[string]any) map[string]any {
				return map[string]any{"tool": tool, "arguments": args, "error_contains": "not found"}
			}
			ls := mc.run(t, ctx, "probes", with(bob, "probes", []any{
				probe("delegation_status", map[string]any{"local_workflow_id": id}),
				probe("delegation_answer", map[string]any{"local_workflow_id": id, "text": "bob answers"}),
				probe("delegation_cancel", map[string]any{"local_workflow_id": id, "reason": "bob cancels"}),
				map[string]any{"tool": "delegation_list", "arguments": map[string]any{}, "absent_id": id},
				map[string]any{"resource": "delegation://" + id, "error_contains": "not found"},
			}))
			if notFoundText != "" {
				got := strings.ReplaceAll(ls.step(t, "probe").str("text"), id, "ID")
				want := strings.ReplaceAll(notFoundText, "no-such-delegation", "ID")
				if got != want {
					t.Errorf("bob's delegation_status of alice's delegation = %q; a nonexistent id's = %q (want the same text)", got, want)
				}
			}
			s, err := dclient.Get(e.c, id).State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s.A2AState != "input-required" || s.Question == nil || len(s.Answers) != 0 || s.CancelReason != "" {
				t.Errorf("after bob: state %s, answers %+v, cancel reason %q; want input-required, untouched", s.A2AState, s.Answers, s.CancelReason)
			}
		})

		t.Run("model-may-not-answer-a-human-template", func(t *testing.T) {
			mc.run(t, ctx, "probes", with(alice, "probes", []any{map[string]any{"tool": "delegation_answer",
				"arguments": map[string]any{"local_workflow_id": id, "text": "the model guesses"}, "error_contains": "from a human"}}))
			if s := e.stateOf(t, id); s.Question == nil || len(s.Answers) != 0 {
				t.Errorf("after the refused answer: question %+v, answers %+v; want still waiting, no answer", s.Question, s.Answers)
			}
		})

		t.Run("human-answers-through-elicitation", func(t *testing.T) {
			mc.run(t, ctx, "human", with(alice, "id", id, "elicitation", true, "answer", humanAnswer))
			e.answeredLostParcel(t, ctx, id, "alice", "alice", humanAnswer)
		})

		t.Run("cancel", func(t *testing.T) {
			const reason = "the customer found the parcel"
			ls := mc.run(t, ctx, "start", with(alice, "tool", "open_claim", "arguments", order, "until_question", true))
			other := ls.step(t, "started").str("local_workflow_id")
			mc.run(t, ctx, "probes", with(alice, "probes", []any{map[string]any{"tool": "delegation_cancel",
				"arguments": map[string]any{"local_workflow_id": other, "reason": reason}, "expect_status": "canceled"}}))
			out, err := dclient.Get(e.c, other).Outcome(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The recorded reason names who canceled (the actor) and why.
			if s := e.stateOf(t, other); out.Status != contracts.StatusCanceled || !strings.Contains(s.CancelReason, reason) || !strings.Contains(s.CancelReason, "alice") {
				t.Errorf("outcome %s, cancel reason %q; want canceled, the reason naming alice and %q", out.Status, s.CancelReason, reason)
			}
		})

		t.Run("token-revoked-mid-session", func(t *testing.T) {
			cmd := mc.command(ctx, "revoke", alice)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr testutil.LockedBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			ready := make(chan string, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					out.Write(sc.Bytes())
					out.WriteByte('\n')
					var l mcpLine
					if json.Unmarshal(sc.Bytes(), &l) == nil && l.str("step") == "ready" {
						ready <- l.str("session")
					}
				}
			}()
			var session string
			select {
			case session = <-ready:
			case <-done:
			case <-time.After(time.Minute):
			}
			// Bob cannot use alice's open session with his own token.
			if session != "" {
				mc.run(t, ctx, "intrude", with(bob, "session_id", session))
			} else {
				t.Error("alice's client printed no session id")
			}
			// The operator removes alice's token while her session is open.
			writeJSON(t, tokens, map[string]any{"tokens": []any{bobEntry}})
			_, _ = io.WriteString(stdin, "go\n")
			_ = stdin.Close()
			<-done
			err = cmd.Wait()
			ls := parseLines(t, out.Bytes())
			if err != nil {
				t.Fatalf("MCP client revoke: %v\nstdout:\n%s\nstderr:\n%s", err, ls, tail(stderr.String(), 4000))
			}
			t.Logf("MCP client revoke:\n%s", ls)
			ls.step(t, "refused")
			// bob's token still works after the file changed.
			mc.run(t, ctx, "probes", with(bob, "probes", []any{map[string]any{"tool": "delegation_list", "arguments": map[string]any{}, "absent_id": id}}))
		})
	})

	// Every delegation alice started is filed under her name, and the
	// refused calls started none.
	t.Run("starter-search-attribute", func(t *testing.T) {
		q := fmt.Sprintf("%s = 'alice'", contracts.SearchAttributeDelegationStarter)
		var n int
		waitFor(t, q, 30*time.Second, func() (bool, string) {
			resp, err := e.c.WorkflowService().ListWorkflowExecutions(ctx, listRequest(e.srv.Namespace(), q))
			if err != nil {
				return false, err.Error()
			}
			n = len(resp.GetExecutions())
			return n >= 5, fmt.Sprint(n, " listed")
		})
		if n != 5 {
			t.Errorf("%s lists %d delegations, want 5 (stdio: human, declined, model; http: human, canceled)", q, n)
		}
	})
}
