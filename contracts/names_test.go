package contracts

import (
	"strings"
	"testing"
)

// An A2AState filter typed with a former spelling reads as the current
// one, and the query selects both spellings. The baseline has none: the
// pre-release spelling "unknown_outcome" is refused like any typo.
func TestA2AStateSpellings(t *testing.T) {
	if got, err := ParseA2AState("unknown-outcome"); err != nil || got != "unknown-outcome" {
		t.Errorf("ParseA2AState(unknown-outcome) = %q, %v", got, err)
	}
	for _, in := range []string{"input_required", "unknown_outcome"} {
		if _, err := ParseA2AState(in); err == nil || strings.Contains(err.Error(), "also read") {
			t.Errorf("ParseA2AState(%s) = %v, want a refusal listing the values (and no former spelling)", in, err)
		}
	}
	if got, want := A2AStateFilter("unknown-outcome"), `A2AState = "unknown-outcome"`; got != want {
		t.Errorf("A2AStateFilter = %s, want %s", got, want)
	}
	// A value renamed by a later version: its former spelling is read too.
	FormerA2AStates["unknown-outcome"] = []string{"unknown_outcome"}
	t.Cleanup(func() { delete(FormerA2AStates, "unknown-outcome") })
	if got, err := ParseA2AState("unknown_outcome"); err != nil || got != "unknown-outcome" {
		t.Errorf("ParseA2AState(unknown_outcome) with a former spelling = %q, %v; want unknown-outcome", got, err)
	}
	if _, err := ParseA2AState("input_required"); err == nil || !strings.Contains(err.Error(), "also read: unknown_outcome (= unknown-outcome)") {
		t.Errorf("ParseA2AState(input_required) = %v, want the former spellings listed", err)
	}
	if got, want := A2AStateFilter("unknown-outcome"), `A2AState IN ("unknown-outcome", "unknown_outcome")`; got != want {
		t.Errorf("A2AStateFilter = %s, want %s", got, want)
	}
	if got, want := A2AStateFilter("working"), `A2AState = "working"`; got != want {
		t.Errorf("A2AStateFilter = %s, want %s", got, want)
	}
	// One separator: every value is lower case with hyphens.
	for _, s := range A2AStates {
		if strings.ContainsAny(s, "_ ") || strings.ToLower(s) != s {
			t.Errorf("A2AState %q is not spelled lower case with hyphens", s)
		}
	}
}
