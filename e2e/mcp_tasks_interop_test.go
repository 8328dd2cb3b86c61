package e2e

import (
	"context"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// TestInteropMCPTasks: the official TypeScript SDK's experimental tasks
// client (interop/mcp, scenario tasks: callToolStream, getTask,
// cancelTask, listTasks) against `delegate mcp` over stdio and Streamable
// HTTP, at MCP 2025-11-25. A task-augmented call of a template tool runs
// as a task bound to the delegation: input_required while the remote
// agent asks, the question put to the human through elicitation related
// to the task while tasks/result waits, completed with the outcome; a
// second one cancelled while it waits cancels its delegation; both are
// listed. Before: the call ran as a plain one and the SDK failed with
// "path task: expected object"; tasks/get and tasks/list got HTTP 400.
func TestInteropMCPTasks(t *testing.T) {
	dir := mcpClientDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := setup(t)
	mc := mcpClient{dir: dir}
	transports := mcpTransports(t, ctx, e)
	for _, name := range []string{"stdio", "http"} {
		t.Run(name, func(t *testing.T) {
			answer := "photo attached: box.jpg (alice, through a task, " + name + ")"
			params := transports[name]()
			params["tool"] = "open_claim"
			params["arguments"] = map[string]any{"order_id": "A-1001"}
			params["elicitation"] = true
			params["answer"] = answer
			ls := mc.run(t, ctx, "tasks", params)
			done := ls.step(t, "done")
			e.answeredLostParcel(t, ctx, done.str("task"), "alice", "alice", answer)
			// Outcome waits for the delegation to end.
			out, err := dclient.Get(e.c, done.str("cancelled")).Outcome(ctx)
			if err != nil || out.Status != contracts.StatusCanceled {
				t.Errorf("the cancelled task's outcome %s (%v), want canceled", out.Status, err)
			}
		})
	}
}
