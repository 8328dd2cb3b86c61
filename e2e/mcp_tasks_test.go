package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/mcp"
)

// rawMCP is a JSON-RPC client of `delegate mcp`'s stdio transport written
// by hand (newline-delimited messages), so that the test sends what the
// go-sdk's client cannot: params.task, tasks/*. It answers the server's
// elicitation/create with elicit and records each one's _meta.
type rawMCP struct {
	t      *testing.T
	w      io.Writer
	r      *bufio.Reader
	next   int
	elicit func(params json.RawMessage) any
	metas  []json.RawMessage
}

type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// serveRaw serves s over pipes (mcp.Server.ServeIO, the stdio code path)
// and returns a raw client of it.
func serveRaw(t *testing.T, s *mcp.Server) *rawMCP {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ServeIO(ctx, inR, outW, 1<<20)
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		cancel()
		<-done
	})
	return &rawMCP{t: t, w: inW, r: bufio.NewReader(outR)}
}

func (c *rawMCP) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// call sends method with params and reads until its response, answering
// the server's requests meanwhile. Result or error.
func (c *rawMCP) call(method string, params any) (json.RawMessage, *rpcError) {
	c.t.Helper()
	c.next++
	id := c.next
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	lines := make(chan []byte)
	go func() {
		for {
			line, err := c.r.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &m) == nil && string(m.ID) == fmt.Sprint(id) {
				close(lines)
				return
			}
		}
	}()
	timeout := time.After(3 * time.Minute)
	for {
		var line []byte
		var ok bool
		select {
		case line, ok = <-lines:
		case <-timeout:
			c.t.Fatalf("%s: no response in 3 minutes", method)
		}
		if !ok {
			c.t.Fatalf("%s: the server closed its output", method)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("%s: a line that is not JSON: %q", method, line)
		}
		switch {
		case m.Method == "elicitation/create" && len(m.ID) > 0:
			var p struct {
				Meta json.RawMessage `json:"_meta"`
			}
			_ = json.Unmarshal(m.Params, &p)
			c.metas = append(c.metas, p.Meta)
			c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": c.elicit(m.Params)})
		case m.Method != "":
			// A notification (progress, ...), or a request this client
			// does not serve.
			if len(m.ID) > 0 {
				c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "not here"}})
			}
		case string(m.ID) == fmt.Sprint(id):
			return m.Result, m.Error
		}
	}
}

// must is call that fails the test on an error.
func (c *rawMCP) must(method string, params any, into any) {
	c.t.Helper()
	res, rerr := c.call(method, params)
	if rerr != nil {
		c.t.Fatalf("%s: error %v", method, rerr)
	}
	if into != nil {
		if err := json.Unmarshal(res, into); err != nil {
			c.t.Fatalf("%s: %s: %v", method, res, err)
		}
	}
}

// refusedWith asserts method fails with code, its message holding want.
func (c *rawMCP) refusedWith(method string, params any, code int64, want string) {
	c.t.Helper()
	res, rerr := c.call(method, params)
	if rerr == nil {
		c.t.Fatalf("%s: result %s, want error %d", method, res, code)
	}
	if rerr.Code != code || !strings.Contains(rerr.Message, want) {
		c.t.Fatalf("%s: error %v, want %d saying %q", method, rerr, code, want)
	}
}

func (c *rawMCP) initialize(version string) json.RawMessage {
	c.t.Helper()
	return c.initializeWith(version, map[string]any{"elicitation": map[string]any{}})
}

