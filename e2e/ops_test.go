package e2e

// Temporal's own operations on delegations: Reset to each kind of point,
// terminate, a start with TERMINATE_EXISTING, batch operations over a
// visibility query, a parent's close policy. docs/operations.md
// ("Temporal's own operations") says what each does to a delegation and
// its remote task; these tests show it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	batchpb "go.temporal.io/api/batch/v1"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/a2aclient"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/workflows"
)

// sendCounter stands between the worker and the agent: it counts the
// deliveries of each messageId (SendMessage and SendStreamingMessage) and
// can hold the deliveries of one messageId until released.
type sendCounter struct {
	mu         sync.Mutex
	deliveries map[string]int
	holdID     string
	held       chan struct{} // closed when a delivery of holdID arrived
	release    chan struct{}
}

func newSendCounter() *sendCounter { return &sendCounter{deliveries: map[string]int{}} }

func (p *sendCounter) handler(agentURL string) http.Handler {
	return interceptRPCs(agentURL, []string{"SendMessage", "SendStreamingMessage"}, func(w http.ResponseWriter, r *http.Request, body []byte, forward http.Handler) {
		var rpc struct {
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &rpc)
		id := rpc.Params.Message.MessageID
		p.mu.Lock()
		p.deliveries[id]++
		var release chan struct{}
		if id != "" && id == p.holdID {
			release = p.release
			select {
			case <-p.held:
			default:
				close(p.held)
			}
		}
		p.mu.Unlock()
		if release != nil {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		forward.ServeHTTP(w, r)
	})
}

// count returns how many times messageId reached the proxy.
func (p *sendCounter) count(messageID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deliveries[messageID]
}

// hold holds every delivery of messageID from now on; held is closed when
// one arrived, release (idempotent) lets them through.
func (p *sendCounter) hold(messageID string) (held <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdID, p.held, p.release = messageID, make(chan struct{}), make(chan struct{})
	ch := p.release
	var once sync.Once
	return p.held, func() {
		once.Do(func() {
			p.mu.Lock()
			p.holdID = ""
			p.mu.Unlock()
			close(ch)
		})
	}
}

// remoteStates returns a reader of a task's state at the agent (GetTask on
// its JSON-RPC interface, as any client reads it).
func (e *env) remoteStates(t *testing.T, ctx context.Context) func(taskID string) contracts.TaskState {
	t.Helper()
	agent, err := a2aclient.Dial(ctx, contracts.Interface{URL: e.base + claimsagent.JSONRPCPath, Binding: "JSONRPC", Version: "1.0"}, a2aclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Close() })
	return func(taskID string) contracts.TaskState {
		t.Helper()
		s, err := agent.GetTask(ctx, taskID, "")
		if err != nil {
			t.Fatalf("GetTask(%s) at the agent: %v", taskID, err)
		}
		return s.State
	}
}

// history returns the events of run runID of workflow id.
func (e *env) history(t *testing.T, ctx context.Context, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	it := e.c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A reset point is the id of a WorkflowTaskCompleted event of a run's
// history, as the UI's Reset offers them; 0: not in the history yet.
type resetPoint func(evs []*historypb.HistoryEvent) int64

// firstTaskCompleted is the first workflow task's completion: before the
// first send was scheduled.
func firstTaskCompleted(evs []*historypb.HistoryEvent) int64 {
	for _, ev := range evs {
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			return ev.GetEventId()
		}
	}
	return 0
}

// taskCompletedAfter is the workflow task completion that follows the nth
// completion (from 1) of an activity of type typ; n 0: of the last
// activity completed, whatever its type.
func taskCompletedAfter(typ string, n int) resetPoint {
	return func(evs []*historypb.HistoryEvent) int64 {
		types := map[int64]string{}
		var after int64
		seen := 0
		for _, ev := range evs {
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				types[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if n == 0 {
					after = ev.GetEventId()
				} else if types[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] == typ {
					if seen++; seen == n {
						after = ev.GetEventId()
					}
				}
			}
		}
		if after == 0 {
			return 0
		}
		for _, ev := range evs {
			if ev.GetEventId() > after && ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				return ev.GetEventId()
			}
		}
		return 0
	}
}

