package activities

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/a2adelegate/delegate/contracts"
)

// sweepTemporal is the Temporal a sweep sees: runs by run id ("" is the
// latest), each with its status, first run id, reset run id, close
// event's identity and State (nil: its Query fails).
type sweepTemporal struct {
	client.Client
	runs       map[string]sweepRun
	latest     string
	describeOf error // an error for a describe of the latest run
}

type sweepRun struct {
	status                 enumspb.WorkflowExecutionStatus
	firstRunID, resetRunID string
	closedByIdentity       string
	state                  *contracts.State
}

func (f *sweepTemporal) DescribeWorkflowExecution(_ context.Context, id, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if runID == "" {
		if f.describeOf != nil {
			return nil, f.describeOf
		}
		runID = f.latest
	}
	r, ok := f.runs[runID]
	if !ok {
		return nil, serviceerror.NewNotFound("no such run")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID}, Status: r.status, FirstRunId: r.firstRunID},
		WorkflowExtendedInfo:  &workflowpb.WorkflowExecutionExtendedInfo{ResetRunId: r.resetRunID},
	}, nil
}

func (f *sweepTemporal) QueryWorkflow(_ context.Context, _, runID, _ string, _ ...any) (converter.EncodedValue, error) {
	r, ok := f.runs[runID]
	if !ok || r.state == nil {
		return nil, errors.New("query timed out")
	}
	return encoded{r.state}, nil
}

func (f *sweepTemporal) GetWorkflowHistory(_ context.Context, _, runID string, _ bool, _ enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	ev := &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{Identity: f.runs[runID].closedByIdentity}}}
	return &oneEvent{ev: ev}
}

type encoded struct{ v any }

func (e encoded) HasValue() bool { return true }
func (e encoded) Get(ptr any) error {
	b, err := json.Marshal(e.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

type oneEvent struct {
	ev   *historypb.HistoryEvent
	done bool
}

func (o *oneEvent) HasNext() bool { return !o.done }
func (o *oneEvent) Next() (*historypb.HistoryEvent, error) {
	o.done = true
	return o.ev, nil
}

// The sweep never sends anything to the agent for a task the running run
// of the same workflow id tracks or will get back (a Reset's new run that
// has not sent yet), nor when the running run cannot be read; a running
// run of another chain (TERMINATE_EXISTING) does not keep the old task.
// Each row says how the closed run closed.
func TestOrphanSweepLeavesWhatARunningRunMayTrack(t *testing.T) {
	var calls atomic.Int64
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer agent.Close()
	waiting := &contracts.State{A2AState: "input-required", RemoteTaskID: "task-1",
		Interface: contracts.Interface{URL: agent.URL, Binding: "JSONRPC", Version: "1.0"}}
	closedRun := func(identity, resetRunID string) sweepRun {
		return sweepRun{status: enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, firstRunID: "run-1", resetRunID: resetRunID, closedByIdentity: identity, state: waiting}
	}
	running := func(first string, st *contracts.State) sweepRun {
		return sweepRun{status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, firstRunID: first, state: st}
	}
	for _, tc := range []struct {
		name       string
		closed     sweepRun
		live       *sweepRun
		describe   error
		action     string
		closedBy   string
		note       string
		toTheAgent bool
	}{
		{"reset, the new run tracks the task", closedRun(resetterIdentity, "run-2"), &sweepRun{status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, firstRunID: "run-1", state: waiting},
			nil, contracts.OrphanTracked, contracts.OrphanClosedByReset, "run run-2 of the same workflow id tracks this task", false},
		{"reset, the new run has not sent yet", closedRun(resetterIdentity, "run-2"), ptr(running("run-1", &contracts.State{A2AState: "submitted"})),
			nil, contracts.OrphanTracked, contracts.OrphanClosedByReset, "has not sent yet", false},
		{"terminated, then reset: the new run has not sent yet", closedRun("an operator", "run-2"), ptr(running("run-1", &contracts.State{})),
			nil, contracts.OrphanTracked, contracts.OrphanClosedByTerminate, "has not sent yet", false},
		{"the running run cannot be read", closedRun(resetterIdentity, "run-2"), ptr(running("run-1", nil)),
			nil, contracts.OrphanError, contracts.OrphanClosedByReset, "nothing canceled", false},
		{"the latest run cannot be described", closedRun("an operator", ""), nil,
			errors.New("unavailable"), contracts.OrphanError, contracts.OrphanClosedByTerminate, "nothing canceled", false},
		{"replaced by a start with TERMINATE_EXISTING: another chain", closedRun("an operator", ""), ptr(running("run-2", &contracts.State{})),
			nil, contracts.OrphanError, contracts.OrphanClosedByTerminate, "GetTask", true},
		{"terminated, nothing runs", closedRun("an operator", ""), nil,
			nil, contracts.OrphanError, contracts.OrphanClosedByTerminate, "GetTask", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &sweepTemporal{runs: map[string]sweepRun{"run-1": tc.closed}, latest: "run-1", describeOf: tc.describe}
			if tc.live != nil {
				f.runs["run-2"], f.latest = *tc.live, "run-2"
			}
			a := &Activities{Temporal: f, Logger: slog.New(slog.DiscardHandler)}
			before := calls.Load()
			o, ok := a.orphan(context.Background(), "wf", "run-1")
			if !ok || o.Action != tc.action || o.ClosedBy != tc.closedBy || !strings.Contains(o.Error, tc.note) {
				t.Errorf("orphan = %+v, want action %s, closed_by %s, note %q", o, tc.action, tc.closedBy, tc.note)
			}
			if o.ResetRunID != tc.closed.resetRunID {
				t.Errorf("reset_run_id = %q, want %q", o.ResetRunID, tc.closed.resetRunID)
			}
			if went := calls.Load() > before; went != tc.toTheAgent {
				t.Errorf("the sweep went to the agent: %v, want %v", went, tc.toTheAgent)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