func (c *rawMCP) initializeWith(version string, caps map[string]any) json.RawMessage {
	c.t.Helper()
	res, rerr := c.call("initialize", map[string]any{"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if rerr != nil {
		c.t.Fatalf("initialize: %v", rerr)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return res
}

// untilTask polls tasks/get until the task's status is want.
func (c *rawMCP) untilTask(id, want string) mcp.Task {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var task mcp.Task
	for time.Now().Before(deadline) {
		c.must("tasks/get", map[string]any{"taskId": id}, &task)
		if task.Status == want {
			return task
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("task %s: status %s (%s), want %s", id, task.Status, task.StatusMessage, want)
	return task
}

// TestMCPTasks: a task-augmented tools/call of a template tool over the
// stdio transport (MCP 2025-11-25 tasks): the capability and each tool's
// taskSupport are declared; the call returns a task bound to the
// delegation; tasks/get follows it to input_required; tasks/result puts
// the question to the human through elicitation related to the task,
// sends the answer as the actor and returns the tool result once the
// delegation completed; tasks/list lists it; an ended task is not
// cancelled; a slow one is, with the remote task; another actor, a fixed
// tool and bad arguments are refused; a 2025-06-18 session gets no tasks.
// (Before: params.task was dropped and tasks/* were unknown methods.)
func TestMCPTasks(t *testing.T) {
	e := setup(t)
	alice := serveRaw(t, e.mcpServer(t, "alice"))
	alice.elicit = func(json.RawMessage) any {
		return map[string]any{"action": "accept", "content": map[string]any{"answer": "photo attached: box.jpg"}}
	}
	var init struct {
		Capabilities struct {
			Tasks map[string]json.RawMessage `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(alice.initialize("2025-11-25"), &init); err != nil {
		t.Fatal(err)
	}
	if string(init.Capabilities.Tasks["requests"]) != `{"tools":{"call":{}}}` || init.Capabilities.Tasks["list"] == nil || init.Capabilities.Tasks["cancel"] == nil {
		t.Fatalf("capabilities.tasks = %v", init.Capabilities.Tasks)
	}
	var tools struct {
		Tools []struct {
			Name      string          `json:"name"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	alice.must("tools/list", map[string]any{}, &tools)
	for _, tool := range tools.Tools {
		template := !strings.HasPrefix(tool.Name, "delegation_")
		if got := string(tool.Execution); (template && got != `{"taskSupport":"optional"}`) || (!template && got != "") {
			t.Errorf("tool %s: execution %s", tool.Name, got)
		}
	}
	alice.refusedWith("tools/call", map[string]any{"name": mcp.ToolStatus, "arguments": map[string]any{"local_workflow_id": "x"}, "task": map[string]any{}},
		-32601, "method not found") // the go-sdk writes every -32601's message
	alice.refusedWith("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-1", "scenario": "nope"}, "task": map[string]any{}},
		-32602, `argument "scenario"`)
	alice.refusedWith("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-1", "scenario": "instant"}, "task": "soon"},
		-32602, "task: must be an object")

	var created struct {
		Meta map[string]json.RawMessage `json:"_meta"`
		Task mcp.Task                   `json:"task"`
	}
	alice.must("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-1001", "scenario": "lost-parcel"}, "task": map[string]any{"ttl": 60000}}, &created)
	id := created.Task.TaskID
	if !strings.HasPrefix(id, mcp.IDPrefix+"claims_scenario.") || created.Task.Status != mcp.TaskWorking || created.Task.PollInterval != mcp.TaskPollInterval || created.Meta["io.modelcontextprotocol/model-immediate-response"] == nil {
		t.Fatalf("created %+v", created)
	}
	if got := e.starterOf(t, id); got != "alice" {
		t.Fatalf("DelegationStarter = %q", got)
	}
	asked := alice.untilTask(id, mcp.TaskInputRequired)
	if !strings.Contains(asked.StatusMessage, "round 1") || asked.CreatedAt != created.Task.CreatedAt || asked.LastUpdatedAt < asked.CreatedAt {
		t.Fatalf("input_required task %+v (created %s)", asked, created.Task.CreatedAt)
	}
	var list struct {
		Tasks []mcp.Task `json:"tasks"`
	}
	alice.must("tasks/list", map[string]any{}, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != id || list.Tasks[0].Status != mcp.TaskInputRequired {
		t.Fatalf("tasks/list = %+v", list.Tasks)
	}

	var payload struct {
		Meta              map[string]json.RawMessage `json:"_meta"`
		IsError           bool                       `json:"isError"`
		StructuredContent mcp.Result                 `json:"structuredContent"`
	}
	alice.must("tasks/result", map[string]any{"taskId": id}, &payload)
	related := `{"taskId":"` + id + `"}`
	if payload.IsError || payload.StructuredContent.Outcome == nil || payload.StructuredContent.Outcome.Status != contracts.StatusCompleted || string(payload.Meta["io.modelcontextprotocol/related-task"]) != related {
		t.Fatalf("tasks/result = %+v", payload)
	}
	if len(alice.metas) != 1 || !strings.Contains(string(alice.metas[0]), related) {
		t.Fatalf("elicitations' _meta %s, want one related to the task", alice.metas)
	}
	st := e.stateOf(t, id)
	if len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice" || st.Answers[0].Round != 1 {
		t.Fatalf("answers %+v", st.Answers)
	}
	alice.untilTask(id, mcp.TaskCompleted)
	alice.refusedWith("tasks/cancel", map[string]any{"taskId": id}, -32602, "terminal status completed")

	// A slow delegation, cancelled: the task is cancelled at once, the
	// delegation ends canceled with its remote task, and tasks/result
	// returns that outcome as an error result.
	alice.must("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-2", "scenario": "slow"}, "task": map[string]any{}}, &created)
	slow := created.Task.TaskID
	alice.untilTask(slow, mcp.TaskWorking)
	var cancelled mcp.Task
	alice.must("tasks/cancel", map[string]any{"taskId": slow}, &cancelled)
	if cancelled.Status != mcp.TaskCancelled {
		t.Fatalf("tasks/cancel = %+v", cancelled)
	}
	if later := alice.untilTask(slow, mcp.TaskCancelled); later.LastUpdatedAt < cancelled.LastUpdatedAt {
		t.Fatalf("lastUpdatedAt went back: %s after %s", later.LastUpdatedAt, cancelled.LastUpdatedAt)
	}
	alice.must("tasks/result", map[string]any{"taskId": slow}, &payload)
	if !payload.IsError || payload.StructuredContent.Outcome == nil || payload.StructuredContent.Outcome.Status != contracts.StatusCanceled {
		t.Fatalf("tasks/result of the cancelled task = %+v", payload)
	}
	if st := e.stateOf(t, slow); !strings.Contains(st.CancelReason, "alice through MCP tasks/cancel") {
		t.Fatalf("cancel reason %q", st.CancelReason)
	}

	// A question nobody this session reaches can answer through a form
	// leaves the task working, saying who answers: a model template's
	// (the model, with delegation_answer), and a human template's for a
	// client without elicitation (an operator).
	alice.must("tools/call", map[string]any{"name": "claims_scenario_model", "arguments": map[string]any{"order_id": "A-4", "scenario": "lost-parcel"}, "task": map[string]any{}}, &created)
	waitFor(t, "the model template's question", time.Minute, func() (bool, string) {
		var task mcp.Task
		alice.must("tasks/get", map[string]any{"taskId": created.Task.TaskID}, &task)
		return task.Status == mcp.TaskWorking && strings.Contains(task.StatusMessage, mcp.ToolAnswer), task.Status + " " + task.StatusMessage
	})
	mute := serveRaw(t, e.mcpServer(t, "alice"))
	mute.initializeWith("2025-11-25", map[string]any{})
	mute.must("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-5", "scenario": "lost-parcel"}, "task": map[string]any{}}, &created)
	waitFor(t, "the question for a client without elicitation", time.Minute, func() (bool, string) {
		var task mcp.Task
		mute.must("tasks/get", map[string]any{"taskId": created.Task.TaskID}, &task)
		return task.Status == mcp.TaskWorking && strings.Contains(task.StatusMessage, "an operator answers it"), task.Status + " " + task.StatusMessage
	})

	// Another actor's task is one that does not exist.
	bob := serveRaw(t, e.mcpServer(t, "bob"))
	bob.initialize("2025-11-25")
	bob.refusedWith("tasks/get", map[string]any{"taskId": id}, -32602, "Task not found")
	bob.refusedWith("tasks/result", map[string]any{"taskId": id}, -32602, "Task not found")
	bob.refusedWith("tasks/cancel", map[string]any{"taskId": slow}, -32602, "Task not found")
	bob.refusedWith("tasks/get", map[string]any{}, -32602, "taskId: required")
	bob.refusedWith("tasks/list", map[string]any{"cursor": "!!"}, -32602, "cursor")
	// A cursor the server did not seal (before: handed to the visibility
	// store, which took 10 s to fail, or paged from a forged position).
	bob.refusedWith("tasks/list", map[string]any{"cursor": "eyJDbG9zZVRpbWUiOiJub3BlIn0.AAAA"}, -32602, "cursor")

	// A client that asks initialize for a version the server does not
	// speak in sessions is served by the version negotiated (2025-11-25):
	// the utility's tasks, not the 2026-07-28 extension's.
	eager := serveRaw(t, e.mcpServer(t, "erin"))
	var negotiated struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(eager.initialize(mcp.ModernProtocol), &negotiated); err != nil || negotiated.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize at %s negotiated %q (%v)", mcp.ModernProtocol, negotiated.ProtocolVersion, err)
	}
	var legacy struct {
		Task mcp.Task `json:"task"`
	}
	eager.must("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-6", "scenario": "instant"}, "task": map[string]any{}}, &legacy)
	if legacy.Task.TaskID == "" {
		t.Fatalf("a task-augmented call of a 2025-11-25 session did not get the utility's CreateTaskResult")
	}
	eager.must("tasks/list", map[string]any{}, nil)
	var none struct {
		Tasks []mcp.Task `json:"tasks"`
	}
	bob.must("tasks/list", nil, &none)
	if len(none.Tasks) != 0 {
		t.Fatalf("bob lists %+v", none.Tasks)
	}

	// A session of an earlier version declares no tasks: a task-augmented
	// call is served as a plain one, tasks/* are not served.
	old := serveRaw(t, e.mcpServer(t, "carol"))
	if caps := old.initialize("2025-06-18"); bytes.Contains(caps, []byte(`"tasks"`)) {
		t.Fatalf("2025-06-18 initialize declares tasks: %s", caps)
	}
	var plain struct {
		StructuredContent mcp.Result `json:"structuredContent"`
	}
	old.must("tools/call", map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-3", "scenario": "instant", "wait_seconds": 10}, "task": map[string]any{}}, &plain)
	if plain.StructuredContent.Outcome == nil || plain.StructuredContent.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("plain call = %+v", plain)
	}
	old.refusedWith("tasks/get", map[string]any{"taskId": plain.StructuredContent.LocalWorkflowID}, -32601, "method not found")
}

