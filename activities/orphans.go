package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/a2adelegate/delegate/contracts"
)

// CancelOrphans is the reconcile sweep for delegations killed from
// outside. A run that was terminated (by an operator, a batch, a parent's
// close policy, or replaced by a start with the conflict policy
// TERMINATE_EXISTING) or timed out (a timeout the workflow could not
// refuse) never ran its CancelTask: the agent's task may go on working
// with nobody following it. CancelOrphans lists the Delegation runs
// terminated or timed out, with a remote task, within in.OrphanWindow
// (default contracts.DefaultOrphanWindow; at most
// contracts.MaxOrphansPerSweep), asks each for its last State (Query
// "state": a closed run still answers from its history), and records how
// it closed (Orphan.ClosedBy: a Reset closes the run it resets as
// terminated). The running run of the same workflow id, if any, keeps the
// task when it tracks it, or when it has not sent yet and shares the
// closed run's first run id (a Reset's new run sends the same
// messageIds): action "tracked"; a running run that cannot be read keeps
// it too (action "error", nothing canceled). For each other run whose
// remote task had not ended it reads the task (GetTask, A2A 1.0 §3.1.3)
// and, when it still runs, cancels it (CancelTask, §3.1.5), with the
// worker's credentials for the interface's origin. It returns what it did
// for each, the record of the sweep (the ReconcileDelegations workflow's
// result; each action is logged too). A sweep again later finds the task
// ended and does nothing more. Errors: no Temporal client, or the listing
// failed; a run that cannot be read or canceled is an Orphan with Action
// "error".
func (a *Activities) CancelOrphans(ctx context.Context, in contracts.ReconcileInput) ([]contracts.Orphan, error) {
	if a.Temporal == nil {
		return nil, errors.New("the worker has no Temporal client for reconciliation")
	}
	stop := keepHeartbeating(ctx, 3*time.Second)
	defer stop()
	window := in.OrphanWindow
	if window <= 0 {
		window = contracts.DefaultOrphanWindow
	}
	// Only runs that recorded a remote task (the workflow's own search
	// attribute; a refused run unsets what a starter set), so that runs
	// that never sent cannot crowd the real orphans out of a sweep.
	query := fmt.Sprintf(`WorkflowType = %q AND (ExecutionStatus = "Terminated" OR ExecutionStatus = "TimedOut") AND CloseTime > %q AND %s IS NOT NULL`,
		contracts.WorkflowType, time.Now().Add(-window).UTC().Format(time.RFC3339Nano), contracts.SearchAttributeA2ARemoteTaskID)
	out := []contracts.Orphan{}
	var token []byte
	read := 0
	for read < contracts.MaxOrphansPerSweep {
		resp, err := a.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: in.Namespace, Query: query, NextPageToken: token, PageSize: 100})
		if err != nil {
			return out, fmt.Errorf("listing terminated delegations: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if read == contracts.MaxOrphansPerSweep {
				break
			}
			read++
			if o, ok := a.orphan(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()); ok {
				out = append(out, o)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return out, nil
}

// orphan handles one terminated run; ok is false when its remote task had
// ended before it was terminated (nothing to do).
func (a *Activities) orphan(ctx context.Context, id, runID string) (contracts.Orphan, bool) {
	o := contracts.Orphan{WorkflowID: id, RunID: runID, At: time.Now().UTC()}
	defer func() {
		if o.Action != "" {
			a.logger().Info("orphan of a terminated delegation", "local_workflow_id", id, "run_id", runID,
				"remote_task_id", o.RemoteTaskID, "closed_by", o.ClosedBy, "action", o.Action, "seen", o.Seen, "error", o.Error)
		}
	}()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := a.Temporal.QueryWorkflow(qctx, id, runID, contracts.QueryState)
	var st contracts.State
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		o.Action, o.Error = contracts.OrphanError, contracts.CutText("its state could not be read: "+err.Error(), 500)
		return o, true
	}
	o.RemoteTaskID, o.Agent, o.Before = st.RemoteTaskID, st.Interface.URL, st.A2AState
	if contracts.TaskState(st.A2AState).Terminal() {
		return o, false
	}
	closed, err := a.closedRun(ctx, id, runID)
	o.ClosedBy, o.ResetRunID = closed.by, closed.resetRunID
	switch {
	case st.RemoteTaskID == "":
		o.Action = contracts.OrphanNoRemoteTask
		if st.SendInFlight != "" {
			o.Error = "a send was in flight when it was terminated: the task it may have created is unknown"
		}
		return o, true
	case err != nil:
		o.Action, o.Error = contracts.OrphanError, contracts.CutText(err.Error()+": nothing canceled", 500)
		return o, true
	}
	live, err := a.liveRun(ctx, id, runID)
	if err != nil {
		// The running run of the same id may track this task: never
		// cancel what cannot be told apart.
		o.Action, o.Error = contracts.OrphanError, contracts.CutText(err.Error()+": nothing canceled", 500)
		return o, true
	}
	if live != nil {
		switch {
		case live.state.RemoteTaskID == st.RemoteTaskID:
			// A Reset closes the run it resets as terminated, and its new
			// run goes on with the same task (the same messageIds: the
			// agent gave it back): canceling it would kill the live
			// delegation.
			o.Action, o.Error = contracts.OrphanTracked, "run "+live.runID+" of the same workflow id tracks this task"
			return o, true
		case live.state.RemoteTaskID == "" && live.firstRunID == closed.firstRunID:
			// A Reset to before the send: the new run has not sent yet;
			// it sends the same messageIds (they derive from the first
			// run id, which a reset keeps), and an agent that deduplicates
			// gives it this task back. A later sweep looks again.
			o.Action, o.Error = contracts.OrphanTracked, "run "+live.runID+" of the same workflow id has not sent yet: it sends the same messageIds"
			return o, true
		}
	}
	snap, err := a.GetTask(ctx, contracts.GetTaskInput{Interface: st.Interface, TaskID: st.RemoteTaskID, ContextID: st.ContextID})
	if err != nil {
		o.Action, o.Error = contracts.OrphanError, contracts.CutText("GetTask: "+err.Error(), 500)
		return o, true
	}
	if snap.State.Terminal() {
		o.Action, o.Seen = contracts.OrphanAlreadyEnded, string(snap.State)
		return o, true
	}
	snap, err = a.CancelTask(ctx, contracts.CancelInput{Interface: st.Interface, TaskID: st.RemoteTaskID, ContextID: st.ContextID})
	if err != nil {
		o.Action, o.Error = contracts.OrphanError, contracts.CutText("CancelTask: "+err.Error(), 500)
		return o, true
	}
	o.Action, o.Seen = contracts.OrphanCanceled, string(snap.State)
	return o, true
}

