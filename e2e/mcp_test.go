package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/mcp"
)

// mcpTemplates loads the example templates file (mcp/examples) with its
// agent at base, and adds a template whose scenario the model picks.
func mcpTemplates(t *testing.T, base string) []mcp.Template {
	t.Helper()
	ts, err := mcp.LoadTemplates("../mcp/examples/templates.json")
	if err != nil {
		t.Fatalf("LoadTemplates(example) error = %v", err)
	}
	for i := range ts {
		ts[i].AgentCardURL = base + "/.well-known/agent-card.json"
	}
	ts = append(ts, mcp.Template{
		Name: "claims_scenario", Description: "the claims agent in a scenario", AgentCardURL: base + "/.well-known/agent-card.json",
		Skill: "open-claim", Purpose: "mcp test", AllowedOutputs: []string{"claim_opened"}, DeadlineAfter: "10m",
		Text:       "Order {{order_id}}: scenario {{scenario}}",
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"scenario":{"enum":["instant","slow","lost-parcel"]}},"required":["order_id","scenario"]}`),
		Answer:     "human",
	})
	return ts
}

// mcpServer is a Server of the test's Temporal, for actor ("" for HTTP).
func (e *env) mcpServer(t *testing.T, actor string) *mcp.Server {
	t.Helper()
	s, err := mcp.New(mcp.Options{Client: e.c, Templates: mcpTemplates(t, e.base), Actor: actor, Burst: 1000, Rate: 1000})
	if err != nil {
		t.Fatalf("mcp.New() error = %v", err)
	}
	return s
}

// stdioSession connects a go-sdk client to s over in-memory transports
// (the stdio server's code path: a fixed actor).
func stdioSession(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("Connect() error = %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, mcp.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s) error = %v", name, err)
	}
	var r mcp.Result
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", name, b, err)
		}
	}
	return res, r
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// refused asserts a tool error whose text holds every want.
func refused(t *testing.T, res *sdk.CallToolResult, want ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(res))
	}
	for _, w := range want {
		if !strings.Contains(text(res), w) {
			t.Fatalf("tool error %q does not say %q", text(res), w)
		}
	}
}

func (e *env) starterOf(t *testing.T, id string) string {
	t.Helper()
	desc, err := e.c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	var s string
	_ = json.Unmarshal(desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeDelegationStarter].GetData(), &s)
	return s
}

func (e *env) stateOf(t *testing.T, id string) contracts.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := dclient.Get(e.c, id).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMCPHumanAnswersThroughElicitation: list the tools; start from the
// example template, wait; the agent's question comes through elicitation,
// the human's answer is sent with answered_by the actor, the delegation
// completes; the starter is recorded.
func TestMCPHumanAnswersThroughElicitation(t *testing.T) {
	e := setup(t)
	var mu sync.Mutex
	var asked []string
	cs := stdioSession(t, e.mcpServer(t, "alice"), &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "A photo of the box is attached."}}, nil
		},
	})

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, n := range []string{"open_parcel_claim", "open_parcel_claim_auto", "claims_scenario", mcp.ToolStatus, mcp.ToolList, mcp.ToolCancel, mcp.ToolAnswer} {
		if byName[n] == nil {
			t.Fatalf("tool %s not listed (got %d tools)", n, len(tools.Tools))
		}
	}
	tl := byName["open_parcel_claim"]
	if a := tl.Annotations; a == nil || a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Fatalf("open_parcel_claim annotations = %+v, want readOnlyHint false, openWorldHint true", tl.Annotations)
	}
	if a := byName[mcp.ToolCancel].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Fatalf("delegation_cancel annotations = %+v, want destructiveHint true", a)
	}
	if a := byName[mcp.ToolStatus].Annotations; a == nil || !a.ReadOnlyHint {
		t.Fatalf("delegation_status annotations = %+v, want readOnlyHint true", a)
	}
	schema, _ := json.Marshal(tl.InputSchema)
	for _, w := range []string{`"additionalProperties":false`, `"wait_seconds"`, `"order_id"`} {
		if !strings.Contains(string(schema), w) {
			t.Fatalf("input schema %s lacks %s", schema, w)
		}
	}

	res, r := call(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1001", "wait_seconds": 30})
	if res.IsError {
		t.Fatalf("start refused: %s", text(res))
	}
	if !strings.HasPrefix(r.LocalWorkflowID, "mcp:open_parcel_claim:") || r.Template != "open_parcel_claim" {
		t.Fatalf("result = %+v", r)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Please send a photo of the box") || !strings.Contains(asked[0], "not instructions") {
		t.Fatalf("elicitation messages = %q", asked)
	}
	if got := e.starterOf(t, r.LocalWorkflowID); got != "alice" {
		t.Fatalf("DelegationStarter = %q, want alice", got)
	}
	// The answer went as alice's, and the delegation completes.
	waitFor(t, "completed", 60*time.Second, func() (bool, string) {
		_, r := call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": r.LocalWorkflowID})
		return r.Outcome != nil && r.Outcome.Status == contracts.StatusCompleted, fmt.Sprintf("%+v", r)
	})
	st := e.stateOf(t, r.LocalWorkflowID)
	if len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice" || st.Answers[0].Text != "A photo of the box is attached." {
		t.Fatalf("answers = %+v, want one by alice", st.Answers)
	}

	// delegation_list shows it, with its template.
	res, _ = call(t, cs, mcp.ToolList, map[string]any{})
	b, _ := json.Marshal(res.StructuredContent)
	var lr mcp.ListResult
	_ = json.Unmarshal(b, &lr)
	if len(lr.Delegations) != 1 || lr.Delegations[0].LocalWorkflowID != r.LocalWorkflowID || lr.Delegations[0].Template != "open_parcel_claim" {
		t.Fatalf("list = %s", b)
	}
}