// rawHTTP is a client of `delegate mcp`'s Streamable HTTP endpoint
// written by hand, for what the SDKs do not send.
type rawHTTP struct {
	t     *testing.T
	url   string
	token string
}

// post sends body in session sid ("": none) at MCP version (for the
// MCP-Protocol-Version header; "": none), with ctx.
func (c rawHTTP) post(ctx context.Context, sid, version, body string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// session opens a session at version and returns its id.
func (c rawHTTP) session(version string) string {
	c.t.Helper()
	resp := c.post(context.Background(), "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize: %s", resp.Status)
	}
	c.post(context.Background(), sid, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// jsonBody reads resp's body: a JSON response, or the last data event of
// an event stream.
func jsonBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":`) {
				raw = []byte(d)
			}
		}
	}
	return raw
}

// TestMCPWireOverHTTP: what the server answers before the go-sdk reads a
// request. A request of a method it does not serve gets the JSON-RPC error
// -32601 (before: HTTP 400, text/plain "JSON RPC not handled"); such a
// notification is accepted and ignored, in every version (before: 400 at
// 2026-07-28); a batch (MCP 2025-03-26) that holds one is refused whole,
// each request answered (before: judged by its first element: a tools/call
// after an unknown notification was dropped unanswered); a tasks/* request
// whose taskId is not a string is refused in a few words (before: the
// go-sdk quoted the whole params back, five times their size).
func TestMCPWireOverHTTP(t *testing.T) {
	e := setup(t)
	c := rawHTTP{t: t, token: "alice-token-0123456789", url: httpServerOf(t, e.mcpServer(t, ""), "alice-token-0123456789", "bob-token-0123456789ab")}
	ctx := context.Background()
	sid := c.session("2025-11-25")
	rpcErr := func(resp *http.Response) (string, rpcError) {
		t.Helper()
		var got struct {
			ID    any      `json:"id"`
			Error rpcError `json:"error"`
		}
		body := jsonBody(t, resp)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("%s %s %s", resp.Status, resp.Header.Get("Content-Type"), body)
		}
		return fmt.Sprint(got.ID), got.Error
	}
	for _, m := range []string{"tasks/subscribe", "acme/search"} {
		id, e := rpcErr(c.post(ctx, sid, "2025-11-25", `{"jsonrpc":"2.0","id":"q","method":"`+m+`","params":{}}`))
		if id != "q" || e.Code != -32601 || !strings.Contains(e.Message, m) {
			t.Errorf("%s: id %s error %+v", m, id, e)
		}
	}
	for _, v := range []string{"2025-11-25", mcp.ModernProtocol} {
		if resp := c.post(ctx, sid, v, `{"jsonrpc":"2.0","method":"notifications/acme"}`); resp.StatusCode != http.StatusAccepted {
			t.Errorf("unknown notification at %s: %s", v, resp.Status)
		}
	}
	huge := strings.Repeat("\u00ff", 100000)
	id, perr := rpcErr(c.post(ctx, sid, "2025-11-25", `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":["`+huge+`"]}}`))
	if id != "5" || perr.Code != -32602 || perr.Message != "tasks/get: taskId: must be a string" {
		t.Errorf("non-string taskId: id %s, error %d %.200s", id, perr.Code, perr.Message)
	}

	old := c.session("2025-03-26")
	resp := c.post(ctx, old, "2025-03-26", `[{"jsonrpc":"2.0","method":"notifications/acme"},{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"acme/x"}]`)
	var answers []struct {
		ID    int      `json:"id"`
		Error rpcError `json:"error"`
	}
	body := jsonBody(t, resp)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &answers) != nil || len(answers) != 2 ||
		answers[0].ID != 7 || answers[0].Error.Code != -32600 || answers[1].ID != 8 || answers[1].Error.Code != -32601 {
		t.Errorf("batch with an unknown method: %s %s", resp.Status, body)
	}
}

