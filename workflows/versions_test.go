package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
)

// The versioning rule (docs/versioning.md), checked on the registry in
// versions.go and the folders under testdata/histories.

const releaseDate = "2006-01-02"

var changeID = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// recordedFolders lists the folders under testdata/histories with the
// number of histories (.json) each holds.
func recordedFolders(t *testing.T) map[string]int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "histories"))
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]int{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := filepath.Glob(filepath.Join("testdata", "histories", e.Name(), "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		folders[e.Name()] = len(files)
	}
	return folders
}

// versionRule returns every way in which the registry (the baseline's
// release date and the changes after it, oldest first) and the recorded
// folders break the rule at now.
func versionRule(now time.Time, baselineReleased string, changes []Change, folders map[string]int) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	date := func(what, s string) (time.Time, bool) {
		if s == "" {
			return time.Time{}, false
		}
		d, err := time.Parse(releaseDate, s)
		if err != nil {
			bad("%s: release date %q is not YYYY-MM-DD", what, s)
			return time.Time{}, false
		}
		return d, true
	}

	// The versions in the order of release: the baseline, then Changes.
	type version struct {
		folder   string
		released string
	}
	versions := []version{{Baseline, baselineReleased}}
	last := map[string]Change{}
	var prev time.Time
	prevReleased := baselineReleased != ""
	if d, ok := date(Baseline, baselineReleased); ok {
		prev = d
	}
	for _, c := range changes {
		name := HistoryFolder(c)
		versions = append(versions, version{name, c.Released})
		switch {
		case !changeID.MatchString(c.ID):
			bad("%s: change id %q is not kebab-case naming what it changes", name, c.ID)
		case c.Version < 1:
			bad("%s: version %d: a change's versions start at 1", name, c.Version)
		case strings.TrimSpace(c.What) == "":
			bad("%s: What is empty: say what the version changes", name)
		}
		if p, ok := last[c.ID]; ok && c.Version != p.Version+1 {
			bad("%s: follows %s: a change id's versions go up by one", name, HistoryFolder(p))
		}
		last[c.ID] = c
		d, ok := date(name, c.Released)
		switch {
		case ok && !prevReleased:
			bad("%s: released %s after a version that is not released: versions are released in the order of Changes", name, c.Released)
		case ok && d.Before(prev):
			bad("%s: released %s, before the version it follows (%s)", name, c.Released, prev.Format(releaseDate))
		}
		if ok {
			prev = d
		}
		prevReleased = ok
	}

	// Every folder is a version still present; the newest has histories.
	known := map[string]bool{}
	for _, v := range versions {
		known[v.folder] = true
	}
	for f := range folders {
		if !known[f] {
			bad("testdata/histories/%s: no such version (baseline, or <change-id>-v<N> of an entry of Changes): a retired version's folder goes with it", f)
		}
	}
	newest := versions[len(versions)-1].folder
	if folders[newest] == 0 {
		bad("the newest version %s has no recorded histories: make record-histories NAME=%s", newest, newest)
	}

	// A version superseded by a release more than RetireAfter ago may be
	// needed by no delegation (the superseding release is the earliest its
	// last run can have started): it goes.
	for i, v := range versions[:len(versions)-1] {
		next := versions[i+1]
		d, ok := date(next.folder, next.released)
		if !ok {
			continue
		}
		retire := d.Add(RetireAfter)
		if now.Before(retire) {
			continue
		}
		present := i > 0 || folders[v.folder] > 0 // a change's entry is present while listed
		if present {
			bad("%s was superseded by %s, released %s: its code can go since %s (RetireAfter after the earliest its last run can have started); remove it (its GetVersion branch, its entry in Changes, testdata/histories/%s, and raise the minimum of its GetVersion), and say in CHANGELOG.md that the release without it is deployed once `%s = '%s' AND ExecutionStatus = 'Running'` lists nothing",
				v.folder, next.folder, next.released, retire.Format(releaseDate), v.folder, contracts.SearchAttributeDelegationCodeVersion, v.folder)
		}
	}
	return errs
}

// The registry in versions.go and the recorded histories follow the rule
// today.
func TestVersionRule(t *testing.T) {
	for _, err := range versionRule(time.Now(), BaselineReleased, Changes, recordedFolders(t)) {
		t.Error(err)
	}
}