// reset resets run runID of workflow id to the point once its history
// has it (ResetWorkflowExecution, as the UI's Reset does), and returns the
// new run's id.
func (e *env) reset(t *testing.T, ctx context.Context, id, runID string, point resetPoint) string {
	t.Helper()
	var at int64
	waitFor(t, "the reset point in the history", time.Minute, func() (bool, string) {
		at = point(e.history(t, ctx, id, runID))
		return at > 0, "not yet"
	})
	resp, err := e.c.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 e.srv.Namespace(),
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		Reason:                    "an operator's reset",
		WorkflowTaskFinishEventId: at,
		RequestId:                 uuid.NewString(),
	})
	if err != nil {
		t.Fatalf("reset %s to event %d: %v", id, at, err)
	}
	if resp.GetRunId() == "" || resp.GetRunId() == runID {
		t.Fatalf("reset %s: new run %q", id, resp.GetRunId())
	}
	return resp.GetRunId()
}

// runState is the Query "state" of one run.
func (e *env) runState(ctx context.Context, id, runID string) (contracts.State, error) {
	var s contracts.State
	v, err := e.c.QueryWorkflow(ctx, id, runID, contracts.QueryState)
	if err == nil {
		err = v.Get(&s)
	}
	return s, err
}

// waitQuestion waits until the latest run of id asks question round on
// task (the remote task in INPUT_REQUIRED).
func (e *env) waitQuestion(t *testing.T, ctx context.Context, id, task string, round int) contracts.State {
	t.Helper()
	var s contracts.State
	waitFor(t, fmt.Sprintf("question %d on task %s", round, task), 2*time.Minute, func() (bool, string) {
		var err error
		if s, err = dclient.Get(e.c, id).State(ctx); err != nil {
			return false, err.Error()
		}
		return s.A2AState == "input-required" && s.RemoteTaskID == task && s.Question != nil && s.Question.Round == round,
			fmt.Sprintf("%s task %q question %+v", s.A2AState, s.RemoteTaskID, s.Question)
	})
	return s
}

// sweptRun runs the orphan sweep (what `delegate reconcile` runs after its
// signals) until its report has a row for run runID (visibility lists a
// closed run a little after it closed), and returns that row.
func (e *env) sweptRun(t *testing.T, ctx context.Context, runID string) contracts.Orphan {
	t.Helper()
	return e.sweptRuns(t, ctx, runID)[runID]
}

// sweptRuns is sweptRun for several runs: the row of each run is the one
// of the first sweep that listed it (a later sweep finds what the first
// did).
func (e *env) sweptRuns(t *testing.T, ctx context.Context, runIDs ...string) map[string]contracts.Orphan {
	t.Helper()
	rows := map[string]contracts.Orphan{}
	waitFor(t, fmt.Sprintf("the sweep to list runs %v", runIDs), 2*time.Minute, func() (bool, string) {
		_, report, err := dclient.SweepOrphans(ctx, e.c, contracts.ReconcileInput{Namespace: e.srv.Namespace()})
		if err != nil {
			return false, err.Error()
		}
		for _, o := range report.Orphans {
			if _, ok := rows[o.RunID]; !ok && slices.Contains(runIDs, o.RunID) {
				rows[o.RunID] = o
			}
		}
		return len(rows) == len(runIDs), jsonOf(report.Orphans)
	})
	return rows
}

// reconciled runs the ReconcileDelegations workflow (what the reconcile
// Schedule runs: Signal "reconcile" to every open delegation, then the
// orphan sweep) until it signaled id and its sweep has a row for run
// runID, and returns that row.
func (e *env) reconciled(t *testing.T, ctx context.Context, id, runID string) contracts.Orphan {
	t.Helper()
	var row contracts.Orphan
	waitFor(t, "reconcile to signal "+id+" and sweep run "+runID, 2*time.Minute, func() (bool, string) {
		run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: contracts.TaskQueue},
			contracts.ReconcileWorkflowType, contracts.ReconcileInput{Namespace: e.srv.Namespace()})
		if err != nil {
			return false, err.Error()
		}
		var report contracts.ReconcileReport
		if err := run.Get(ctx, &report); err != nil {
			return false, err.Error()
		}
		signaled := false
		for _, s := range report.Signaled {
			signaled = signaled || s == id
		}
		for _, o := range report.Orphans {
			if o.RunID == runID && signaled {
				row = o
				return true, ""
			}
		}
		return false, jsonOf(report)
	})
	return row
}

