package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/a2adelegate/delegate/internal/testutil"
)

// conformanceMain is the suite's command in interop/conformance.
const conformanceMain = "node_modules/@modelcontextprotocol/conformance/dist/index.js"

// conformanceApplicable are the suite's server scenarios that apply to a
// server like delegate's (issue 38): they must run and pass, never be
// listed as expected failures. (server-sse-polling applies in part: its
// expected failure in expected-failures.yaml says which part.)
var conformanceApplicable = []string{
	"server-initialize", "ping", "tools-list", "resources-list", "logging-set-level",
	"server-sse-multiple-streams", "dns-rebinding-protection",
}

// conformanceDir is interop/conformance with the suite and its Node 22
// installed (`make test-interop` runs npm ci there); it returns the
// folder and that node. Missing is a skip, or a failure under
// DELEGATE_INTEROP=1. (The suite needs Node 22: it imports fs.globSync,
// which the machine's Node 20 lacks; the npm package `node` ships one.)
func conformanceDir(t *testing.T) (dir, node string) {
	t.Helper()
	return node22Dir(t, "conformance", conformanceMain, "MCP conformance suite")
}

// conformanceBaseline is interop/conformance/expected-failures.yaml:
// Server is what the suite reads, Because what this test checks the
// failures against.
type conformanceBaseline struct {
	Server  []string            `yaml:"server"`
	Because map[string][]string `yaml:"because"`
}

func readConformanceBaseline(t *testing.T, path string) conformanceBaseline {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var b conformanceBaseline
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range b.Server {
		if len(b.Because[s]) == 0 {
			t.Errorf("%s: %s is an expected failure with no `because` (what its failing checks say)", path, s)
		}
	}
	for s := range b.Because {
		if !slices.Contains(b.Server, s) {
			t.Errorf("%s: `because` names %s, which `server` does not list", path, s)
		}
	}
	for _, s := range conformanceApplicable {
		if slices.Contains(b.Server, s) {
			t.Errorf("%s: %s applies to delegate's server and must pass; it may not be an expected failure", path, s)
		}
	}
	return b
}

// conformanceCheck is one check of the suite's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// failing are the checks the suite counts against a scenario (its
// expected-failures rule: a FAILURE or a WARNING).
func failing(checks []conformanceCheck) []conformanceCheck {
	var f []conformanceCheck
	for _, c := range checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			f = append(f, c)
		}
	}
	return f
}

// ansi is a color escape (the suite's output has them).
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// resultDir is a folder the suite writes per scenario (-o):
// server-SCENARIO-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readConformanceResults reads the checks of every scenario the suite ran.
func readConformanceResults(t *testing.T, dir string) map[string][]conformanceCheck {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the suite wrote no results: %v", err)
	}
	res := map[string][]conformanceCheck{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatalf("%s/checks.json: %v", e.Name(), err)
		}
		if _, dup := res[m[1]]; dup {
			t.Fatalf("scenario %s ran twice", m[1])
		}
		res[m[1]] = checks
	}
	return res
}

// TestInteropMCPConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16, interop/conformance, on
// Node 22) against `delegate mcp --addr` over Streamable HTTP, through the
// embedded Temporal server, a worker and the claims agent: every server
// scenario the suite has (--suite all). Those that apply to delegate's
// server must pass; the others need the reference server's test tools,
// resources and prompts and are listed, with why, in
// interop/conformance/expected-failures.yaml. A scenario that fails and
// is not listed fails the test, and so does one listed that passes (the
// suite's own --expected-failures rule), or one listed that fails for
// another reason than the file says.
//
// The suite sends no credentials (its client is the TypeScript SDK's
// StreamableHTTPClientTransport with no headers, its DNS-rebinding probe
// a bare POST), and delegate's HTTP server takes none without a bearer
// token: the suite reaches it through a reverse proxy that adds alice's
// token to each request and passes everything else through (Host and
// Origin included), as a host configured with the token would send it.
func TestInteropMCPConformance(t *testing.T) {
	dir, node := conformanceDir(t)
	baseline := readConformanceBaseline(t, filepath.Join(dir, "expected-failures.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := buildDelegate(t, ctx, tmp)
	requireMCPCommand(t, bin)

	e := setup(t)
	templates := interopMCPTemplates(t, tmp, e.base)
	conn := []string{"--address", e.srv.FrontendAddr(), "--namespace", e.srv.Namespace()}
	token := randomToken(t)
	mcpURL := startMCPHTTP(t, bin, templates, token, conn, testutil.EmptyFile(t))

	// One delegation of alice's, so that resources/list has one to list.
	cs := httpSession(t, mcpURL, token)
	_, started := call(t, cs, "open_claim", map[string]any{"order_id": "A-1001"})
	if started.LocalWorkflowID == "" {
		t.Fatal("open_claim started no delegation")
	}

	target, err := url.Parse(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	var proxyLog testutil.LockedBuffer // a stream the suite stops reading ends here
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
			r.Out.Host = r.In.Host // the Host the suite sent (its DNS-rebinding probe sets one)
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE streams pass as they come
		ErrorLog:      log.New(&proxyLog, "", 0),
	})
	t.Cleanup(func() {
		proxy.Close()
		if t.Failed() {
			t.Logf("proxy log:\n%s", tail(proxyLog.String(), 4000))
		}
	})

	results := filepath.Join(tmp, "results")
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, conformanceMain), "server",
		"--url", proxy.URL+"/mcp", "--suite", "all",
		"--expected-failures", filepath.Join(dir, "expected-failures.yaml"), "-o", results)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	out = ansi.ReplaceAll(out, nil)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("conformance suite: %v\n%s", err, tail(string(out), 4000))
	}
	if err != nil {
		// Exit 1: a scenario failed that is not listed, or a listed one
		// passed; what follows says which.
		t.Errorf("conformance suite: %v (its baseline check failed)\n%s", err, tail(string(out), 6000))
	}

	ran := readConformanceResults(t, results)
	var passed, expected []string
	for name, checks := range ran {
		bad := failing(checks)
		listed := slices.Contains(baseline.Server, name)
		switch {
		case len(bad) == 0 && listed:
			t.Errorf("%s passes now: remove it from expected-failures.yaml (and say so in docs/mcp.md)", name)
		case len(bad) == 0:
			passed = append(passed, name)
		case !listed:
			t.Errorf("%s fails and is not an expected failure:%s", name, describeChecks(bad))
		default:
			expected = append(expected, name)
			for _, c := range bad {
				if !slices.ContainsFunc(baseline.Because[name], func(s string) bool { return strings.Contains(c.ErrorMessage, s) }) {
					t.Errorf("%s is an expected failure, but its check %s fails for another reason than %q:%s",
						name, c.ID, baseline.Because[name], describeChecks([]conformanceCheck{c}))
				}
			}
		}
	}
	for _, name := range append(slices.Clone(conformanceApplicable), baseline.Server...) {
		if _, ok := ran[name]; !ok {
			t.Errorf("the suite ran no scenario %s (this version of it does not have it?)", name)
		}
	}
	sort.Strings(passed)
	sort.Strings(expected)
	t.Logf("%d scenarios: %d passed %v; %d expected failures %v", len(ran), len(passed), passed, len(expected), expected)

	// What the passing scenarios saw is delegate's: its tools and alice's
	// delegation.
	var tools struct {
		Tools []string `json:"tools"`
	}
	_ = json.Unmarshal(checkDetails(ran["tools-list"], "tools-list"), &tools)
	for _, want := range []string{"open_claim", "open_claim_model", "delegation_status", "delegation_list", "delegation_cancel", "delegation_answer"} {
		if !slices.Contains(tools.Tools, want) {
			t.Errorf("tools-list saw tools %v, want %s among them", tools.Tools, want)
		}
	}
	var resources struct {
		Resources []string `json:"resources"`
	}
	_ = json.Unmarshal(checkDetails(ran["resources-list"], "resources-list"), &resources)
	if !slices.Contains(resources.Resources, "delegation://"+started.LocalWorkflowID) {
		t.Errorf("resources-list saw %v, want delegation://%s (alice's delegation)", resources.Resources, started.LocalWorkflowID)
	}
}

// checkDetails is the details of the check id among checks (nil if none).
func checkDetails(checks []conformanceCheck, id string) json.RawMessage {
	for _, c := range checks {
		if c.ID == id {
			return c.Details
		}
	}
	return nil
}

func describeChecks(checks []conformanceCheck) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "\n  %s %s: %s", c.Status, c.ID, c.ErrorMessage)
	}
	return b.String()
}
