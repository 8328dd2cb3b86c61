package workflows

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// injectAfter copies a recorded history with ev inserted after event
// `after` (so that it lands in the same workflow task as that event), the
// later event ids and every reference to them shifted by one.
func injectAfter(t *testing.T, src string, after int, ev map[string]any) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, e := range h["events"].([]any) {
		m := e.(map[string]any)
		id, _ := strconv.Atoi(m["eventId"].(string))
		if id > after {
			m["eventId"] = strconv.Itoa(id + 1)
			for k, v := range m {
				attrs, ok := v.(map[string]any)
				if !ok || k == "eventId" {
					continue
				}
				for ak, av := range attrs {
					if s, ok := av.(string); ok && strings.HasSuffix(ak, "EventId") {
						if n, _ := strconv.Atoi(s); n > after {
							attrs[ak] = strconv.Itoa(n + 1)
						}
					}
				}
			}
		}
		out = append(out, m)
		if id == after {
			ev["eventId"] = strconv.Itoa(after + 1)
			ev["eventTime"] = m["eventTime"]
			out = append(out, ev)
		}
	}
	h["events"] = out
	nb, _ := json.Marshal(h)
	dst := filepath.Join(t.TempDir(), "history.json")
	if err := os.WriteFile(dst, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// replayReturning replays a history and returns the replay's error and
// the error the workflow function returned.
func replayReturning(t *testing.T, file string) (replayErr, returned error) {
	t.Helper()
	wrapper := func(ctx workflow.Context, d contracts.Delegation, carried converter.RawValue) (contracts.Outcome, error) {
		o, err := delegation(ctx, d, carried, Options{ContinueAsNewEvents: 1}) // as recorded
		returned = err
		return o, err
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(wrapper, workflowRegisterOptions())
	replayErr = r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), file)
	return replayErr, returned
}

// A revoke delivered in the same workflow task as the watch result that
// triggers continue-as-new (what a server produces when the signal races
// the task) is never dropped by the hand-over: this run handles it instead
// of continuing as new. The history is the recorded continue-as-new with
// the revoke inserted after the
// WatchTask's completion (event 20); today's code must not issue the
// recorded continue-as-new there, or, if it did, must carry the revoke.
func TestInterruptInTheContinueAsNewTriggerTask(t *testing.T) {
	src := filepath.Join("testdata", "histories", "carry-input-v2", "continue-as-new.json")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for name, ev := range map[string]map[string]any{
		"revoke": {
			"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED",
			"workflowExecutionSignaledEventAttributes": map[string]any{
				"signalName": contracts.SignalRevoke, "identity": "operator",
				"input": map[string]any{"payloads": []any{map[string]any{
					"metadata": map[string]any{"encoding": b64("json/plain")}, "data": b64(`{"reason":"withdrawn"}`)}}},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			replayErr, returned := replayReturning(t, injectAfter(t, src, 20, ev))
			var can *workflow.ContinueAsNewError
			if replayErr != nil || !errors.As(returned, &can) {
				return // the run did not continue as new at the trigger: handled here
			}
			var c contracts.Carry
			if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &c); err != nil {
				t.Fatal(err)
			}
			if c.Revoked == nil {
				t.Errorf("the run continued as new and the %s delivered with the trigger is lost (carry: revoked %v)", name, c.Revoked)
			}
		})
	}
}

// An answer delivered in the same workflow task as the continue-as-new
// trigger, while no question is pending, is recorded once (ignored, with
// the reason) in the state the run carries over, not lost between runs.
func TestAnswerInTheContinueAsNewTriggerTask(t *testing.T) {
	src := filepath.Join("testdata", "histories", "carry-input-v2", "continue-as-new.json")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f := injectAfter(t, src, 20, map[string]any{
		"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED",
		"workflowExecutionSignaledEventAttributes": map[string]any{
			"signalName": contracts.ProvideInput, "identity": "operator",
			"input": map[string]any{"payloads": []any{map[string]any{
				"metadata": map[string]any{"encoding": b64("json/plain")}, "data": b64(`{"text":"late photo"}`)}}},
		},
	})
	replayErr, returned := replayReturning(t, f)
	if replayErr != nil {
		t.Fatalf("replay: %v", replayErr)
	}
	var can *workflow.ContinueAsNewError
	if !errors.As(returned, &can) {
		t.Fatalf("returned %v, want the recorded continue-as-new", returned)
	}
	var c contracts.Carry
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &c); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range c.State.IgnoredSignals {
		if s.Name == contracts.ProvideInput {
			n++
		}
	}
	if n != 1 || c.Pending != nil {
		t.Errorf("carried: %d ignored provide-input, pending %v; want the answer recorded once, not pending", n, c.Pending)
	}
}
