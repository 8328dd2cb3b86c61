package testutil

import (
	"fmt"
	"os"
	"testing"
)

// SkipLogEnv names the file SkipGroup records skips in (`make test` sets
// it, and scripts/test-summary.sh says what was skipped at the end).
const SkipLogEnv = "DELEGATE_SKIP_LOG"

// A Group is a set of tests that need something `make test` may not have,
// with the make target that runs them.
type Group struct {
	Name   string // "interop", "postgres"
	Target string // the make target that provides what they need
}

// The groups of tests `make test` may skip.
var (
	GroupInterop  = Group{Name: "interop", Target: "make test-interop"}
	GroupPostgres = Group{Name: "postgres", Target: "make test-postgres"}
	// GroupPromtool: the alert rules checked by Prometheus's promtool
	// (Debian's prometheus package).
	GroupPromtool = Group{Name: "promtool", Target: "make test-rules"}
	GroupCluster  = Group{Name: "cluster", Target: "make test-cluster"}
)

// SkipGroup skips t (t.Skip(reason)) because what group needs is missing,
// and records that in the file $DELEGATE_SKIP_LOG when set, a line
// "group<TAB>target<TAB>test name" (appended: tests of several packages
// run in parallel processes).
func SkipGroup(t testing.TB, g Group, reason string) {
	t.Helper()
	if p := os.Getenv(SkipLogEnv); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			_, _ = fmt.Fprintf(f, "%s\t%s\t%s\n", g.Name, g.Target, t.Name())
			_ = f.Close()
		}
	}
	t.Skip(reason)
}
