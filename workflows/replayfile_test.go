package workflows

import (
	"encoding/json"
	"os"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// replayFile replays a recorded history with the workflow id it ran
// under: the contract's local_workflow_id (the workflow refuses to run
// under another id, and a history file does not carry the id). dc
// decodes the input (the codec's, for a sealed history; nil: the
// default).
func replayFile(t *testing.T, r worker.WorkflowReplayer, logger sdklog.Logger, file string, dc converter.DataConverter) error {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var contract struct {
		ID string `json:"local_workflow_id"`
	}
	var raw json.RawMessage
	in := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(in) == 0 {
		t.Fatalf("%s: the started event has no input", file)
	}
	if err := dc.FromPayload(in[0], &raw); err != nil {
		t.Fatalf("%s: input: %v", file, err)
	}
	if err := json.Unmarshal(raw, &contract); err != nil || contract.ID == "" {
		t.Fatalf("%s: input has no local_workflow_id (%v)", file, err)
	}
	return r.ReplayWorkflowHistoryWithOptions(logger, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: contract.ID},
	})
}
