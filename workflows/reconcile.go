package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// ReconcileDelegations signals "reconcile" to the open delegations that in
// selects (a Temporal Schedule runs it every interval; not with
// in.OrphansOnly), then sweeps the orphans of delegations killed from
// outside (activities.CancelOrphans: a terminated run's remote task that
// still works is canceled). Its result is the record of what it did.
func ReconcileDelegations(ctx workflow.Context, in contracts.ReconcileInput) (contracts.ReconcileReport, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	report := contracts.ReconcileReport{Signaled: []string{}, Orphans: []contracts.Orphan{}}
	if !in.OrphansOnly {
		if err := workflow.ExecuteActivity(ctx, contracts.ActivityReconcileOpen, in).Get(ctx, &report.Signaled); err != nil {
			return report, err
		}
	}
	err := workflow.ExecuteActivity(ctx, contracts.ActivityCancelOrphans, in).Get(ctx, &report.Orphans)
	return report, err
}

// reconcile reads the remote task once and records what it saw.
func (r *run) reconcile(ctx workflow.Context) {
	rec := contracts.Reconciliation{At: workflow.Now(ctx), Before: r.s.A2AState}
	seen := r.observations
	if r.s.RemoteTaskID == "" {
		rec.Error = "no remote task yet"
		r.addReconciliation(rec)
		return
	}
	var snap contracts.TaskSnapshot
	actx := workflow.WithActivityOptions(ctx, getTaskOptions())
	err := workflow.ExecuteActivity(actx, contracts.ActivityGetTask, contracts.GetTaskInput{Interface: r.s.Interface, TaskID: r.s.RemoteTaskID, ContextID: r.s.ContextID, Limits: r.d.EffectiveLimits()}).Get(ctx, &snap)
	if err != nil {
		switch {
		case temporal.IsCanceledError(err) || ctx.Err() != nil:
			// The read was never scheduled: the delegation is stopping
			// and follows its remote task itself until it ends.
			rec.Error = "not read: a cancel of this delegation is in progress"
		default:
			rec.Error = contracts.Truncate(errorText(err), 500)
		}
	} else {
		rec.Seen, rec.Changed = string(snap.State), string(snap.State) != r.s.A2AState
		switch {
		case r.observations != seen:
			// The delegation observed the task again while this read was
			// running: the read is older than what it knows.
			rec.Changed = false
			rec.Error = "superseded: the task was observed again while this read ran"
		case rec.Changed && (r.s.Question != nil || r.s.Push):
			// The task moved on while we waited for an operator, or for a
			// push that did not come (it was canceled, completed or failed
			// remotely): go on from there.
			r.box.offerReconciled(snap)
		}
	}
	r.addReconciliation(rec)
}

// maxReconciliations bounds contracts.State.Reconciliations (the oldest are
// dropped; ReconcileCount keeps counting).
const maxReconciliations = 20

func (r *run) addReconciliation(rec contracts.Reconciliation) {
	r.s.ReconcileCount++
	r.s.Reconciliations = append(r.s.Reconciliations, rec)
	if n := len(r.s.Reconciliations); n > maxReconciliations {
		r.s.Reconciliations = append([]contracts.Reconciliation(nil), r.s.Reconciliations[n-maxReconciliations:]...)
	}
}
