package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A group skipped (SkipGroup) is recorded in DELEGATE_SKIP_LOG, and `make
// test` ends with a line naming each group skipped, how many tests, and the
// make target that runs it; a group that did not skip is not named. make
// test skipped the interop and PostgreSQL tests without a word.
func TestSkipGroupSummary(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skips")
	t.Setenv(SkipLogEnv, log)
	for _, name := range []string{"a", "b"} {
		t.Run("interop-"+name, func(t *testing.T) { SkipGroup(t, GroupInterop, "peers unavailable") })
	}
	t.Run("postgres", func(t *testing.T) { SkipGroup(t, GroupPostgres, "no server") })
	summary := func() string {
		out, err := exec.Command("../../scripts/test-summary.sh", log).CombinedOutput()
		if err != nil {
			t.Fatalf("test-summary.sh: %v: %s", err, out)
		}
		return string(out)
	}
	got := summary()
	want := "make test: skipped interop (2 tests: make test-interop runs them), postgres (1 test: make test-postgres runs it); the browser test is not part of make test (make test-browser)\n"
	if got != want {
		t.Errorf("summary\n%q\nwant\n%q", got, want)
	}
	// Nothing skipped: nothing named as skipped.
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := summary(); strings.Contains(got, "make test: skipped") || !strings.Contains(got, "no test group skipped") {
		t.Errorf("summary of no skips: %q", got)
	}
	// The Makefile's test target records and prints it.
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), SkipLogEnv+"=") || !strings.Contains(string(mk), "scripts/test-summary.sh") {
		t.Errorf("the Makefile's test target does not set %s and run scripts/test-summary.sh", SkipLogEnv)
	}
}
