package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
	"github.com/a2adelegate/delegate/mcp"
)

// inspectorLauncher is the MCP Inspector's command (its launcher: --cli
// runs the CLI) in interop/inspector.
const inspectorLauncher = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

// inspectorDir is interop/inspector with the Inspector and its Node 22
// installed (`make test-interop` runs npm ci there); it returns the folder
// and that node. Missing is a skip, or a failure under DELEGATE_INTEROP=1.
// (The Inspector 2.x needs Node >= 22.19; the npm package `node` ships
// one, as for the conformance suite.)
func inspectorDir(t *testing.T) (dir, node string) {
	t.Helper()
	return node22Dir(t, "inspector", inspectorLauncher, "MCP Inspector")
}

// node22Dir is interop/FOLDER with main (a path in it) and the Node 22 of
// the npm package `node` installed (`make test-interop` runs npm ci
// there); it returns the folder and that node. Missing is a skip, or a
// failure under DELEGATE_INTEROP=1, naming what.
func node22Dir(t *testing.T, folder, main, what string) (dir, node string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "interop", folder))
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, main))
	}
	var version []byte
	if err == nil {
		version, err = exec.Command(node, "--version").Output()
	}
	if err == nil && !bytes.HasPrefix(version, []byte("v22.")) {
		err = fmt.Errorf("%s is %s, want Node 22", node, bytes.TrimSpace(version))
	}
	if err != nil {
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("%s unavailable: %v", what, err)
		}
		testutil.SkipGroup(t, testutil.GroupInterop, fmt.Sprintf("%s unavailable (make test-interop installs it): %v", what, err))
	}
	return dir, node
}

// mcpTemplatesFile writes mcpTemplates (the example templates and
// claims_scenario, claims_scenario_model: the model picks the claims
// agent's scenario) for the agent at base into dir, for `delegate mcp
// --templates`.
func mcpTemplatesFile(t *testing.T, dir, base string) string {
	t.Helper()
	f := filepath.Join(dir, "scenario-templates.json")
	writeJSON(t, f, map[string]any{"templates": mcpTemplates(t, base)})
	return f
}

// inspectorCLI runs `inspector --cli --format json` against one server in
// one protocol era.
type inspectorCLI struct {
	dir, node, home string
	era             string   // --protocol-era: legacy or modern
	server          []string // the server's options (HTTP: --server-url, --header)
	target          []string // stdio: the server's command line, after --
}

// inspectorRun is one run: its exit code (0, or the CLI's EXIT_CODES:
// 3 auth_required, 5 tool error, ...), the JSON it printed on stdout
// (the result), and its stderr (the error envelope, a stdio server's log).
type inspectorRun struct {
	exit   int
	out    map[string]any
	stderr string
}

// result is the run's "result" object.
func (r inspectorRun) result(t *testing.T) map[string]any {
	t.Helper()
	res, ok := r.out["result"].(map[string]any)
	if !ok {
		t.Fatalf("the Inspector printed no result: %v\nstderr:\n%s", r.out, tail(r.stderr, 4000))
	}
	return res
}