// The rule's checks fail when they should.
func TestVersionRuleCatches(t *testing.T) {
	now := time.Date(2028, 6, 1, 0, 0, 0, 0, time.UTC)
	recorded := map[string]int{Baseline: 17}
	push := Change{ID: "push-reads-on-signal", Version: 1, What: "a push reads the task at once"}
	for name, tc := range map[string]struct {
		baseline string
		changes  []Change
		folders  map[string]int
		want     string // "" for no error
	}{
		"baseline recorded":     {"", nil, recorded, ""},
		"baseline not recorded": {"", nil, map[string]int{}, "the newest version baseline has no recorded histories"},
		"baseline folder empty": {"", nil, map[string]int{Baseline: 0}, "has no recorded histories"},
		"unknown folder":        {"", nil, map[string]int{Baseline: 1, "lean-v5": 3}, "testdata/histories/lean-v5: no such version"},
		"new change not recorded": {"2027-01-10", []Change{push}, recorded,
			"the newest version push-reads-on-signal-v1 has no recorded histories"},
		"new change recorded": {"2027-01-10", []Change{push}, map[string]int{Baseline: 17, "push-reads-on-signal-v1": 17}, ""},
		"superseded within the window": {"2027-01-10", []Change{{ID: push.ID, Version: 1, What: push.What, Released: "2027-07-01"}},
			map[string]int{Baseline: 17, "push-reads-on-signal-v1": 17}, ""},
		"superseded past the window": {"2026-12-10", []Change{{ID: push.ID, Version: 1, What: push.What, Released: "2027-02-01"}},
			map[string]int{Baseline: 17, "push-reads-on-signal-v1": 17}, "baseline was superseded by push-reads-on-signal-v1, released 2027-02-01: its code can go since 2028-02-03"},
		"retired baseline gone": {"2026-12-10", []Change{{ID: push.ID, Version: 1, What: push.What, Released: "2027-02-01"}},
			map[string]int{"push-reads-on-signal-v1": 17}, ""},
		"change entry past the window": {"2026-12-10", []Change{
			{ID: push.ID, Version: 1, What: push.What, Released: "2027-01-01"},
			{ID: push.ID, Version: 2, What: "the read waits a second", Released: "2027-03-01"}},
			map[string]int{"push-reads-on-signal-v1": 17, "push-reads-on-signal-v2": 17}, "push-reads-on-signal-v1 was superseded by push-reads-on-signal-v2"},
		"versions skip":         {"", []Change{{ID: push.ID, Version: 1, What: "a"}, {ID: push.ID, Version: 3, What: "b"}}, map[string]int{Baseline: 1, "push-reads-on-signal-v1": 1, "push-reads-on-signal-v3": 1}, "a change id's versions go up by one"},
		"not kebab-case":        {"", []Change{{ID: "FollowAgents", Version: 1, What: "a"}}, map[string]int{Baseline: 1, "FollowAgents-v1": 1}, "is not kebab-case"},
		"no what":               {"", []Change{{ID: "x", Version: 1}}, map[string]int{Baseline: 1, "x-v1": 1}, "What is empty"},
		"bad date":              {"2027-1-2", nil, recorded, `release date "2027-1-2" is not YYYY-MM-DD`},
		"released out of order": {"", []Change{{ID: push.ID, Version: 1, What: "a", Released: "2027-01-01"}}, map[string]int{Baseline: 1, "push-reads-on-signal-v1": 1}, "after a version that is not released"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := versionRule(now, tc.baseline, tc.changes, tc.folders)
			err := errors.Join(errs...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// The baseline calls no workflow.GetVersion (while Changes is empty, no
// file of the package does), and its recorded histories hold no version
// marker and no TemporalChangeVersion upsert.
func TestBaselineCallsNoGetVersion(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetVersion" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "workflow" {
					calls++
					if len(Changes) == 0 {
						t.Errorf("%s: workflow.GetVersion while Changes is empty: list the change in versions.go (docs/versioning.md)", fset.Position(sel.Pos()))
					}
				}
			}
			return true
		})
	}
	if len(Changes) > 0 && calls == 0 {
		t.Errorf("Changes lists %d versions and no file calls workflow.GetVersion", len(Changes))
	}
	histories, err := filepath.Glob(filepath.Join("testdata", "histories", Baseline, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range histories {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Events []struct {
				EventID string `json:"eventId"`
				Marker  *struct {
					MarkerName string `json:"markerName"`
				} `json:"markerRecordedEventAttributes"`
				Upsert json.RawMessage `json:"upsertWorkflowSearchAttributesEventAttributes"`
			} `json:"events"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Events {
			if e.Marker != nil && e.Marker.MarkerName == "Version" {
				t.Errorf("%s event %s: a version marker in a baseline history", f, e.EventID)
			}
			if strings.Contains(string(e.Upsert), "TemporalChangeVersion") {
				t.Errorf("%s event %s: a TemporalChangeVersion upsert in a baseline history", f, e.EventID)
			}
		}
	}
}