// TestMCPCallEndsWithItsHTTPRequest: a tasks/result that waits for a
// delegation ends when its HTTP request does (the client went away
// without notifications/cancelled), and frees its waiting slot. Before,
// the go-sdk ran it on after the POST was gone: four such calls held the
// actor's four slots until their delegations ended.
func TestMCPCallEndsWithItsHTTPRequest(t *testing.T) {
	e := setup(t)
	s := e.mcpServer(t, "")
	c := rawHTTP{t: t, token: "alice-token-0123456789", url: httpServerOf(t, s, "alice-token-0123456789", "bob-token-0123456789ab")}
	sid := c.session("2025-11-25")
	var created struct {
		Task mcp.Task `json:"task"`
	}
	body := jsonBody(t, c.post(context.Background(), sid, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"claims_scenario","arguments":{"order_id":"A-1","scenario":"slow"},"task":{}}}`))
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(body, &env) != nil || json.Unmarshal(env.Result, &created) != nil || created.Task.TaskID == "" {
		t.Fatalf("tools/call: %s", body)
	}
	// Each POST waits for its answer (no event comes before it) in its
	// own goroutine; the client goes away by cancelling it.
	goPost := func(ctx context.Context, id int) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/result","params":{"taskId":%q}}`, id, created.Task.TaskID)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
	}
	// More calls than the actor may have waiting, one after another: each
	// ends when its request does, and its slot is free for the next.
	for i := range mcp.MaxWaitingPerActor + 1 {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		goPost(ctx, 10+i)
		waitFor(t, "the call to wait", 30*time.Second, func() (bool, string) {
			a := s.Activity()
			return a.Calls == 1, fmt.Sprint(a)
		})
		cancel() // the client goes away
		waitFor(t, "the call whose request ended to end", time.Minute, func() (bool, string) {
			a := s.Activity()
			return a.Calls == 0, fmt.Sprint(a)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	goPost(ctx, 99)
	waitFor(t, "a call to wait after them", 30*time.Second, func() (bool, string) {
		a := s.Activity()
		return a.Calls == 1, fmt.Sprint(a)
	})
}

// modern is params of an MCP 2026-07-28 request: its version and the
// client's capabilities (form elicitation, and the tasks extension unless
// noTasks) in _meta.
func modern(params map[string]any, noTasks bool) map[string]any {
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if !noTasks {
		caps["extensions"] = map[string]any{mcp.TasksExtension: map[string]any{}}
	}
	out := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.ModernProtocol,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}}
	for k, v := range params {
		out[k] = v
	}
	return out
}

