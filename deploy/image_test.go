package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/modfile"
)

// The packages the worker build (go build -tags worker ./cmd/delegate) must
// not link: the Temporal server, the Temporal UI server, the bench and the
// embedded dev server.
var notInWorkerBuild = []string{
	"go.temporal.io/server",
	"github.com/temporalio/ui-server",
	"github.com/a2adelegate/delegate/internal/bench",
	"github.com/a2adelegate/delegate/internal/devserver",
}

// deps lists the packages ./cmd/delegate links with the build tags given.
func deps(t *testing.T, tags string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./cmd/delegate")...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// linked are the packages of pkgs under any of the prefixes.
func linked(pkgs, prefixes []string) []string {
	var out []string
	for _, p := range pkgs {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// The worker build links none of the server, the UI, the bench and the
// dev server; the full build links each of them (so the check can fail).
func TestWorkerBuildLinksNoServer(t *testing.T) {
	if got := linked(deps(t, "worker"), notInWorkerBuild); len(got) > 0 {
		t.Errorf("go build -tags worker ./cmd/delegate links %d packages it must not, e.g. %v", len(got), got[:min(len(got), 5)])
	}
	full := deps(t, "")
	for _, pre := range notInWorkerBuild {
		if len(linked(full, []string{pre})) == 0 {
			t.Errorf("the full build does not link %s: is this list still right?", pre)
		}
	}
}

var (
	buildOnce sync.Once
	workerBin string
	buildErr  error
)

// workerBinary is the worker build of delegate, built once for the tests of
// this package.
func workerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "delegate-worker-build")
		if err != nil {
			buildErr = err
			return
		}
		workerBin = filepath.Join(dir, "delegate")
		cmd := exec.Command("go", "build", "-tags", "worker", "-o", workerBin, "./cmd/delegate")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -tags worker ./cmd/delegate: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return workerBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workerBin != "" {
		os.RemoveAll(filepath.Dir(workerBin))
	}
	os.Exit(code)
}

// runWorkerBinary runs the worker build with args and a bare environment.
func runWorkerBinary(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(workerBinary(t), args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "TEMPORAL_CONFIG_FILE=" + emptyFile(t)}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func emptyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "empty.toml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkCommand checks a command line a deployment file gives the delegate
// image (args, without the program name) against the worker build: the
// command and each flag exist (the line parses, with --help added), and
// every DELEGATE_* or TEMPORAL_* variable in env is one the command's help
// names.
func checkCommand(t *testing.T, where string, args []string, env []string) {
	t.Helper()
	help, code := runWorkerBinary(t, append(slices.Clone(args), "--help")...)
	if code != 0 || !strings.Contains(help, "Usage:") {
		t.Errorf("%s: delegate %s: the worker build refuses it (exit %d): %s", where, strings.Join(args, " "), code, help)
		return
	}
	for _, name := range env {
		if (strings.HasPrefix(name, "DELEGATE_") || strings.HasPrefix(name, "TEMPORAL_")) && !strings.Contains(help, name) {
			t.Errorf("%s: delegate %s reads no %s (its --help names none)", where, args[0], name)
		}
	}
}

// The worker build runs: it says which parts it leaves out, refuses dev and
// bench with a clear message, and has the commands the image runs.
func TestWorkerBinary(t *testing.T) {
	out, code := runWorkerBinary(t, "--version")
	if code != 0 || !strings.Contains(out, "Temporal server not built in") || !strings.Contains(out, "Temporal UI server not built in") {
		t.Errorf("--version: exit %d: %s", code, out)
	}
	for _, c := range []string{"dev", "bench"} {
		out, code := runWorkerBinary(t, c)
		if code != 2 || !strings.Contains(out, "delegate "+c+" is not in this build") {
			t.Errorf("%s: exit %d: %s", c, code, out)
		}
	}
	for _, c := range []string{"worker", "webhook", "codec-server", "health", "mcp", "start", "status", "answer", "list"} {
		checkCommand(t, "worker build", []string{c}, nil)
	}
}

// goModVersion is the version go.mod builds module path at (its replacement's
// when replaced), without the leading v.
func goModVersion(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := ""
	for _, r := range f.Require {
		if r.Mod.Path == path {
			v = r.Mod.Version
		}
	}
	for _, r := range f.Replace {
		if r.Old.Path == path && r.New.Version != "" {
			v = r.New.Version
		}
	}
	if v == "" {
		t.Fatalf("go.mod requires no %s", path)
	}
	return strings.TrimPrefix(v, "v")
}

// moduleDir is the directory of module path in the module cache, at the
// version go.mod builds.
func moduleDir(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// The Dockerfile's worker image holds the worker build, runs as a numeric
// non-root user, serves its health endpoint and checks it with `delegate
// health`; the claims agent image stays.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stages := map[string][]string{} // stage name -> its instructions, continuation lines joined
	stage := ""
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		ins := cur.String()
		cur.Reset()
		if m := regexp.MustCompile(`(?i)^FROM\s+\S+\s+AS\s+(\S+)$`).FindStringSubmatch(ins); m != nil {
			stage = m[1]
		}
		stages[stage] = append(stages[stage], ins)
	}
	has := func(st, pattern string) bool {
		re := regexp.MustCompile(pattern)
		return slices.ContainsFunc(stages[st], re.MatchString)
	}
	for _, c := range []struct{ stage, pattern, what string }{
		{"build", `go build .*-tags worker -o /out/delegate \./cmd/delegate`, "the worker build of delegate"},
		{"build", `go build .*-o /out/claims-agent \./cmd/claims-agent`, "the claims agent"},
		{"worker", `^COPY --from=build /out/delegate /usr/local/bin/delegate$`, "the worker build copied in"},
		{"worker", `^USER [1-9][0-9]*:[1-9][0-9]*$`, "a numeric non-root USER (Kubernetes' runAsNonRoot can check it)"},
		{"worker", `^ENV DELEGATE_HEALTH_ADDR=0\.0\.0\.0:8236$`, "the health endpoint on"},
		{"worker", `^HEALTHCHECK .*CMD \["delegate", "health"\]$`, "a HEALTHCHECK running delegate health"},
		{"worker", `^ENTRYPOINT \["delegate"\]$`, "delegate as the entrypoint"},
		{"worker", `^CMD \["worker"\]$`, "worker as the default command"},
		{"claims-agent", `^ENTRYPOINT \["claims-agent"\]$`, "the claims agent image"},
		{"claims-agent", `^USER agent$`, "the claims agent as non-root"},
	} {
		if !has(c.stage, c.pattern) {
			t.Errorf("Dockerfile, stage %s: no %s (%s)", c.stage, c.what, c.pattern)
		}
	}
	checkCommand(t, "Dockerfile HEALTHCHECK", []string{"health"}, []string{"DELEGATE_HEALTH_ADDR"})
	checkCommand(t, "Dockerfile CMD", []string{"worker"}, []string{"DELEGATE_HEALTH_ADDR"})
}