// answer answers the latest run of id's question with text.
func (e *env) answer(t *testing.T, ctx context.Context, id, text string) {
	t.Helper()
	if n, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: text}); err != nil {
		t.Fatalf("answer %s: round %d, %v", id, n, err)
	}
}

// A Reset to each kind of point of a waiting delegation: before the send
// (the first workflow task), after the send (the workflow task after
// CheckAndSend completed), while an operator is asked (the workflow task
// after the question was read), after an answer (the workflow task after
// the answer's CheckAndSend completed; scenario two-questions, so the
// delegation still waits). Temporal closes the reset run as terminated;
// the new run replays to the point and sends only what comes after it,
// with the same messageIds. For each: the reconcile workflow (signals,
// then the orphan sweep) lists the closed run as closed by the reset,
// leaves its task to the new run (tracked), the task is never canceled,
// the delegation completes once answered, the agent made one task, and
// each messageId reached it as often as the point implies.
func TestOpsResetToEachPointKeepsOneLiveTask(t *testing.T) {
	p := newSendCounter()
	e := setup(t, func(o *options) { o.proxy = p.handler })
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	cases := []struct {
		name, scenario string
		point          resetPoint
		// answered is how many questions are answered before the
		// reset; questions, how many the scenario asks.
		answered, questions int
		// deliveries[round] is how many times the messageId of round
		// reaches the agent in all.
		deliveries []int
	}{
		{"before-the-send", claimsagent.ScenarioLostParcel, firstTaskCompleted, 0, 1, []int{2, 1}},
		{"after-the-send", claimsagent.ScenarioLostParcel, taskCompletedAfter(contracts.ActivityCheckAndSend, 1), 0, 1, []int{1, 1}},
		{"waiting-for-an-answer", claimsagent.ScenarioLostParcel, taskCompletedAfter("", 0), 0, 1, []int{1, 1}},
		{"after-an-answer", claimsagent.ScenarioTwoQuestions, taskCompletedAfter(contracts.ActivityCheckAndSend, 2), 1, 2, []int{1, 1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := lostParcel("ops-reset-"+tc.name, e.base)
			d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"` + tc.scenario + `"}`)
			tasks := e.agent.TaskCount()
			first, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
			for r := 1; r <= tc.answered; r++ {
				e.answer(t, ctx, d.LocalWorkflowID, fmt.Sprintf("answer %d", r))
				e.waitQuestion(t, ctx, d.LocalWorkflowID, task, r+1)
			}
			if tc.answered == 0 {
				e.waitQuestion(t, ctx, d.LocalWorkflowID, task, 1)
			}
			next := e.reset(t, ctx, d.LocalWorkflowID, first.GetRunID(), tc.point)
			e.waitQuestion(t, ctx, d.LocalWorkflowID, task, tc.answered+1)

			o := e.reconciled(t, ctx, d.LocalWorkflowID, first.GetRunID())
			if o.Action != contracts.OrphanTracked || o.RemoteTaskID != task || !strings.Contains(o.Error, next) {
				t.Errorf("sweep of the reset run = %+v, want task %s tracked by run %s", o, task, next)
			}
			if o.ClosedBy != contracts.OrphanClosedByReset || o.ResetRunID != next {
				t.Errorf("sweep of the reset run: closed_by %q, reset_run_id %q; want reset, %s", o.ClosedBy, o.ResetRunID, next)
			}
			if s := remote(task); s != contracts.TaskStateInputRequired {
				t.Errorf("the task after the sweep: %s, want still input-required", s)
			}
			for r := tc.answered + 1; r <= tc.questions; r++ {
				e.answer(t, ctx, d.LocalWorkflowID, fmt.Sprintf("answer %d", r))
				if r < tc.questions {
					e.waitQuestion(t, ctx, d.LocalWorkflowID, task, r+1)
				}
			}
			var out contracts.Outcome
			if err := e.c.GetWorkflow(ctx, d.LocalWorkflowID, next).Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted || out.InputRounds != tc.questions {
				t.Fatalf("outcome = %s, %d round(s), %+v, %v; want completed after %d", out.Status, out.InputRounds, out.Error, err, tc.questions)
			}
			if n := e.agent.TaskCount() - tasks; n != 1 {
				t.Errorf("the agent made %d tasks for the delegation, want 1", n)
			}
			for round, want := range tc.deliveries {
				if n := p.count(workflows.MessageID(d.LocalWorkflowID, first.GetRunID(), round)); n != want {
					t.Errorf("round %d's messageId reached the agent %d times, want %d", round, n, want)
				}
			}
		})
	}
}

// A Reset to before the send, swept while the new run's send is on its
// way (held at a proxy): the new run tracks no task yet, so "the running
// run tracks it" cannot tell. The sweep sees that the closed run was
// closed by the reset and that the running run shares its first run id
// (it sends the same messageIds): it leaves the task (tracked), sends
// nothing, and the resend gets the same task back.
func TestOpsResetSweptBeforeTheNewRunResends(t *testing.T) {
	p := newSendCounter()
	e := setup(t, func(o *options) { o.proxy = p.handler })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	d := lostParcel("ops-reset-swept-mid-send", e.base)
	d.SendTimeout = "5m" // the held send must not time out while the sweep runs
	first, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
	msg0 := workflows.MessageID(d.LocalWorkflowID, first.GetRunID(), 0)
	held, release := p.hold(msg0)
	defer release()
	next := e.reset(t, ctx, d.LocalWorkflowID, first.GetRunID(), firstTaskCompleted)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the new run's resend never came")
	}
	if s, err := e.runState(ctx, d.LocalWorkflowID, next); err != nil || s.RemoteTaskID != "" {
		t.Fatalf("the new run during its resend: task %q, %v; want none yet", s.RemoteTaskID, err)
	}
	o := e.sweptRun(t, ctx, first.GetRunID())
	if o.Action != contracts.OrphanTracked || o.ClosedBy != contracts.OrphanClosedByReset || !strings.Contains(o.Error, next) {
		t.Errorf("sweep during the resend = %+v, want tracked (closed by the reset, run %s)", o, next)
	}
	if s := remote(task); s != contracts.TaskStateInputRequired {
		t.Fatalf("the task after the sweep: %s, want still input-required", s)
	}
	release()
	e.waitQuestion(t, ctx, d.LocalWorkflowID, task, 1)
	e.answer(t, ctx, d.LocalWorkflowID, "photo")
	var out contracts.Outcome
	if err := e.c.GetWorkflow(ctx, d.LocalWorkflowID, next).Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %s %+v, %v; want completed", out.Status, out.Error, err)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("the agent made %d tasks, want 1", n)
	}
	if n := p.count(msg0); n != 2 {
		t.Errorf("round 0's messageId reached the agent %d times, want 2 (the first run's, the new run's)", n)
	}
}

// Terminate of a delegation waiting for an operator: the workflow stops on
// the spot and runs no CancelTask; the sweep lists the run as terminated
// (not a reset), cancels its remote task, and the agent shows it canceled.
func TestOpsTerminateWaitingDelegationSweepCancelsItsTask(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	d := lostParcel("ops-terminate-waiting", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
	if err := e.c.TerminateWorkflow(ctx, d.LocalWorkflowID, run.GetRunID(), "an operator's terminate"); err != nil {
		t.Fatal(err)
	}
	if s := remote(task); s != contracts.TaskStateInputRequired {
		t.Fatalf("the task before the sweep: %s, want input-required (a terminate cancels nothing)", s)
	}
	o := e.sweptRun(t, ctx, run.GetRunID())
	if o.Action != contracts.OrphanCanceled || o.RemoteTaskID != task || o.Before != "input-required" || o.Seen != string(contracts.TaskStateCanceled) {
		t.Errorf("sweep = %+v, want task %s canceled", o, task)
	}
	if o.ClosedBy != contracts.OrphanClosedByTerminate || o.ResetRunID != "" {
		t.Errorf("sweep: closed_by %q, reset_run_id %q; want terminated, none", o.ClosedBy, o.ResetRunID)
	}
	if s := remote(task); s != contracts.TaskStateCanceled {
		t.Errorf("the task after the sweep: %s, want canceled", s)
	}
}

// A Reset of a terminated delegation (to bring it back), to its first
// workflow task: the new run sends round 0 again with the same messageId.
// Before the sweep: the sweep lists the terminated run (closed by
// terminate, reset_run_id the new run) and leaves the task to the new run,
// which completes once answered, one task at the agent. After the sweep
// canceled the task: the agent gives the canceled task back, and the
// delegation ends with it.
func TestOpsResetOfATerminatedDelegation(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	terminated := func(t *testing.T, id string) (client.WorkflowRun, string) {
		t.Helper()
		run, err := startRun(ctx, e.c, lostParcel(id, e.base))
		if err != nil {
			t.Fatal(err)
		}
		task := waitA2AState(t, ctx, e.c, id, "input-required").RemoteTaskID
		if err := e.c.TerminateWorkflow(ctx, id, run.GetRunID(), "an operator's terminate"); err != nil {
			t.Fatal(err)
		}
		return run, task
	}

	t.Run("before-the-sweep", func(t *testing.T) {
		tasks := e.agent.TaskCount()
		run, task := terminated(t, "ops-reset-terminated-before-sweep")
		next := e.reset(t, ctx, run.GetID(), run.GetRunID(), firstTaskCompleted)
		e.waitQuestion(t, ctx, run.GetID(), task, 1)
		o := e.sweptRun(t, ctx, run.GetRunID())
		if o.Action != contracts.OrphanTracked || o.ClosedBy != contracts.OrphanClosedByTerminate || o.ResetRunID != next {
			t.Errorf("sweep = %+v, want tracked, closed by terminate, reset_run_id %s", o, next)
		}
		e.answer(t, ctx, run.GetID(), "photo")
		var out contracts.Outcome
		if err := e.c.GetWorkflow(ctx, run.GetID(), next).Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
			t.Fatalf("outcome = %s %+v, %v; want completed", out.Status, out.Error, err)
		}
		if n := e.agent.TaskCount() - tasks; n != 1 {
			t.Errorf("the agent made %d tasks, want 1", n)
		}
	})

	t.Run("after-the-sweep", func(t *testing.T) {
		run, task := terminated(t, "ops-reset-terminated-after-sweep")
		if o := e.sweptRun(t, ctx, run.GetRunID()); o.Action != contracts.OrphanCanceled {
			t.Fatalf("sweep = %+v, want canceled", o)
		}
		next := e.reset(t, ctx, run.GetID(), run.GetRunID(), firstTaskCompleted)
		var out contracts.Outcome
		if err := e.c.GetWorkflow(ctx, run.GetID(), next).Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled {
			t.Fatalf("outcome = %s %+v, %v; want canceled (the agent's)", out.Status, out.Error, err)
		}
		if s := stateOf(t, ctx, e.c, run.GetID()); s.RemoteTaskID != task || remote(task) != contracts.TaskStateCanceled {
			t.Errorf("the new run's task = %s (%s), want the canceled %s", s.RemoteTaskID, remote(s.RemoteTaskID), task)
		}
	})
}

// A start with the conflict policy TERMINATE_EXISTING over a waiting
// delegation of the same local_workflow_id: the old run is terminated; the
// new run is a new chain (its first run id is its own), so its messageIds
// differ and the agent makes it a task of its own. The sweep cancels the
// old run's task and leaves the new one's: two tasks at the agent, one
// canceled; the new delegation completes.
func TestOpsTerminateExistingStartCancelsTheOldRunsTask(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	d := lostParcel("ops-terminate-existing", e.base)
	first, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	old := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	second, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: d.LocalWorkflowID, TaskQueue: contracts.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING}, contracts.WorkflowType, d)
	if err != nil {
		t.Fatal(err)
	}
	if second.GetRunID() == first.GetRunID() {
		t.Fatal("TERMINATE_EXISTING gave back the running run")
	}
	var now contracts.State
	waitFor(t, "the new run's own task", time.Minute, func() (bool, string) {
		var err error
		if now, err = e.runState(ctx, d.LocalWorkflowID, second.GetRunID()); err != nil {
			return false, err.Error()
		}
		return now.A2AState == "input-required" && now.RemoteTaskID != "", now.A2AState
	})
	if now.RemoteTaskID == old.RemoteTaskID {
		t.Fatalf("the new run tracks the old run's task %s", now.RemoteTaskID)
	}
	if len(old.Sends) == 0 || len(now.Sends) == 0 || old.Sends[0].MessageID == now.Sends[0].MessageID ||
		old.Sends[0].MessageID != workflows.MessageID(d.LocalWorkflowID, first.GetRunID(), 0) ||
		now.Sends[0].MessageID != workflows.MessageID(d.LocalWorkflowID, second.GetRunID(), 0) {
		t.Errorf("messageIds: old %+v, new %+v; want each derived from its own first run id", old.Sends, now.Sends)
	}
	o := e.sweptRun(t, ctx, first.GetRunID())
	if o.Action != contracts.OrphanCanceled || o.RemoteTaskID != old.RemoteTaskID || o.ClosedBy != contracts.OrphanClosedByTerminate {
		t.Errorf("sweep of the old run = %+v, want its task %s canceled, closed by terminate", o, old.RemoteTaskID)
	}
	if s := remote(old.RemoteTaskID); s != contracts.TaskStateCanceled {
		t.Errorf("the old run's task: %s, want canceled", s)
	}
	if s := remote(now.RemoteTaskID); s != contracts.TaskStateInputRequired {
		t.Errorf("the new run's task: %s, want input-required", s)
	}
	e.answer(t, ctx, d.LocalWorkflowID, "photo")
	var out contracts.Outcome
	if err := second.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("the new run's outcome = %s %+v, %v; want completed", out.Status, out.Error, err)
	}
	if n := e.agent.TaskCount(); n != 2 {
		t.Errorf("the agent made %d tasks, want 2 (one canceled)", n)
	}
}

// batch runs a batch operation over a visibility query (what `temporal
// workflow cancel|terminate|signal --query` does: StartBatchOperation,
// then DescribeBatchOperation until it is done) and checks that it
// reached want executions, each without failure.
func (e *env) batch(t *testing.T, ctx context.Context, query string, want int, op func(*workflowservice.StartBatchOperationRequest)) {
	t.Helper()
	req := &workflowservice.StartBatchOperationRequest{Namespace: e.srv.Namespace(), VisibilityQuery: query,
		JobId: uuid.NewString(), Reason: "an operator's batch"}
	op(req)
	if _, err := e.c.WorkflowService().StartBatchOperation(ctx, req); err != nil {
		t.Fatalf("StartBatchOperation(%s): %v", query, err)
	}
	var d *workflowservice.DescribeBatchOperationResponse
	waitFor(t, "the batch operation to finish", 2*time.Minute, func() (bool, string) {
		var err error
		d, err = e.c.WorkflowService().DescribeBatchOperation(ctx, &workflowservice.DescribeBatchOperationRequest{Namespace: e.srv.Namespace(), JobId: req.JobId})
		if err != nil {
			return false, err.Error()
		}
		return d.GetState() != enumspb.BATCH_OPERATION_STATE_RUNNING && d.GetState() != enumspb.BATCH_OPERATION_STATE_UNSPECIFIED, d.GetState().String()
	})
	if d.GetState() != enumspb.BATCH_OPERATION_STATE_COMPLETED || d.GetCompleteOperationCount() != int64(want) || d.GetFailureOperationCount() != 0 {
		t.Fatalf("batch %s: %s, %d done, %d failed; want completed, %d done", query, d.GetState(), d.GetCompleteOperationCount(), d.GetFailureOperationCount(), want)
	}
}

// Batch operations over a visibility query (A2APurpose, which the start
// sets), each over two waiting delegations: cancel ends each canceled with
// its remote task canceled by the workflow; terminate leaves the tasks to
// the sweep, which cancels them (closed by terminate); signal "revoke"
// with a Revocation ends each authorization_denied, its remote task
// canceled.
func TestOpsBatchOperationsOverAQuery(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	// waiting starts two delegations of purpose and waits for both to ask
	// and for visibility to list them by purpose; it returns their runs
	// and tasks and the query.
	waiting := func(t *testing.T, purpose string) ([]client.WorkflowRun, []string, string) {
		t.Helper()
		var runs []client.WorkflowRun
		var tasks []string
		for i := range 2 {
			d := lostParcel(fmt.Sprintf("ops-batch-%s-%d", strings.ReplaceAll(purpose, " ", "-"), i), e.base)
			d.Purpose = purpose
			run, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, run)
			tasks = append(tasks, waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID)
		}
		query := fmt.Sprintf(`WorkflowType = %q AND ExecutionStatus = "Running" AND %s = %q`, contracts.WorkflowType, contracts.SearchAttributeA2APurpose, purpose)
		waitFor(t, "visibility to list both", time.Minute, func() (bool, string) {
			resp, err := e.c.ListWorkflow(ctx, listRequest(e.srv.Namespace(), query))
			if err != nil {
				return false, err.Error()
			}
			return len(resp.GetExecutions()) == 2, fmt.Sprint(len(resp.GetExecutions()))
		})
		return runs, tasks, query
	}

	t.Run("cancel", func(t *testing.T) {
		runs, tasks, query := waiting(t, "ops batch cancel")
		e.batch(t, ctx, query, 2, func(r *workflowservice.StartBatchOperationRequest) {
			r.Operation = &workflowservice.StartBatchOperationRequest_CancellationOperation{CancellationOperation: &batchpb.BatchOperationCancellation{Identity: "ops-test"}}
		})
		for i, run := range runs {
			var out contracts.Outcome
			if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled {
				t.Errorf("%s: outcome %s %+v, %v; want canceled", run.GetID(), out.Status, out.Error, err)
			}
			if s := remote(tasks[i]); s != contracts.TaskStateCanceled {
				t.Errorf("%s: remote task %s, want canceled", run.GetID(), s)
			}
		}
	})

	t.Run("terminate", func(t *testing.T) {
		runs, tasks, query := waiting(t, "ops batch terminate")
		e.batch(t, ctx, query, 2, func(r *workflowservice.StartBatchOperationRequest) {
			r.Operation = &workflowservice.StartBatchOperationRequest_TerminationOperation{TerminationOperation: &batchpb.BatchOperationTermination{Identity: "ops-test"}}
		})
		for i, run := range runs {
			if s := remote(tasks[i]); s != contracts.TaskStateInputRequired {
				t.Errorf("%s: remote task %s before the sweep, want input-required", run.GetID(), s)
			}
		}
		rows := e.sweptRuns(t, ctx, runs[0].GetRunID(), runs[1].GetRunID())
		for i, run := range runs {
			o := rows[run.GetRunID()]
			if o.Action != contracts.OrphanCanceled || o.RemoteTaskID != tasks[i] || o.ClosedBy != contracts.OrphanClosedByTerminate {
				t.Errorf("%s: sweep %+v, want its task %s canceled, closed by terminate", run.GetID(), o, tasks[i])
			}
			if s := remote(tasks[i]); s != contracts.TaskStateCanceled {
				t.Errorf("%s: remote task %s after the sweep, want canceled", run.GetID(), s)
			}
		}
	})

	t.Run("signal-revoke", func(t *testing.T) {
		runs, tasks, query := waiting(t, "ops batch revoke")
		input, err := converter.GetDefaultDataConverter().ToPayloads(contracts.Revocation{Reason: "the customer withdrew the claims"})
		if err != nil {
			t.Fatal(err)
		}
		e.batch(t, ctx, query, 2, func(r *workflowservice.StartBatchOperationRequest) {
			r.Operation = &workflowservice.StartBatchOperationRequest_SignalOperation{SignalOperation: &batchpb.BatchOperationSignal{
				Signal: contracts.SignalRevoke, Input: input, Identity: "ops-test"}}
		})
		for i, run := range runs {
			var out contracts.Outcome
			if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusAuthorizationDenied ||
				out.Error == nil || !strings.Contains(out.Error.Message, "the customer withdrew the claims") {
				t.Errorf("%s: outcome %s %+v, %v; want authorization_denied with the reason", run.GetID(), out.Status, out.Error, err)
			}
			if s := remote(tasks[i]); s != contracts.TaskStateCanceled {
				t.Errorf("%s: remote task %s, want canceled", run.GetID(), s)
			}
		}
	})
}

// opsParent is a caller that is a workflow: it runs d as a child
// Delegation (workflow id d.LocalWorkflowID) with parent close policy
// policy (UNSPECIFIED: Temporal's default, TERMINATE).
func opsParent(ctx workflow.Context, d contracts.Delegation, policy enumspb.ParentClosePolicy) (contracts.Outcome, error) {
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: d.LocalWorkflowID, TaskQueue: contracts.TaskQueue, ParentClosePolicy: policy})
	var out contracts.Outcome
	err := workflow.ExecuteChildWorkflow(ctx, contracts.WorkflowType, d).Get(ctx, &out)
	return out, err
}