// structured is a tools/call result's structuredContent.
func (r inspectorRun) structured(t *testing.T) mcp.Result {
	t.Helper()
	raw, err := json.Marshal(r.result(t)["structuredContent"])
	var res mcp.Result
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil || res.LocalWorkflowID == "" {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
	return res
}

// text is a tools/call result's text content.
func (r inspectorRun) text(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	content, _ := r.result(t)["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// exec runs the CLI with args (--method ... and its options) and returns
// what it did; err is a run that could not start or ended by a signal, or
// stdout that is not one JSON object. (No t: it also runs in a goroutine.)
func (c inspectorCLI) exec(ctx context.Context, args ...string) (inspectorRun, error) {
	argv := append([]string{filepath.Join(c.dir, inspectorLauncher), "--cli", "--format", "json", "--protocol-era", c.era}, c.server...)
	argv = append(argv, args...)
	if len(c.target) > 0 {
		argv = append(append(argv, "--"), c.target...)
	}
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.node, argv...)
	cmd.Dir = c.dir
	// Its catalog, client config and OAuth store live under HOME: the
	// test's own, empty.
	cmd.Env = append(os.Environ(), "HOME="+c.home, "MCP_CATALOG_PATH="+filepath.Join(c.home, "mcp.json"),
		"MCP_CLIENT_CONFIG_PATH="+filepath.Join(c.home, "client.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := inspectorRun{stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		run.exit = exit.ExitCode()
	case err != nil:
		return run, fmt.Errorf("inspector %s: %v\nstderr:\n%s", strings.Join(args, " "), err, tail(stderr.String(), 4000))
	}
	if out := bytes.TrimSpace(stdout.Bytes()); len(out) > 0 {
		if err := json.Unmarshal(out, &run.out); err != nil {
			return run, fmt.Errorf("inspector %s printed what is not one JSON object (%v):\n%s", strings.Join(args, " "), err, tail(string(out), 4000))
		}
	}
	return run, nil
}

// run is exec, failing the test on its error.
func (c inspectorCLI) run(t *testing.T, ctx context.Context, args ...string) inspectorRun {
	t.Helper()
	r, err := c.exec(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inspector --protocol-era %s %s: exit %d", c.era, strings.Join(args, " "), r.exit)
	return r
}

// ok is run that must exit 0.
func (c inspectorCLI) ok(t *testing.T, ctx context.Context, args ...string) inspectorRun {
	t.Helper()
	r := c.run(t, ctx, args...)
	if r.exit != 0 {
		t.Fatalf("inspector --protocol-era %s %s: exit %d\nstdout: %v\nstderr:\n%s", c.era, strings.Join(args, " "), r.exit, r.out, tail(r.stderr, 4000))
	}
	return r
}

// wireRecord is one HTTP request the Inspector sent: its JSON-RPC method
// (POST), and the MCP headers it carried.
type wireRecord struct {
	HTTPMethod, RPCMethod, ProtocolVersion, SessionID string
}

// recordingProxy stands between the Inspector and `delegate mcp --addr`
// at target, passing every request through as it came and recording it.
func recordingProxy(t *testing.T, target string) (string, func() []wireRecord) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var records []wireRecord
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host}) },
		FlushInterval: -1,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := wireRecord{HTTPMethod: r.Method, ProtocolVersion: r.Header.Get("MCP-Protocol-Version"), SessionID: r.Header.Get("Mcp-Session-Id")}
		if r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			rec.RPCMethod = msg.Method
		}
		mu.Lock()
		records = append(records, rec)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path, func() []wireRecord {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(records)
	}
}

// TestInteropMCPInspector runs the MCP Inspector's CLI
// (@modelcontextprotocol/inspector 2.12, interop/inspector, on Node 22)
// against `delegate mcp` built from the tree, over stdio and over
// Streamable HTTP (a bearer token in --header), in both protocol eras:
// --protocol-era legacy (initialize, sessions: MCP 2025-11-25) and
// --protocol-era modern (server/discover, stateless requests: MCP
// 2026-07-28, where the CLI also declares the tasks extension, so each
// template tool's call is a task it follows with tasks/get). In each it
// negotiates the era's version, lists the tools, starts a delegation the
// claims agent completes at once (scenario instant), one whose agent asks
// a question (lost-parcel; the CLI declares no elicitation, so an
// operator answers it: legacy, the call returns the question and
// delegation_status follows the delegation to its end; modern, the call
// waits on its task and returns the outcome), answers one of a "model"
// template with delegation_answer until it completes, and sees a refused
// argument as a tool error (exit 5); over HTTP, a run without a token is
// auth_required (exit 3), and what went over the wire is the era's
// (sessions, or none and tasks/get).
//
// Found with it: the modern era's task came back as ttlSeconds and
// pollIntervalMilliseconds, not the extension's ttlMs and pollIntervalMs,
// and the CLI (ext-tasks 0.2.2) took it for the tool's result: it printed
// an empty result and exit 0 (TestTasksExtensionWireShape). Before MCP
// 2026-07-28 was served, --protocol-era modern failed on both transports
// ("unsupported protocol version").
func TestInteropMCPInspector(t *testing.T) {
	dir, node := inspectorDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := buildDelegate(t, ctx, tmp)
	requireMCPCommand(t, bin)

	e := setup(t)
	templates := mcpTemplatesFile(t, tmp, e.base)
	config := testutil.EmptyFile(t)
	conn := []string{"--address", e.srv.FrontendAddr(), "--namespace", e.srv.Namespace()}
	token := randomToken(t)
	httpURL := startMCPHTTP(t, bin, templates, token, conn, config)

	eras := map[string]string{"legacy": mcp2025, "modern": mcp.ModernProtocol}
	order := 1000
	for _, transport := range []string{"stdio", "http"} {
		for _, era := range []string{"legacy", "modern"} {
			t.Run(transport+"-"+era, func(t *testing.T) {
				cli := inspectorCLI{dir: dir, node: node, home: t.TempDir(), era: era}
				var wire func() []wireRecord
				if transport == "stdio" {
					// The CLI starts the server with a minimal environment
					// (docs/mcp.md): the connection in its args, the
					// config file in -e.
					cli.server = []string{"-e", "TEMPORAL_CONFIG_FILE=" + config}
					cli.target = append([]string{bin, "mcp", "--stdio", "--actor", "alice", "--templates", templates}, conn...)
				} else {
					var proxied string
					proxied, wire = recordingProxy(t, httpURL)
					cli.server = []string{"--server-url", proxied, "--header", "Authorization: Bearer " + token}
				}
				inspectorScenario(t, ctx, e, cli, eras[era], func() string { order++; return fmt.Sprintf("A-%d", order) })

				if transport == "http" {
					noToken := cli
					noToken.server = cli.server[:2]
					r := noToken.run(t, ctx, "--stored-auth-only", "--method", "tools/list")
					if r.exit != 3 || !strings.Contains(r.stderr, "auth_required") {
						t.Errorf("without a token: exit %d, stderr %s; want exit 3 auth_required", r.exit, tail(r.stderr, 500))
					}
					checkEraOnTheWire(t, era, wire())
				}
			})
		}
	}
}

