package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

// ReconcileOptions are the ListOptions that in selects: the running
// delegations of in.Namespace, in A2AState in.State, started more than
// in.OlderThan before now.
func ReconcileOptions(in contracts.ReconcileInput, now time.Time) ListOptions {
	o := ListOptions{Namespace: in.Namespace, A2AState: in.State, Running: true}
	if in.OlderThan > 0 {
		o.StartedBefore = now.Add(-in.OlderThan)
	}
	return o
}

// ScheduleReconcile creates (or replaces) the Temporal Schedule
// contracts.ReconcileScheduleID that runs the ReconcileDelegations
// workflow with in every interval: each open delegation it selects reads
// its remote task once. It reports whether a Schedule of that id was
// there and has been replaced (false: created). Errors: the Temporal
// error.
func ScheduleReconcile(ctx context.Context, c sdkclient.Client, every time.Duration, in contracts.ReconcileInput) (replaced bool, err error) {
	replaced, err = RemoveReconcileSchedule(ctx, c)
	if err != nil {
		return false, err
	}
	_, err = c.ScheduleClient().Create(ctx, sdkclient.ScheduleOptions{
		ID:   contracts.ReconcileScheduleID,
		Spec: sdkclient.ScheduleSpec{Intervals: []sdkclient.ScheduleIntervalSpec{{Every: every}}},
		Action: &sdkclient.ScheduleWorkflowAction{
			ID: contracts.ReconcileScheduleID, Workflow: contracts.ReconcileWorkflowType,
			TaskQueue: contracts.TaskQueue, Args: []any{in},
		},
	})
	if err != nil {
		return replaced, fmt.Errorf("creating schedule %s: %w", contracts.ReconcileScheduleID, err)
	}
	return replaced, nil
}

// RemoveReconcileSchedule deletes the Schedule ScheduleReconcile made; it
// reports false when there was none. Errors: the Temporal error.
func RemoveReconcileSchedule(ctx context.Context, c sdkclient.Client) (bool, error) {
	err := c.ScheduleClient().GetHandle(ctx, contracts.ReconcileScheduleID).Delete(ctx)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("removing schedule %s: %w", contracts.ReconcileScheduleID, err)
	}
	return true, nil
}

// SweepOrphans runs the orphan sweep once, on a worker (which holds the
// agents' credentials): the ReconcileDelegations workflow with
// in.OrphansOnly, under the id "delegate-sweep-<unix nanoseconds>", and
// waits for its report (bounded by ctx). A delegation killed from outside
// (terminated, or replaced by a start with TERMINATE_EXISTING) left its
// remote task working: the sweep cancels it (activities.CancelOrphans).
// It returns the workflow id too, so that a caller whose ctx ended can
// say where the report will be. Errors: the Temporal error.
func SweepOrphans(ctx context.Context, c sdkclient.Client, in contracts.ReconcileInput) (string, contracts.ReconcileReport, error) {
	in.OrphansOnly = true
	id := fmt.Sprintf("delegate-sweep-%d", time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: id, TaskQueue: contracts.TaskQueue}, contracts.ReconcileWorkflowType, in)
	if err != nil {
		return id, contracts.ReconcileReport{}, fmt.Errorf("starting the orphan sweep: %w", err)
	}
	var report contracts.ReconcileReport
	err = Await(ctx, c, run, &report)
	return id, report, err
}
