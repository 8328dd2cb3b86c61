package layers

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/a2adelegate/delegate/"

// allowed lists, for each room, the rooms of this module it may import
// directly (arrows point down only). A package missing here fails the
// test, so a new room gets its rule when it is made.
var allowed = map[string][]string{
	"contracts":            {},
	"cards":                {"contracts"},
	"a2aclient":            {"cards", "contracts"},
	"activities":           {"a2aclient", "cards", "client", "contracts", "push"},
	"push":                 {"client", "codec", "contracts"},
	"workflows":            {"contracts"},
	"child":                {"contracts"},
	"nexusop":              {"client", "contracts"},
	"client":               {"codec", "contracts"},
	"codec":                {},
	"mcp":                  {"client", "contracts"},
	"internal/claimsagent": {"cards"},
	"internal/devserver":   {},
	"internal/metrics":     {"cards", "contracts"},
	"internal/tracing":     {},
	"internal/workeropts":  {},
	"internal/testcerts":   {},
	"internal/testutil":    {},
	"internal/interop":     {},
	"internal/layers":      {},
	"internal/bench":       {"a2aclient", "activities", "cards", "client", "contracts", "internal/claimsagent", "internal/devserver", "internal/workeropts", "workflows"},
	"cmd/claims-agent":     {"cards", "internal/claimsagent"},
	"cmd/delegate":         {"a2aclient", "activities", "cards", "client", "codec", "contracts", "push", "internal/bench", "internal/devserver", "internal/metrics", "internal/tracing", "internal/workeropts", "mcp", "nexusop", "workflows"},
	"deploy":               {},
	"e2e":                  {},
	"e2e/rollingworker":    {"activities", "contracts", "workflows"},

	"internal/interop/trpcpeer": {},
}

// forbidden lists third-party modules a room must not reach even
// indirectly: package client is what a backend links, so it carries the
// Temporal SDK and contracts, never the A2A stack.
var forbidden = map[string][]string{
	"client":    {"github.com/a2aproject/a2a-go", "github.com/lestrrat-go/jwx", "go.temporal.io/server"},
	"contracts": {"go.temporal.io", "github.com/a2aproject/a2a-go", "net/http"},
	// A parent workflow links package child: no A2A stack, no credentials,
	// no server.
	"child": {"github.com/a2aproject/a2a-go", "github.com/lestrrat-go/jwx", "go.temporal.io/server"},
	"codec": {"github.com/a2aproject/a2a-go", "github.com/lestrrat-go/jwx", "go.temporal.io/server"},
	// The MCP adapter needs Temporal access only: no A2A stack, no agent
	// credentials.
	"mcp": {"github.com/a2aproject/a2a-go", "go.temporal.io/server"},
	// The Nexus handler starts the workflow through the Temporal client:
	// no A2A stack, no agent credentials, no server.
	"nexusop": {"github.com/a2aproject/a2a-go", "github.com/lestrrat-go/jwx", "go.temporal.io/server"},
}

// noIO lists what workflow code must not import directly: it never does
// I/O (every network step is an activity) and stays deterministic.
var noIO = []string{"net", "net/http", "os", "os/exec", "io/ioutil", "math/rand", "math/rand/v2", "crypto/rand"}

func TestWorkflowsDoNoIO(t *testing.T) {
	for _, imp := range imports(t, filepath.Join(root(t), "workflows")) {
		if slices.Contains(noIO, imp) {
			t.Errorf("workflows imports %s: workflow code does no I/O and stays deterministic", imp)
		}
	}
}

// Package child is linked by parent workflows: it imports the contracts
// and the SDK's workflow API only (and what they name: the enums of a
// parent close policy, search attribute keys), so a parent stays
// deterministic.
func TestChildImportsOnlyWorkflowSafePackages(t *testing.T) {
	ok := []string{module + "contracts", "go.temporal.io/sdk/workflow", "go.temporal.io/sdk/temporal", "go.temporal.io/api/enums/v1"}
	for _, imp := range imports(t, filepath.Join(root(t), "child")) {
		if !slices.Contains(ok, imp) {
			t.Errorf("child imports %s: it may import only %v", imp, ok)
		}
	}
}