// inspectorScenario is what TestInteropMCPInspector runs in each
// transport and era; orderID gives a new order id for each start.
func inspectorScenario(t *testing.T, ctx context.Context, e *env, cli inspectorCLI, version string, orderID func() string) {
	t.Helper()
	if got, _ := cli.ok(t, ctx, "--method", "initialize").result(t)["protocolVersion"].(string); got != version {
		t.Fatalf("negotiated MCP version %q, want %s", got, version)
	}

	var names []string
	tools, _ := cli.ok(t, ctx, "--method", "tools/list").result(t)["tools"].([]any)
	for _, tl := range tools {
		m, _ := tl.(map[string]any)
		name, _ := m["name"].(string)
		names = append(names, name)
		if name == "claims_scenario" {
			schema, _ := m["inputSchema"].(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			if props["wait_seconds"] == nil || props["scenario"] == nil || schema["additionalProperties"] != false {
				t.Errorf("claims_scenario's input schema = %v, want scenario, wait_seconds and additionalProperties false", schema)
			}
		}
	}
	for _, want := range []string{"claims_scenario", "claims_scenario_model", "open_parcel_claim", mcp.ToolStatus, mcp.ToolList, mcp.ToolCancel, mcp.ToolAnswer} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v, want %s among them", names, want)
		}
	}

	call := func(tool string, args ...string) inspectorRun {
		t.Helper()
		return cli.ok(t, ctx, append([]string{"--method", "tools/call", "--tool-name", tool, "--tool-arg"}, args...)...)
	}
	status := func(id string, wait int) mcp.Result {
		t.Helper()
		return call(mcp.ToolStatus, "local_workflow_id="+id, fmt.Sprintf("wait_seconds=%d", wait)).structured(t)
	}
	// At 2026-07-28 the CLI declares the tasks extension (its default),
	// and a template tool's call is then a task: the CLI follows it
	// (tasks/get) until the delegation ends, and prints the tool result.
	tasks := version == mcp.ModernProtocol

	// instant: completed within the call, started by alice.
	order := orderID()
	r := call("claims_scenario", "order_id="+order, "scenario=instant", "wait_seconds=20").structured(t)
	if r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted || len(r.Outcome.Outputs) != 1 ||
		r.Outcome.Outputs[0].Kind != "claim_opened" || !strings.Contains(string(r.Outcome.Outputs[0].Data), order) {
		t.Fatalf("instant: %+v, want completed with one claim_opened for %s", r, order)
	}
	if got := e.starterOf(t, r.LocalWorkflowID); got != "alice" {
		t.Errorf("DelegationStarter = %q, want alice", got)
	}

	// lost-parcel, a "human" template. The CLI declares no elicitation:
	// the question is not put to a human, it waits for an operator. Before
	// 2026-07-28 the call returns it; at 2026-07-28 the task stays working
	// and the call waits on, until the operator's answer ends the
	// delegation. delegation_status shows the question meanwhile.
	id, wait := startLostParcel(t, ctx, cli, "claims_scenario", orderID(), tasks)
	if st := status(id, 1); st.A2AState != "input-required" || st.Question == nil || st.Question.Round != 1 || st.Elicitation != nil || st.Outcome != nil {
		t.Fatalf("delegation_status: %+v, want the question of round 1, not elicited", st)
	}
	if _, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: "photo attached (operator)", AnsweredBy: "ops", Round: 1}); err != nil {
		t.Fatalf("the operator's answer: %v", err)
	}
	r = followToOutcome(t, ctx, cli, id, wait, tasks, status)
	if r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted || r.Outcome.InputRounds != 1 {
		t.Fatalf("after the operator's answer: %+v, want completed after one round", r)
	}

	// lost-parcel, a "model" template: the Inspector answers as the model
	// (at 2026-07-28 beside the call that waits on the task).
	id, wait = startLostParcel(t, ctx, cli, "claims_scenario_model", orderID(), tasks)
	if st := status(id, 1); st.Question == nil || st.Question.Round != 1 {
		t.Fatalf("delegation_status (model): %+v, want the agent's question", st)
	}
	answer := "photo attached: box.jpg (inspector, " + cli.era + ")"
	if a := call(mcp.ToolAnswer, "local_workflow_id="+id, "text="+answer, "round=1"); a.result(t)["isError"] == true {
		t.Fatalf("delegation_answer: %s", a.text(t))
	}
	r = followToOutcome(t, ctx, cli, id, wait, tasks, status)
	if r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted || r.Outcome.InputRounds != 1 {
		t.Fatalf("after the answer: %+v, want completed after one round", r)
	}
	if s := e.stateOf(t, id); len(s.Answers) != 1 || s.Answers[0].AnsweredBy != "alice (model)" || s.Answers[0].Text != answer {
		t.Errorf("answers = %+v, want one, %q by alice (model)", s.Answers, answer)
	}

	// A refused argument: a tool error, which the CLI exits 5 on.
	ref := cli.run(t, ctx, "--method", "tools/call", "--tool-name", "claims_scenario", "--tool-arg",
		"order_id="+orderID(), "scenario=instant", "agent_card_url=http://127.0.0.1:1/")
	if ref.exit != 5 || ref.result(t)["isError"] != true || !strings.Contains(ref.text(t), `argument "agent_card_url": unknown`) {
		t.Errorf("agent_card_url: exit %d, %v; want exit 5 and the tool error naming the argument", ref.exit, ref.out)
	}
}