// closed is what Temporal recorded of a closed run: how it closed (by),
// the run a Reset of it started, and the first run id of its chain (its
// messageIds derive from it).
type closed struct {
	by, resetRunID, firstRunID string
}

// closedRun reads how run runID of workflow id closed: by is "reset" when
// a Temporal Reset terminated it (its close event's identity is the
// server's resetter), "terminated" or "timed_out" otherwise (empty when
// the close event cannot be read); resetRunID is
// DescribeWorkflowExecution's reset_run_id (a terminated run can be reset
// later too). Errors: the run cannot be described.
func (a *Activities) closedRun(ctx context.Context, id, runID string) (closed, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := a.Temporal.DescribeWorkflowExecution(dctx, id, runID)
	if err != nil {
		return closed{}, fmt.Errorf("the run could not be described: %w", err)
	}
	c := closed{resetRunID: d.GetWorkflowExtendedInfo().GetResetRunId(), firstRunID: d.GetWorkflowExecutionInfo().GetFirstRunId()}
	switch d.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		c.by = contracts.OrphanClosedByTimeout
		return c, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
	default:
		return c, nil
	}
	it := a.Temporal.GetWorkflowHistory(dctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	if !it.HasNext() {
		return c, nil
	}
	ev, err := it.Next()
	if err != nil {
		return c, nil
	}
	c.by = contracts.OrphanClosedByTerminate
	if ev.GetWorkflowExecutionTerminatedEventAttributes().GetIdentity() == resetterIdentity {
		c.by = contracts.OrphanClosedByReset
	}
	return c, nil
}

// resetterIdentity is the identity the Temporal server terminates a run
// with when a Reset closes it (go.temporal.io/server
// service/history/consts.IdentityResetter).
const resetterIdentity = "history-resetter"

// live is the running run of a workflow id and its last State.
type live struct {
	runID, firstRunID string
	state             contracts.State
}

// liveRun returns the running run of workflow id when it is another run
// than runID (nil when none runs). Errors: the run runs but cannot be
// described or read (Query "state"): the caller must not cancel.
func (a *Activities) liveRun(ctx context.Context, id, runID string) (*live, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := a.Temporal.DescribeWorkflowExecution(dctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("the latest run of %s could not be described: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	latest := info.GetExecution().GetRunId()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || latest == runID {
		return nil, nil // no run follows a task now; a terminated one is an orphan of its own
	}
	v, err := a.Temporal.QueryWorkflow(dctx, id, latest, contracts.QueryState)
	var st contracts.State
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		return nil, fmt.Errorf("the running run %s of the same workflow id could not be read: %w", latest, err)
	}
	return &live{runID: latest, firstRunID: info.GetFirstRunId(), state: st}, nil
}
