package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/a2adelegate/delegate/contracts"
)

// CancelOrphans is the reconcile sweep for delegations killed from
// outside. A run that was terminated (by an operator, or replaced by a
// start with the conflict policy TERMINATE_EXISTING) or timed out (a
// timeout the workflow could not refuse) never ran its CancelTask: the
// agent's task may go on working with nobody following it. CancelOrphans
// lists the Delegation runs terminated or timed out, with a remote task, within
// in.OrphanWindow (default contracts.DefaultOrphanWindow; at most
// contracts.MaxOrphansPerSweep), asks each for its last State (Query
// "state": a closed run still answers from its history), and for each
// whose remote task had not ended reads the task (GetTask, A2A 1.0
// §3.1.3) and, when it still runs, cancels it (CancelTask, §3.1.5), with
// the worker's credentials for the interface's origin. It returns what it
// did for each, the record of the sweep (the ReconcileDelegations
// workflow's result; each action is logged too). A sweep again later
// finds the task ended and does nothing more. Errors: no Temporal client,
// or the listing failed; a run that cannot be read or canceled is an
// Orphan with Action "error".
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
			a.logger().Info("orphan of a terminated delegation", "workflow_id", id, "run_id", runID,
				"remote_task_id", o.RemoteTaskID, "action", o.Action, "seen", o.Seen, "error", o.Error)
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
	switch {
	case contracts.TaskState(st.A2AState).Terminal():
		return o, false
	case st.RemoteTaskID == "":
		o.Action = contracts.OrphanNoRemoteTask
		if st.SendInFlight != "" {
			o.Error = "a send was in flight when it was terminated: the task it may have created is unknown"
		}
		return o, true
	}
	if run, ok := a.trackedElsewhere(ctx, id, runID, st.RemoteTaskID); ok {
		// A Reset closes the run it resets as terminated, and its new run
		// goes on with the same task (the same messageIds: the agent gave
		// it back): canceling it would kill the live delegation.
		o.Action, o.Error = contracts.OrphanTracked, "run "+run+" of the same workflow id tracks this task"
		return o, true
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

// trackedElsewhere reports whether the latest run of workflow id, when it
// is another run than runID and was not itself terminated or timed out,
// tracks remote task taskID (its Query state; a closed run answers from
// its history). A run that cannot be read counts as not tracking.
func (a *Activities) trackedElsewhere(ctx context.Context, id, runID, taskID string) (string, bool) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := a.Temporal.DescribeWorkflowExecution(dctx, id, "")
	if err != nil {
		return "", false
	}
	info := d.GetWorkflowExecutionInfo()
	latest := info.GetExecution().GetRunId()
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "", false // an orphan of its own, swept as such
	}
	if latest == "" || latest == runID {
		return "", false
	}
	v, err := a.Temporal.QueryWorkflow(dctx, id, latest, contracts.QueryState)
	var st contracts.State
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil || st.RemoteTaskID != taskID {
		return "", false
	}
	return latest, true
}