func root(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// imports returns a package's non-test imports (go/build: the files that
// build on this platform).
func imports(t *testing.T, dir string) []string {
	t.Helper()
	p, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return p.Imports
}

func TestImportsPointDown(t *testing.T) {
	r := root(t)
	for room, ok := range allowed {
		for _, imp := range imports(t, filepath.Join(r, room)) {
			rel, mine := strings.CutPrefix(imp, module)
			if mine && !slices.Contains(ok, rel) {
				t.Errorf("%s imports %s: not allowed (docs/architecture.md, Rooms; allowed: %v)", room, rel, ok)
			}
		}
	}
}

// TestEveryRoomHasARule fails when a package is added without a line in
// allowed.
func TestEveryRoomHasARule(t *testing.T) {
	r := root(t)
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != r && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
			return filepath.SkipDir
		}
		if _, err := build.ImportDir(path, build.ImportComment); err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(r, path)
		if _, ok := allowed[filepath.ToSlash(rel)]; !ok && rel != "." {
			t.Errorf("package %s has no import rule in allowed", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestForbiddenDependencies walks each room's imports transitively
// (through this module's packages and the module cache, as go/build finds
// them) and fails when one reaches a forbidden module.
func TestForbiddenDependencies(t *testing.T) {
	r := root(t)
	for room, bad := range forbidden {
		deps := dependencies(t, r, module+room)
		for pkg, via := range deps {
			for _, b := range bad {
				if pkg == b || strings.HasPrefix(pkg, b+"/") {
					t.Errorf("%s depends on %s (via %s)", room, pkg, strings.Join(via, " → "))
				}
			}
		}
		if len(deps) < 2 {
			t.Errorf("%s: found no imports; is the walk broken?", room)
		}
	}
}

// TestWorkflowsDependOnTheSDKAndContracts: the workflow's package
// reaches, of this module, contracts alone (it schedules its activities
// by their names in contracts, and reads their inputs and results from
// there), and nothing of the A2A stack (a2a-go, jwx) even indirectly, so
// that editing an activity or a client helper cannot change what a
// recorded history decides. The Temporal SDK, and gRPC under it, are
// expected.
func TestWorkflowsDependOnTheSDKAndContracts(t *testing.T) {
	deps := dependencies(t, root(t), module+"workflows")
	if len(deps) < 2 {
		t.Fatal("workflows: found no imports; is the walk broken?")
	}
	if _, ok := deps[module+"contracts"]; !ok {
		t.Error("workflows does not reach contracts; is the walk broken?")
	}
	if _, ok := deps["go.temporal.io/sdk/workflow"]; !ok {
		t.Error("workflows does not reach go.temporal.io/sdk/workflow; is the walk broken?")
	}
	for pkg, via := range deps {
		path := strings.Join(via, " → ")
		if rel, mine := strings.CutPrefix(pkg, module); mine && rel != "workflows" && rel != "contracts" {
			t.Errorf("workflows depends on %s (via %s): of this module it may reach contracts alone", rel, path)
		}
		for _, b := range []string{"github.com/a2aproject/a2a-go", "github.com/lestrrat-go/jwx", "go.temporal.io/server"} {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				t.Errorf("workflows depends on %s (via %s)", pkg, path)
			}
		}
	}
}

// dependencies walks pkg's imports transitively (non-test files, through
// this module's packages and the module cache, as go/build finds them)
// and returns each package reached with the import path that reached it
// first.
func dependencies(t *testing.T, r, pkg string) map[string][]string {
	t.Helper()
	seen := map[string][]string{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if _, ok := seen[pkg]; ok {
			return
		}
		seen[pkg] = via
		for _, imp := range importsOf(pkg, r) {
			if imp == "C" {
				continue
			}
			walk(imp, append(slices.Clip(via), imp))
		}
	}
	walk(pkg, []string{strings.TrimPrefix(pkg, module)})
	return seen
}

// importCache keeps each package's imports across the walks (go/build is
// slow, and the rooms share most of their dependencies).
var importCache = map[string][]string{}

// importsOf is pkg's non-test imports, or none when go/build cannot find
// it (the standard library's internals, cgo-only packages).
func importsOf(pkg, r string) []string {
	if imps, ok := importCache[pkg]; ok {
		return imps
	}
	var imps []string
	if p, err := build.Import(pkg, r, 0); err == nil {
		imps = p.Imports
	}
	importCache[pkg] = imps
	return imps
}
