package contracts

import "time"

// ReconcileInput is the input of the ReconcileDelegations workflow (a
// reconcile Schedule runs it): which open delegations to send the Signal
// "reconcile".
type ReconcileInput struct {
	Namespace string `json:"namespace"`
	// OlderThan keeps delegations started more than this long ago (0: all).
	OlderThan time.Duration `json:"older_than,omitempty"`
	// State keeps delegations whose search attribute A2AState is State (a
	// current or former spelling, see FormerA2AStates).
	State string `json:"state,omitempty"`
	// OrphanWindow is how far back the orphan sweep looks for terminated
	// runs (0: DefaultOrphanWindow); OrphansOnly runs the sweep alone
	// (the CLI's reconcile, which signals the open delegations itself).
	OrphanWindow time.Duration `json:"orphan_window,omitempty"`
	OrphansOnly  bool          `json:"orphans_only,omitempty"`
}

// ReconcileInput's orphan sweep: a delegation killed from outside
// (terminated, or replaced by a start with the conflict policy
// TERMINATE_EXISTING) ran no CancelTask, and its remote task may go on
// working. The sweep finds the runs terminated within OrphanWindow whose
// remote task had not ended, and cancels each (activities.CancelOrphans).
const (
	// DefaultOrphanWindow is how far back the sweep looks for terminated
	// runs when ReconcileInput.OrphanWindow is 0: a day.
	DefaultOrphanWindow = 24 * time.Hour
	// MaxOrphansPerSweep bounds the terminated runs one sweep reads.
	MaxOrphansPerSweep = 200
)

// Orphan actions (Orphan.Action).
const (
	OrphanCanceled     = "canceled"       // CancelTask answered; Seen is the task's state then
	OrphanAlreadyEnded = "already_ended"  // GetTask found the task ended: nothing to do
	OrphanNoRemoteTask = "no_remote_task" // the run had sent nothing (or its send's outcome was unknown)
	OrphanError        = "error"          // the task could not be read or canceled: Error says why
	// OrphanTracked: the running run of the same workflow id (a Reset's
	// new run, a continuation) tracks the same remote task, or has not
	// sent yet and sends the same messageIds (a Reset to before the send):
	// it is not an orphan, and nothing is sent; Error names the run.
	OrphanTracked = "tracked"
)

// How a swept run closed (Orphan.ClosedBy), as Temporal recorded it.
const (
	// OrphanClosedByReset: a Reset terminated it and started a new run
	// (the server's identity "history-resetter" on its close event).
	OrphanClosedByReset = "reset"
	// OrphanClosedByTerminate: terminated otherwise (an operator, a start
	// with TERMINATE_EXISTING, a parent's close policy, a batch).
	OrphanClosedByTerminate = "terminated"
	// OrphanClosedByTimeout: its workflow run or execution timeout passed.
	OrphanClosedByTimeout = "timed_out"
)

// Orphan is what a sweep did about one terminated run's remote task.
type Orphan struct {
	WorkflowID   string `json:"workflow_id"`
	RunID        string `json:"run_id"`
	RemoteTaskID string `json:"remote_task_id,omitempty"`
	Agent        string `json:"agent,omitempty"`  // the interface URL
	Before       string `json:"before,omitempty"` // the A2AState the run had recorded
	Action       string `json:"action"`
	Seen         string `json:"seen,omitempty"` // the remote task's state after the action
	Error        string `json:"error,omitempty"`
	// ClosedBy is how the run closed: "reset", "terminated" or
	// "timed_out" (empty when its close event could not be read).
	ClosedBy string `json:"closed_by,omitempty"`
	// ResetRunID is the run a Reset of this run started, as Temporal
	// records it (DescribeWorkflowExecution's reset_run_id).
	ResetRunID string    `json:"reset_run_id,omitempty"`
	At         time.Time `json:"at"`
}

// ReconcileReport is the result of the ReconcileDelegations workflow: the
// open delegations sent the Signal "reconcile", and what the orphan sweep
// did.
type ReconcileReport struct {
	Signaled []string `json:"signaled"`
	Orphans  []Orphan `json:"orphans"`
}