// startLostParcel calls tool (scenario lost-parcel, wait_seconds 20) in
// the background and returns the delegation's id once the agent asks,
// and wait, which returns the call's run when it ended. Without tasks the
// call returns the question (checked here); with tasks it waits on: the
// id is the new delegation of tool that delegation_list shows waiting,
// and the call must still be waiting then.
func startLostParcel(t *testing.T, ctx context.Context, cli inspectorCLI, tool, order string, tasks bool) (string, func() inspectorRun) {
	t.Helper()
	list := func(args ...string) map[string]string {
		t.Helper()
		r := cli.ok(t, ctx, append([]string{"--method", "tools/call", "--tool-name", mcp.ToolList}, args...)...)
		var l struct {
			Delegations []struct {
				LocalWorkflowID string `json:"local_workflow_id"`
				Template        string `json:"template"`
			} `json:"delegations"`
		}
		raw, _ := json.Marshal(r.result(t)["structuredContent"])
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("delegation_list: %s: %v", raw, err)
		}
		ids := map[string]string{}
		for _, d := range l.Delegations {
			ids[d.LocalWorkflowID] = d.Template
		}
		return ids
	}
	var seen map[string]string
	if tasks {
		seen = list()
	}
	type ended struct {
		r   inspectorRun
		err error
	}
	done := make(chan ended, 1)
	go func() {
		r, err := cli.exec(ctx, "--method", "tools/call", "--tool-name", tool, "--tool-arg", "order_id="+order, "scenario=lost-parcel", "wait_seconds=20")
		done <- ended{r, err}
	}()
	var last *ended
	wait := func() inspectorRun {
		t.Helper()
		if last == nil {
			select {
			case d := <-done:
				last = &d
			case <-ctx.Done():
				t.Fatalf("%s: the Inspector's call did not end: %v", tool, ctx.Err())
			}
		}
		if last.err != nil || last.r.exit != 0 {
			t.Fatalf("%s: exit %d, %v\nstdout: %v\nstderr:\n%s", tool, last.r.exit, last.err, last.r.out, tail(last.r.stderr, 4000))
		}
		return last.r
	}
	if !tasks {
		run := wait()
		r := run.structured(t)
		if r.A2AState != "input-required" || r.Question == nil || r.Question.Round != 1 || !strings.Contains(r.Question.Text, "photo") || r.Elicitation != nil {
			t.Fatalf("%s lost-parcel: %+v (%s), want the agent's question, round 1, not elicited", tool, r, run.text(t))
		}
		return r.LocalWorkflowID, wait
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case d := <-done:
			t.Fatalf("%s: the call ended (exit %d, %v: %v) while its delegation waits for an answer: want it to wait on the task", tool, d.r.exit, d.err, d.r.out)
		default:
		}
		for id, tmpl := range list("--tool-arg", "state=input-required") {
			if _, old := seen[id]; !old && tmpl == tool {
				return id, wait
			}
		}
	}
	t.Fatalf("%s: no new delegation waiting for an answer after a minute", tool)
	return "", nil
}

