package workflows

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
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

// scheduling records the activity types a workflow schedules.
type scheduling struct {
	interceptor.WorkerInterceptorBase
	types *[]string
}

func (s *scheduling) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &schedulingIn{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, types: s.types}
}

type schedulingIn struct {
	interceptor.WorkflowInboundInterceptorBase
	types *[]string
}

func (s *schedulingIn) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return s.Next.Init(&schedulingOut{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, types: s.types})
}

type schedulingOut struct {
	interceptor.WorkflowOutboundInterceptorBase
	types *[]string
}

func (s *schedulingOut) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	*s.types = append(*s.types, activityType)
	return s.Next.ExecuteActivity(ctx, activityType, args...)
}

// scheduled replays a history and returns the activity types the workflow
// scheduled, the replay's error and what the workflow function returned
// (nil while it runs).
func scheduled(t *testing.T, file string) (types []string, replayErr, returned error) {
	t.Helper()
	wrapper := func(ctx workflow.Context, input, carried converter.RawValue) (contracts.Outcome, error) {
		o, err := delegation(ctx, input, carried, Options{ContinueAsNewEvents: 1}) // as recorded
		returned = err
		return o, err
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: []interceptor.WorkerInterceptor{&scheduling{types: &types}}})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(wrapper, workflowRegisterOptions())
	replayErr = replayFile(t, r, sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), file, nil)
	return types, replayErr, returned
}

// replayReturning replays a history and returns the replay's error and
// the error the workflow function returned.
func replayReturning(t *testing.T, file string) (replayErr, returned error) {
	t.Helper()
	wrapper := func(ctx workflow.Context, input, carried converter.RawValue) (contracts.Outcome, error) {
		o, err := delegation(ctx, input, carried, Options{ContinueAsNewEvents: 1}) // as recorded
		returned = err
		return o, err
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(wrapper, workflowRegisterOptions())
	replayErr = replayFile(t, r, sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), file, nil)
	return replayErr, returned
}

// continueAsNewHistory is the recorded run that continues as new at its
// first chance, and triggerEvent the id of the event whose workflow task
// continues it as new: the last activity completion before it.
var continueAsNewHistory = filepath.Join("testdata", "histories", Baseline, "continue-as-new.json")

func triggerEvent(t *testing.T, src string) int {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Events []struct {
			EventID   string `json:"eventId"`
			EventType string `json:"eventType"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	trigger := 0
	for _, e := range h.Events {
		switch e.EventType {
		case "EVENT_TYPE_ACTIVITY_TASK_COMPLETED":
			trigger, _ = strconv.Atoi(e.EventID)
		case "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW":
			if trigger == 0 {
				t.Fatalf("%s: no activity completed before the continue-as-new", src)
			}
			return trigger
		}
	}
	t.Fatalf("%s does not continue as new", src)
	return 0
}

// A revoke delivered in the same workflow task as the watch result that
// triggers continue-as-new (what a server produces when the signal races
// the task) is never dropped by the hand-over: this run handles it instead
// of continuing as new. The history is the recorded continue-as-new with
// the revoke inserted after the WatchTask's completion: replayed, the run
// must cancel the remote task (CancelTask scheduled in that task, where the
// recorded run continued as new: a nondeterminism error, and no other
// replay error), or, had it continued as new, carry the revoke.
func TestInterruptInTheContinueAsNewTriggerTask(t *testing.T) {
	if replayErr, _ := replayReturning(t, continueAsNewHistory); replayErr != nil {
		t.Fatalf("the recorded history itself does not replay: %v", replayErr)
	}
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
			types, replayErr, returned := scheduled(t, injectAfter(t, continueAsNewHistory, triggerEvent(t, continueAsNewHistory), ev))
			var can *workflow.ContinueAsNewError
			if replayErr == nil && errors.As(returned, &can) {
				var c contracts.Carry
				if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &c); err != nil {
					t.Fatal(err)
				}
				if c.Revoked == nil {
					t.Errorf("the run continued as new and the %s delivered with the trigger is lost (carry: revoked %v)", name, c.Revoked)
				}
				return
			}
			// Handled in this run: the trigger task cancels the remote task
			// where the recorded run continued as new, so the replay stops
			// there on a nondeterminism error, and on nothing else.
			if replayErr == nil || !strings.Contains(replayErr.Error(), "TMPRL1100") {
				t.Fatalf("replay: %v (returned %v); want the nondeterminism of a run that handles the %s instead of continuing as new", replayErr, returned, name)
			}
			if !slices.Contains(types, "CancelTask") {
				t.Errorf("the trigger task with the %s scheduled %v: want CancelTask", name, types)
			}
		})
	}
}

// An answer delivered in the same workflow task as the continue-as-new
// trigger, while no question is pending, is recorded once (ignored, with
// the reason) in the state the run carries over, not lost between runs.
func TestAnswerInTheContinueAsNewTriggerTask(t *testing.T) {
	src := continueAsNewHistory
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f := injectAfter(t, src, triggerEvent(t, src), map[string]any{
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
