package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// Versions of the Delegation workflow (docs/versioning.md).
//
// The baseline is the workflow as it was first released: one code path,
// and no workflow.GetVersion call (so no marker and no
// TemporalChangeVersion search attribute in its histories). Its
// histories are recorded in testdata/histories/baseline.
//
// After the release, each change of the commands the workflow issues
// (activities, timers, their order and options, upserts,
// continue-as-new, what a Signal or Update decides) goes behind
//
//	workflow.GetVersion(ctx, change.ID, workflow.DefaultVersion, change.Version)
//
// with its own change id, named for what it changes and never reused for
// an unrelated change; it is listed in Changes, in the order of release,
// and its scenarios are recorded in testdata/histories/<id>-v<version>
// (HistoryFolder). A version is removed (its branch, its entry, its
// folder; the minimum of its GetVersion raised) once no delegation can
// still run on it: RetireAfter after the last run started on it, not
// after a release date. Each run records the version that wrote it in
// search attribute DelegationCodeVersion (Newest), so the visibility
// query `DelegationCodeVersion = 'V' AND ExecutionStatus = 'Running'`
// says whether anything still runs on V. versions_test.go fails when the
// newest version has no recorded histories, and when a version is still
// present RetireAfter after the release that superseded it (the earliest
// its last run can have started).

// Baseline names the first version (its history folder).
const Baseline = "baseline"

// BaselineReleased is the date (YYYY-MM-DD) of the first tagged release,
// which runs the baseline; "" until it is tagged.
const BaselineReleased = ""

// Change is one version of one change id, gated by workflow.GetVersion.
type Change struct {
	// ID is the change id passed to workflow.GetVersion: kebab-case, named
	// for what it changes ("push-reads-on-signal"), never reused for an
	// unrelated change.
	ID string
	// Version is the version this entry adds to ID (1 for a new change
	// id): the maxSupported of its GetVersion.
	Version workflow.Version
	// Released is the date (YYYY-MM-DD) of the first release that runs
	// this version; "" until it is released.
	Released string
	// What says what the version changes, for the next engineer.
	What string
}

// Changes lists every version still present after the baseline, oldest
// first; the last one is what new delegations run. Empty: the baseline.
var Changes = []Change{}

// RetireAfter is how long after the last run started on it a version may
// still run a delegation: the longest deadline a contract may have
// (contracts.MaxDeadline, 366 days; continue-as-new keeps the deadline,
// so a run ends by it), and a day for a date's granularity and the stop
// after the deadline (CancelTask, bounded retries). The last run on a
// version starts at the earliest when the version that superseded it is
// released.
const RetireAfter = contracts.MaxDeadline + 24*time.Hour

// HistoryFolder is the folder under testdata/histories that holds the
// histories recorded by the version c: "<id>-v<version>".
func HistoryFolder(c Change) string {
	return fmt.Sprintf("%s-v%d", c.ID, c.Version)
}

// Newest is the history folder of the version new delegations run: the
// last entry of Changes, or the baseline.
func Newest() string {
	if len(Changes) == 0 {
		return Baseline
	}
	return HistoryFolder(Changes[len(Changes)-1])
}