const opsParentType = "OpsParent"

// A Delegation started as a child workflow, its parent terminated while
// the delegation waits: with Temporal's default parent close policy
// (TERMINATE) the child is terminated too, runs no CancelTask, and the
// sweep cancels its remote task; with REQUEST_CANCEL the child is
// canceled, cancels its remote task itself and ends canceled (the sweep
// has nothing to do).
func TestOpsParentTerminatedChildDelegation(t *testing.T) {
	e := setup(t, func(o *options) {
		o.register = func(w worker.Worker) {
			w.RegisterWorkflowWithOptions(opsParent, workflow.RegisterOptions{Name: opsParentType})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	remote := e.remoteStates(t, ctx)
	// child starts a parent with policy and terminates it once its child
	// waits; it returns the child's run id and task.
	child := func(t *testing.T, name string, policy enumspb.ParentClosePolicy) (string, string) {
		t.Helper()
		d := lostParcel("ops-child-"+name, e.base)
		parent, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "ops-parent-" + name, TaskQueue: contracts.TaskQueue}, opsParentType, d, policy)
		if err != nil {
			t.Fatal(err)
		}
		task := waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required").RemoteTaskID
		desc, err := e.c.DescribeWorkflowExecution(ctx, d.LocalWorkflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		if p := desc.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId(); p != parent.GetID() {
			t.Fatalf("the delegation's parent is %q, want %s", p, parent.GetID())
		}
		if err := e.c.TerminateWorkflow(ctx, parent.GetID(), parent.GetRunID(), "an operator's terminate of the parent"); err != nil {
			t.Fatal(err)
		}
		return desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), task
	}
	closedAs := func(t *testing.T, id string, want enumspb.WorkflowExecutionStatus) {
		t.Helper()
		waitFor(t, id+" to close "+want.String(), time.Minute, func() (bool, string) {
			desc, err := e.c.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return false, err.Error()
			}
			return desc.GetWorkflowExecutionInfo().GetStatus() == want, desc.GetWorkflowExecutionInfo().GetStatus().String()
		})
	}

	t.Run("default-policy-terminate", func(t *testing.T) {
		runID, task := child(t, "terminate", enumspb.PARENT_CLOSE_POLICY_UNSPECIFIED)
		closedAs(t, "ops-child-terminate", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
		o := e.sweptRun(t, ctx, runID)
		if o.Action != contracts.OrphanCanceled || o.RemoteTaskID != task || o.ClosedBy != contracts.OrphanClosedByTerminate {
			t.Errorf("sweep of the child = %+v, want its task %s canceled, closed by terminate", o, task)
		}
		if s := remote(task); s != contracts.TaskStateCanceled {
			t.Errorf("the child's task: %s, want canceled", s)
		}
	})

	t.Run("request-cancel", func(t *testing.T) {
		_, task := child(t, "request-cancel", enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL)
		var out contracts.Outcome
		if err := e.c.GetWorkflow(ctx, "ops-child-request-cancel", "").Get(ctx, &out); err != nil || out.Status != contracts.StatusCanceled {
			t.Fatalf("the child's outcome = %s %+v, %v; want canceled", out.Status, out.Error, err)
		}
		closedAs(t, "ops-child-request-cancel", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
		if s := remote(task); s != contracts.TaskStateCanceled {
			t.Errorf("the child's task: %s, want canceled by the delegation itself", s)
		}
	})
}
