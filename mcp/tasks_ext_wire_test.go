package mcp

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"
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
