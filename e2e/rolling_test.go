package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// rollingWaitingEvents is workflows.Options.WaitingHistoryEvents of every
// worker of the rolling-deploy test: a run waiting for an answer hands
// over once its history is past it, which the test's signals make happen.
// Above what the first run writes before it waits (about 25 events).
const rollingWaitingEvents = 40

// TestRollingDeployAcrossContinueAsNew runs one delegation across five
// continue-as-new hand-overs while two builds of the worker take turns
// (docs/versioning.md, "Data"): this release ("release", N) and the build
// with tag rollingnext ("next", N+1), which adds one optional field to
// contracts.State and one to contracts.Carry and writes them when it
// hands over. One worker runs at a time; the one that hands over polls no
// more (e2e/rollingworker), is stopped, and a worker of the next build in
// the plan takes the next run's first task: N, N+1, N, N+1, N+1, N+1.
//
// It shows, from the histories: every run's tasks were taken by the
// planned build alone, so each carry was read by the other build in
// every switch; no workflow task failed or timed out; the fields N+1
// writes are in each carry it wrote, read past by N, gone from the carry
// N wrote after (N has no field to keep them in), and kept from one N+1
// hand-over to the next; the delegation completes after its answer with
// one remote task, and its search attribute DelegationCodeVersion is the
// code version, found by the visibility query while it runs.
func TestRollingDeployAcrossContinueAsNew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bins := map[string]string{"release": filepath.Join(dir, "release"), "next": filepath.Join(dir, "next")}
	for name, bin := range bins {
		args := []string{"build", "-o", bin}
		if name == "next" {
			args = append(args, "-tags", "rollingnext")
		}
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, "go", append(args, "github.com/a2adelegate/delegate/e2e/rollingworker")...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("built %s in %s", name, time.Since(t0).Round(time.Second))
	}
	e := setup(t, func(o *options) { o.noWorker = true })

	type proc struct {
		identity string
		cmd      *exec.Cmd
	}
	start := func(build string, n int) *proc {
		identity := fmt.Sprintf("%s-%d", build, n)
		logf, err := os.Create(filepath.Join(dir, identity+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bins[build], "-address", e.srv.FrontendAddr(), "-namespace", e.srv.Namespace(),
			"-identity", identity, "-waiting-history-events", strconv.Itoa(rollingWaitingEvents))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("--- %s log (tail) ---\n%s", identity, tail(string(b), 2000))
			}
		})
		return &proc{identity: identity, cmd: cmd}
	}
	stop := func(p *proc) {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}

	d := lostParcel("rolling-1", e.base)
	d.WaitingPollSeconds = 3600 // a waiting run is quiet: no read while the test runs
	d.Deadline = time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
	id := d.LocalWorkflowID
	// describe returns the current run and whether it is quiet (no
	// workflow task or activity pending); a run that ended fails the test.
	describe := func() (string, bool, string) {
		resp, err := e.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return "", false, err.Error()
		}
		info := resp.GetWorkflowExecutionInfo()
		if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("run %s ended: %s", info.GetExecution().GetRunId(), st)
		}
		quiet := resp.GetPendingWorkflowTask() == nil && len(resp.GetPendingActivities()) == 0
		return info.GetExecution().GetRunId(), quiet, fmt.Sprintf("run %s, workflow task %v, %d activities",
			info.GetExecution().GetRunId(), resp.GetPendingWorkflowTask() != nil, len(resp.GetPendingActivities()))
	}
	// waiting waits until run is the current run, quiet, and asks its
	// question (the state query is answered by the worker running).
	waiting := func(run string) {
		waitFor(t, "run "+run+" waiting for an answer", time.Minute, func() (bool, string) {
			cur, quiet, info := describe()
			if cur != run || !quiet {
				return false, info
			}
			s, err := dclient.Get(e.c, id).State(ctx)
			if err != nil {
				return false, err.Error()
			}
			return s.Question != nil, "state " + s.A2AState
		})
	}
	// handOver grows the history of run, one ignored signal at a time,
	// each handled before the next is sent, until run continues as new;
	// it returns the next run.
	handOver := func(run string) string {
		for range 3 * rollingWaitingEvents {
			if err := e.c.SignalWorkflow(ctx, id, run, contracts.ProvideInput, map[string]string{"note": "not an answer: grows the history"}); err != nil {
				t.Fatalf("signal run %s: %v", run, err)
			}
			next := ""
			waitFor(t, "the signal handled", 30*time.Second, func() (bool, string) {
				resp, err := e.c.DescribeWorkflowExecution(ctx, id, "")
				if err != nil {
					return false, err.Error()
				}
				if cur := resp.GetWorkflowExecutionInfo().GetExecution().GetRunId(); cur != run {
					next = cur
					return true, ""
				}
				return resp.GetPendingWorkflowTask() == nil, "a workflow task pending"
			})
			if next != "" {
				return next
			}
		}
		t.Fatalf("run %s did not continue as new past %d history events", run, rollingWaitingEvents)
		return ""
	}

	plan := []string{"release", "next", "release", "next", "next", "next"}
	w := start(plan[0], 1)
	first, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	runs := []string{first.GetRunID()}
	waiting(runs[0])
	for k := 1; k < len(plan); k++ {
		next := handOver(runs[k-1])
		// The worker that handed over polls no more: the next run's
		// first task waits for the next worker.
		stop(w)
		w = start(plan[k], k+1)
		runs = append(runs, next)
		waiting(next)
	}
	query := fmt.Sprintf("%s = '%s' AND ExecutionStatus = 'Running'", contracts.SearchAttributeDelegationCodeVersion, workflows.Newest())
	listed := func() (bool, string) {
		resp, err := e.c.ListWorkflow(ctx, listRequest(e.srv.Namespace(), query))
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, ex := range resp.GetExecutions() {
			ids = append(ids, ex.GetExecution().GetWorkflowId())
		}
		return slices.Contains(ids, id), fmt.Sprint(ids)
	}
	waitFor(t, "visibility: "+query, 30*time.Second, listed)

	if _, err := dclient.Get(e.c, id).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "rolling"}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	var out contracts.Outcome
	if err := e.c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
		t.Fatalf("the delegation: %v", err)
	}
	if out.Status != contracts.StatusCompleted || out.InputRounds != 1 || len(out.Outputs) != 1 {
		t.Errorf("outcome = %+v, want completed after one round with one output", out)
	}
	if n := e.agent.TaskCount(); n != 1 {
		t.Errorf("agent tasks = %d, want 1", n)
	}

	// The histories, run by run.
	type runInfo struct {
		identities []string
		carry      map[string]any // workflow input 2, as written
		closed     enumspb.EventType
		nextRun    string
		failures   []string
		length     int
	}
	read := func(run string) runInfo {
		var ri runInfo
		it := e.c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			ri.length++
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				if ps := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(); len(ps) > 1 {
					if err := json.Unmarshal(ps[1].GetData(), &ri.carry); err != nil {
						t.Fatalf("run %s: carry: %v", run, err)
					}
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				ri.identities = append(ri.identities, ev.GetWorkflowTaskStartedEventAttributes().GetIdentity())
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				ri.failures = append(ri.failures, fmt.Sprintf("%s %v", ev.GetEventType(), ev.GetAttributes()))
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				ri.closed, ri.nextRun = ev.GetEventType(), ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
				ri.closed = ev.GetEventType()
			}
		}
		return ri
	}
	infos := make([]runInfo, len(runs))
	for k, run := range runs {
		infos[k] = read(run)
		ri := infos[k]
		t.Logf("run %d (%s): %d events, tasks taken by %v", k+1, plan[k], ri.length, ri.identities)
		want := fmt.Sprintf("%s-%d", plan[k], k+1)
		if len(ri.identities) == 0 || slices.ContainsFunc(ri.identities, func(s string) bool { return s != want }) {
			t.Errorf("run %d: workflow tasks taken by %v, want all by %s", k+1, ri.identities, want)
		}
		if len(ri.failures) > 0 {
			t.Errorf("run %d: %v", k+1, ri.failures)
		}
		switch {
		case k < len(runs)-1 && (ri.closed != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW || ri.nextRun != runs[k+1]):
			t.Errorf("run %d closed with %s (next run %s), want continued as new into %s", k+1, ri.closed, ri.nextRun, runs[k+1])
		case k == len(runs)-1 && ri.closed != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			t.Errorf("the last run closed with %s, want completed", ri.closed)
		}
	}

	// What N+1 added, carry by carry: carry k (input 2 of run k+1) was
	// written by run k's build.
	listOf := func(v any) []string {
		var out []string
		for _, x := range asList(v) {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	var kept []string // state.rolling_next as the last carry holds it
	for k := 1; k < len(runs); k++ {
		c, writer := infos[k].carry, plan[k-1]
		if c == nil {
			t.Fatalf("run %d has no carry", k+1)
		}
		st, _ := c["state"].(map[string]any)
		top, inState := c["rolling_next"], st["rolling_next"]
		if writer == "release" {
			// N knows neither field: the carry it wrote holds neither,
			// even when the one it read (from N+1) did.
			if top != nil || inState != nil {
				t.Errorf("carry %d (written by N): rolling_next %v, state.rolling_next %v; want neither", k, top, inState)
			}
			kept = nil
			continue
		}
		want := append(slices.Clone(kept), runs[k-1])
		if top != runs[k-1] || !slices.Equal(listOf(inState), want) {
			t.Errorf("carry %d (written by N+1): rolling_next %v, state.rolling_next %v; want %s and %v", k, top, inState, runs[k-1], want)
		}
		kept = want
	}
	if len(kept) != 2 {
		t.Errorf("state.rolling_next of the last carry = %v: the plan ends with two N+1 hand-overs, whose entries both stay", kept)
	}
	// The state as N+1 shows it at the end: what the last carry held.
	v, err := e.c.QueryWorkflow(ctx, id, "", contracts.QueryState)
	if err != nil {
		t.Fatal(err)
	}
	var final map[string]any
	if err := v.Get(&final); err != nil {
		t.Fatal(err)
	}
	if got := listOf(final["rolling_next"]); !slices.Equal(got, kept) {
		t.Errorf("final state's rolling_next = %v, want %v", got, kept)
	}
	if got := final["continued_as_new"]; got != float64(len(runs)-1) {
		t.Errorf("final state's continued_as_new = %v, want %d", got, len(runs)-1)
	}

	// The code version on the finished delegation, and the query no longer
	// lists it.
	if got := codeVersionOf(t, ctx, e, id); got != workflows.Newest() {
		t.Errorf("DelegationCodeVersion = %q, want %q", got, workflows.Newest())
	}
	waitFor(t, "visibility: the ended delegation no longer listed by "+query, 30*time.Second, func() (bool, string) {
		ok, info := listed()
		return !ok, info
	})
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
