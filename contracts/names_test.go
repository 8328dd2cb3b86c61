package contracts

import (
	"strings"
	"testing"
)

// An A2AState filter typed with a former spelling reads as the current
// one, and the query selects both spellings.
func TestA2AStateSpellings(t *testing.T) {
	for _, in := range []string{"unknown-outcome", "unknown_outcome"} {
		got, err := ParseA2AState(in)
		if err != nil || got != "unknown-outcome" {
			t.Errorf("ParseA2AState(%q) = %q, %v; want unknown-outcome", in, got, err)
		}
	}
	if _, err := ParseA2AState("input_required"); err == nil {
		t.Error("ParseA2AState(input_required) = nil error, want a refusal listing the values")
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