// extTask is a task of the tasks extension as tasks/get returns it.
type extTask struct {
	ResultType               string                     `json:"resultType"`
	TaskID                   string                     `json:"taskId"`
	Status                   string                     `json:"status"`
	StatusMessage            string                     `json:"statusMessage"`
	TTLMs                    *int64                     `json:"ttlMs"`
	PollIntervalMilliseconds int64                      `json:"pollIntervalMs"`
	InputRequests            map[string]json.RawMessage `json:"inputRequests"`
	Result                   *struct {
		IsError           bool       `json:"isError"`
		StructuredContent mcp.Result `json:"structuredContent"`
	} `json:"result"`
}

// untilExt polls tasks/get (the extension's) until the status is want.
func (c *rawMCP) untilExt(id, want string) extTask {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var task extTask
	for time.Now().Before(deadline) {
		task = extTask{}
		c.must("tasks/get", modern(map[string]any{"taskId": id}, false), &task)
		if task.Status == want {
			return task
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("task %s: status %s (%s), want %s", id, task.Status, task.StatusMessage, want)
	return task
}

// TestMCPTasksExtension: MCP 2026-07-28's tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663) over the stdio transport:
// server/discover declares it; a template tool called by a client that
// declares it returns a task (resultType "task"), params.task or not;
// tasks/get shows the human's question as an input request, tasks/update
// answers it as the actor, tasks/get then has the tool result; tasks/cancel
// cancels a second; the utility's tasks/result and tasks/list do not
// exist; a client without the extension gets the plain result; another
// actor's task is not found, and its update is acknowledged and ignored.
func TestMCPTasksExtension(t *testing.T) {
	e := setup(t)
	alice := serveRaw(t, e.mcpServer(t, "alice"))
	var disc struct {
		Capabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
			Tasks      json.RawMessage            `json:"tasks"`
		} `json:"capabilities"`
	}
	alice.must("server/discover", modern(nil, false), &disc)
	if string(disc.Capabilities.Extensions[mcp.TasksExtension]) != "{}" || disc.Capabilities.Tasks != nil {
		t.Fatalf("server/discover capabilities: extensions %v, tasks %s", disc.Capabilities.Extensions, disc.Capabilities.Tasks)
	}
	var created extTask
	alice.must("tools/call", modern(map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-1001", "scenario": "lost-parcel"}}, false), &created)
	id := created.TaskID
	if created.ResultType != "task" || created.Status != mcp.TaskWorking || !strings.HasPrefix(id, mcp.IDPrefix+"claims_scenario.") || created.PollIntervalMilliseconds != mcp.TaskPollInterval {
		t.Fatalf("tools/call = %+v", created)
	}
	asked := alice.untilExt(id, mcp.TaskInputRequired)
	key := "answer-round-1.1"
	if asked.ResultType != "complete" || asked.InputRequests[key] == nil || !bytes.Contains(asked.InputRequests[key], []byte(`"elicitation/create"`)) {
		t.Fatalf("input_required task %+v", asked)
	}
	// Not the pending key: acknowledged and ignored.
	alice.must("tasks/update", modern(map[string]any{"taskId": id, "inputResponses": map[string]any{"answer-round-9.1": map[string]any{"action": "accept", "content": map[string]any{"answer": "no"}}}}, false), nil)
	if st := e.stateOf(t, id); len(st.Answers) != 0 {
		t.Fatalf("an answer to another key was sent: %+v", st.Answers)
	}
	bob := serveRaw(t, e.mcpServer(t, "bob"))
	bob.refusedWith("tasks/get", modern(map[string]any{"taskId": id}, false), -32602, "Task not found")
	bob.must("tasks/update", modern(map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "bob's"}}}}, false), nil)
	bob.must("tasks/cancel", modern(map[string]any{"taskId": id}, false), nil)
	if st := e.stateOf(t, id); len(st.Answers) != 0 || st.CancelReason != "" {
		t.Fatalf("bob acted on alice's task: answers %+v, cancel %q", st.Answers, st.CancelReason)
	}

	// An empty answer is refused before it reaches the delegation: tasks/get
	// says so, under a new key (before: acknowledged, dropped, and asked
	// again under the same key).
	alice.must("tasks/update", modern(map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": ""}}}}, false), nil)
	again := alice.untilExt(id, mcp.TaskInputRequired)
	key = "answer-round-1.2"
	if again.InputRequests[key] == nil || !strings.Contains(again.StatusMessage, "your last answer was refused") {
		t.Fatalf("after a refused answer: %+v", again)
	}
	alice.must("tasks/update", modern(map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "photo attached: box.jpg"}}}}, false), nil)
	done := alice.untilExt(id, mcp.TaskCompleted)
	if done.Result == nil || done.Result.IsError || done.Result.StructuredContent.Outcome == nil || done.Result.StructuredContent.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("completed task %+v", done)
	}
	e.answeredLostParcel(t, context.Background(), id, "alice", "alice", "photo attached: box.jpg")
	alice.refusedWith("tasks/result", modern(map[string]any{"taskId": id}, false), -32601, "method not found")
	alice.refusedWith("tasks/list", modern(nil, false), -32601, "method not found")

	// Cancelled: the ack, then the task cancelled and the delegation with it.
	var slow extTask
	alice.must("tools/call", modern(map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-2", "scenario": "slow"}, "task": map[string]any{}}, false), &slow)
	alice.must("tasks/cancel", modern(map[string]any{"taskId": slow.TaskID}, false), nil)
	alice.untilExt(slow.TaskID, mcp.TaskCancelled)
	if out, err := dclient.Get(e.c, slow.TaskID).Outcome(context.Background()); err != nil || out.Status != contracts.StatusCanceled {
		t.Fatalf("the cancelled task's outcome %s (%v)", out.Status, err)
	}

	// Without the extension: the plain result.
	var plain struct {
		ResultType        string     `json:"resultType"`
		StructuredContent mcp.Result `json:"structuredContent"`
	}
	alice.must("tools/call", modern(map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-3", "scenario": "instant", "wait_seconds": 10}, "task": map[string]any{}}, true), &plain)
	if plain.ResultType != "complete" || plain.StructuredContent.Outcome == nil || plain.StructuredContent.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("plain call = %+v", plain)
	}
}

// TestMCPTasksExtensionOverHTTP: the tasks extension over stateless
// Streamable HTTP (each request stands alone, MCP-Protocol-Version
// 2026-07-28): a template tool's call returns a task, tasks/get follows it
// to its end with the actor of each request's token.
func TestMCPTasksExtensionOverHTTP(t *testing.T) {
	e := setup(t)
	const aliceTok, bobTok = "alice-token-0123456789", "bob-token-0123456789ab"
	url := httpServerOf(t, e.mcpServer(t, ""), aliceTok, bobTok)
	n := 0
	rpc := func(token, method, name string, params map[string]any) (json.RawMessage, *rpcError) {
		t.Helper()
		n++
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", mcp.ModernProtocol)
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for _, line := range strings.Split(string(raw), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":`) {
					raw = []byte(d)
				}
			}
		}
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %s %s", method, resp.Status, raw)
		}
		return m.Result, m.Error
	}
	res, rerr := rpc(aliceTok, "tools/call", "claims_scenario", modern(map[string]any{"name": "claims_scenario", "arguments": map[string]any{"order_id": "A-7", "scenario": "instant"}}, false))
	var created extTask
	if rerr != nil || json.Unmarshal(res, &created) != nil || created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("tools/call: %s %v", res, rerr)
	}
	var task extTask
	waitFor(t, "the task completes", time.Minute, func() (bool, string) {
		res, rerr := rpc(aliceTok, "tasks/get", created.TaskID, modern(map[string]any{"taskId": created.TaskID}, false))
		task = extTask{}
		if rerr != nil || json.Unmarshal(res, &task) != nil {
			t.Fatalf("tasks/get: %s %v", res, rerr)
		}
		return task.Status == mcp.TaskCompleted, task.Status
	})
	if task.Result == nil || task.Result.StructuredContent.Outcome == nil || task.Result.StructuredContent.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("completed task %+v", task)
	}
	if _, rerr := rpc(bobTok, "tasks/get", created.TaskID, modern(map[string]any{"taskId": created.TaskID}, false)); rerr == nil || rerr.Code != -32602 {
		t.Fatalf("bob's tasks/get of alice's task: %v", rerr)
	}
}
