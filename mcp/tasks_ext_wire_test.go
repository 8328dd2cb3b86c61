package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdkclient "go.temporal.io/sdk/client"
)

// TestTasksExtensionWireShape: a CreateTaskResult and a tasks/get result
// of the tasks extension carry the Task of its schema
// (io.modelcontextprotocol/tasks, SEP-2663: taskId, status,
// statusMessage?, createdAt, lastUpdatedAt, ttlMs (required, null for
// unlimited), pollIntervalMs?), and no other name for them. Before, they
// said ttlSeconds and pollIntervalMilliseconds: the MCP Inspector 2.12
// (its @modelcontextprotocol/ext-tasks 0.2.2) did not recognise the
// CreateTaskResult as a task, took it for the tool's result and printed
// an empty one (TestInteropMCPInspector, --protocol-era modern).
func TestTasksExtensionWireShape(t *testing.T) {
	task := extTaskOf(Task{TaskID: "mcp.t.1", Status: TaskWorking, CreatedAt: "2026-12-01T10:00:00Z",
		LastUpdatedAt: "2026-12-01T10:00:00Z", PollInterval: TaskPollInterval})
	taskKeys := []string{"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
	for _, c := range []struct {
		name     string
		v        any
		required []string
		more     []string // the result's own members beside the Task's
	}{
		{"CreateTaskResult", extCreateTaskResult{ResultType: "task", extTask: task},
			[]string{"resultType", "taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"}, []string{"resultType", "_meta"}},
		{"GetTaskResult", extTaskResult{ResultType: "complete", extTask: task},
			[]string{"resultType", "taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"}, []string{"resultType", "_meta", "inputRequests", "result", "error"}},
	} {
		raw, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !slices.Contains(taskKeys, k) && !slices.Contains(c.more, k) {
				t.Errorf("%s %s: member %q is not in the extension's schema", c.name, raw, k)
			}
		}
		for _, k := range c.required {
			if _, ok := m[k]; !ok {
				t.Errorf("%s %s: required member %q missing", c.name, raw, k)
			}
		}
		if string(m["ttlMs"]) != "null" || string(m["pollIntervalMs"]) != "2000" {
			t.Errorf("%s %s: want ttlMs null (unlimited) and pollIntervalMs %d", c.name, raw, TaskPollInterval)
		}
	}
}

// TestTasksExtensionRefusalIsAToolError: a template tool's call refused
// before any delegation started (here an argument the tool does not
// take), by a client of 2026-07-28 that declares the tasks extension, is
// answered with the tool's own error result (isError, the argument and
// the rule), as to a client without the extension: under the extension
// the server decides per request whether a call becomes a task (SEP-2663),
// and an argument refused is a tool error the model reads and corrects
// (MCP 2025-11-25, Tools). Before, it was a JSON-RPC error -32602 "no task
// was created: ...", the 2025-11-25 utility's answer to a call that asked
// for a task: the MCP Inspector 2.12 CLI (--protocol-era modern, which
// declares the extension) exited 1 with a generic error instead of
// showing the tool error (exit 5).
func TestTasksExtensionRefusalIsAToolError(t *testing.T) {
	c, err := sdkclient.NewLazyClient(sdkclient.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := New(Options{Client: c, Templates: exampleTemplates(t), Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	caps := &sdk.ClientCapabilities{}
	caps.AddExtension(TasksExtension, map[string]any{})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{Capabilities: caps}).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: ModernProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "open_parcel_claim", Arguments: map[string]any{"order_id": "A-1001", "agent_card_url": "http://127.0.0.1:1/"}})
	if err != nil {
		t.Fatalf("CallTool: error %v, want the tool's error result", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !res.IsError || !strings.Contains(text.String(), `argument "agent_card_url": unknown`) {
		t.Fatalf("CallTool = isError %v %q, want the tool error naming the argument", res.IsError, text.String())
	}
}