// followToOutcome is the delegation id's result once it ended: with
// tasks, the call's own (the task's result); without, delegation_status
// until the outcome is there.
func followToOutcome(t *testing.T, ctx context.Context, cli inspectorCLI, id string, wait func() inspectorRun, tasks bool, status func(string, int) mcp.Result) mcp.Result {
	t.Helper()
	if tasks {
		r := wait().structured(t)
		if r.LocalWorkflowID != id {
			t.Fatalf("the task's result is %s's, want %s's", r.LocalWorkflowID, id)
		}
		return r
	}
	deadline := time.Now().Add(time.Minute)
	r := status(id, 10)
	for r.Outcome == nil && time.Now().Before(deadline) {
		r = status(id, 10)
	}
	return r
}

// checkEraOnTheWire checks what the Inspector sent over HTTP in era:
// legacy opens a session (initialize, then Mcp-Session-Id on every
// request), and never ends it (no DELETE: docs/mcp.md says what follows,
// and this fails when a later Inspector does end it); modern has none (no
// initialize, no Mcp-Session-Id, each POST carrying MCP-Protocol-Version
// 2026-07-28).
func checkEraOnTheWire(t *testing.T, era string, records []wireRecord) {
	t.Helper()
	var methods []string
	sessions, deletes := 0, 0
	for _, r := range records {
		methods = append(methods, r.HTTPMethod+" "+r.RPCMethod)
		if r.SessionID != "" {
			sessions++
		}
		if r.HTTPMethod == http.MethodDelete {
			deletes++
		}
		if era == "modern" && r.HTTPMethod == http.MethodPost && r.ProtocolVersion != mcp.ModernProtocol {
			t.Errorf("modern: a POST %s with MCP-Protocol-Version %q, want %s", r.RPCMethod, r.ProtocolVersion, mcp.ModernProtocol)
		}
	}
	t.Logf("%s over HTTP: %d requests, %d in a session: %v", era, len(records), sessions, methods)
	switch era {
	case "legacy":
		if !slices.Contains(methods, "POST initialize") || sessions == 0 || slices.Contains(methods, "POST server/discover") {
			t.Errorf("legacy: requests %v, %d with a session; want initialize and sessions", methods, sessions)
		}
		if slices.Contains(methods, "POST tasks/get") {
			t.Errorf("legacy: requests %v; want no tasks/get (no call was task-augmented)", methods)
		}
		if deletes != 0 {
			t.Errorf("legacy: the Inspector ended %d sessions (DELETE): it left each open before; update docs/mcp.md (Protocol versions and hosts tried)", deletes)
		}
	case "modern":
		if slices.Contains(methods, "POST initialize") || sessions != 0 || !slices.Contains(methods, "POST server/discover") {
			t.Errorf("modern: requests %v, %d with a session; want server/discover and no session", methods, sessions)
		}
		if !slices.Contains(methods, "POST tasks/get") {
			t.Errorf("modern: requests %v; want tasks/get (the template tools' calls are tasks)", methods)
		}
	}
}
