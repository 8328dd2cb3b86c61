package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// tsExampleDir is the TypeScript backend example (docs/backends.md).
const tsExampleDir = "../examples/typescript"

// requireTypeScriptExample compiles the TypeScript example with its own
// tsc (type-checked against @temporalio/client's types) and returns its
// directory and node's path (requireCompiledExample).
func requireTypeScriptExample(t *testing.T) (dir, node string) {
	t.Helper()
	return requireCompiledExample(t, tsExampleDir, "@temporalio/client")
}

// requireCompiledExample compiles the TypeScript example in rel (a
// directory of the repository, from e2e) with its own tsc and returns its
// absolute directory and node's path. Without node, the example's tsc or
// one of its packages pkgs (make test-interop runs npm ci there) it skips,
// unless DELEGATE_INTEROP=1, which makes that a failure.
func requireCompiledExample(t *testing.T, rel string, pkgs ...string) (dir, node string) {
	t.Helper()
	name := strings.TrimPrefix(rel, "../")
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("TypeScript example %s unavailable: "+format, append([]any{name}, args...)...)
		}
		testutil.SkipGroup(t, testutil.GroupInterop, fmt.Sprintf("TypeScript example %s unavailable (make test-interop installs it): "+format, append([]any{name}, args...)...))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("%v", err)
	}
	dir, err = filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
	need := []string{tsc}
	for _, p := range pkgs {
		need = append(need, filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json"))
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			unavailable("%v (run npm ci in %s)", err, name)
		}
	}
	cmd := exec.Command(node, tsc, "-p", ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc -p %s: %v\n%s", name, err, out)
	}
	return dir, node
}

// runNode runs a compiled script of the example against e's server and
// returns its stdout, one JSON object per line, each keyed by its field key.
func runNode(t *testing.T, ctx context.Context, e *env, dir, node, key, script string, args ...string) map[string]map[string]any {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("dist", script)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+e.srv.FrontendAddr(), "TEMPORAL_NAMESPACE="+e.srv.Namespace())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("%s:\n%s%s", script, stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("node %s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	lines := map[string]map[string]any{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s printed %q: %v", script, sc.Text(), err)
		}
		k, _ := m[key].(string)
		if _, dup := lines[k]; dup {
			t.Fatalf("%s printed %s %q twice", script, key, k)
		}
		lines[k] = m
	}
	return lines
}

// reshape decodes v (a JSON value printed by the example) into out.
func reshape(t *testing.T, v any, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// TestInteropTypeScriptBackend runs the TypeScript backend example
// (examples/typescript, @temporalio/client from npm, compiled by tsc) against
// the embedded Temporal server, a worker and the claims agent: it starts a
// delegation, finds it by Search Attribute A2AState, reads the question
// (Query "state"), answers it (Update "provide-input"), gets the Outcome
// with the agent's claim, and cancels a second delegation with a reason.
// Then the example's refusals.ts sends what a TypeScript backend can get
// wrong, and each is refused by the workflow with the type and message the
// TypeScript side sees, before anything reaches the agent.
func TestInteropTypeScriptBackend(t *testing.T) {
	dir, node := requireTypeScriptExample(t)
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("flow", func(t *testing.T) {
		id := "ts-lost-parcel"
		steps := runNode(t, ctx, e, dir, node, "step", "delegate_backend.js", "--agent", e.base, "--id", id)
		for _, s := range []string{"started", "listed", "question", "answered", "outcome", "canceled"} {
			if steps[s] == nil {
				t.Fatalf("no step %q in the example's output", s)
			}
		}
		var listed struct {
			Delegations []struct{ ID, Agent string }
		}
		reshape(t, steps["listed"], &listed)
		found := false
		for _, d := range listed.Delegations {
			found = found || d.ID == id && d.Agent == "Claims Agent"
		}
		if !found {
			t.Errorf("listed = %+v, want %s with its agent's name (Search Attribute A2AAgent)", listed, id)
		}
		if q := steps["question"]; q["round"] != float64(1) || !strings.Contains(q["text"].(string), "photo") {
			t.Errorf("question = %v, want round 1 asking for a photo", q)
		}
		if r := steps["answered"]["round"]; r != float64(1) {
			t.Errorf("answered round = %v, want 1", r)
		}
		var out struct{ Outcome contracts.Outcome }
		reshape(t, steps["outcome"], &out)
		o := out.Outcome
		if o.Status != contracts.StatusCompleted || o.LocalWorkflowID != id || o.InputRounds != 1 || len(o.Outputs) != 1 || o.Outputs[0].Kind != "claim_opened" || o.Outputs[0].Authority != "none" {
			t.Fatalf("outcome = %+v, want completed with one claim_opened after one round", o)
		}
		var claim struct {
			ClaimID string `json:"claim_id"`
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal(o.Outputs[0].Data, &claim); err != nil || claim.OrderID != "A-1001" || !strings.HasPrefix(claim.ClaimID, "CLM-") {
			t.Errorf("claim = %s (%v), want the claims agent's claim for A-1001", o.Outputs[0].Data, err)
		}
		// The answer went by Update, as the example's backend gave it.
		s, err := dclient.Get(e.c, id).State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Answers) != 1 || s.Answers[0].Via != "update" || s.Answers[0].AnsweredBy != "claims-backend" || s.Answers[0].Text != "photo attached: box.jpg" {
			t.Errorf("answers = %+v, want the example's one answer by update", s.Answers)
		}
		var canceled struct{ Outcome contracts.Outcome }
		reshape(t, steps["canceled"], &canceled)
		if c := canceled.Outcome; c.Status != contracts.StatusCanceled || c.Error == nil || !strings.Contains(c.Error.Message, "no longer needed") {
			t.Errorf("canceled = %+v (error %+v), want canceled with the reason", c, c.Error)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		messages, tasks := e.agent.MessageCount(), e.agent.TaskCount()
		got := runNode(t, ctx, e, dir, node, "probe", "refusals.js", "--agent", e.base, "--prefix", "ts-probe")
		const (
			failed        = "WorkflowFailedError"
			updateFailed  = "WorkflowUpdateFailedError"
			contract      = "invalid_contract"
			invalidAnswer = "invalid_input"
		)
		for probe, want := range map[string]struct {
			err, typ, status string
			says             []string
		}{
			"unknown field":        {err: failed, typ: contract, says: []string{"requireSignedCard"}},
			"missing field":        {err: failed, typ: contract, says: []string{"skill", "required"}},
			"contract as a string": {err: failed, typ: contract, says: []string{"JSON object"}},
			"workflow id":          {err: failed, typ: contract, says: []string{`"ts-probe-the-contract-id" is not the workflow id "ts-probe-another-id"`}},
			"deadline too far":     {err: failed, typ: contract, says: []string{"deadline", "at most 366 days ahead"}},
			"relative deadline":    {err: failed, typ: contract, says: []string{"deadline_in: a relative deadline is resolved by the CLI or package client", `must send "deadline"`}},
			"execution timeout":    {err: failed, typ: contract, says: []string{"(workflow execution timeout)", "ends before the deadline"}},
			"run timeout":          {err: failed, typ: contract, says: []string{"(workflow run timeout)", "ends before the deadline"}},
			"second argument":      {err: failed, typ: "carried_state", says: []string{"carried state"}},
			"cron":                 {err: "the first run failed", typ: contract, says: []string{"(cron schedule)"}},
			// Not refused: ended at once, nothing sent.
			"past deadline": {status: string(contracts.StatusDeadlineExceeded)},
			// Refused by the server, before the workflow.
			"already started": {err: "WorkflowExecutionAlreadyStartedError"},
			// Refused answers: the Update fails, the delegation waits on.
			"empty answer":              {err: updateFailed, typ: invalidAnswer, says: []string{"text", "an answer needs text or data"}},
			"answer field in camelCase": {err: updateFailed, typ: invalidAnswer, says: []string{"answeredBy"}},
			"answer as a string":        {err: updateFailed, typ: invalidAnswer, says: []string{"must be a JSON object"}},
			"no question pending":       {err: updateFailed, typ: invalidAnswer, says: []string{"no question is pending"}},
			"then a good answer":        {status: string(contracts.StatusCompleted)},
			"cancel":                    {status: string(contracts.StatusCanceled)},
		} {
			g := got[probe]
			if g == nil {
				t.Errorf("%s: not reported", probe)
				continue
			}
			if want.status != "" {
				if g["status"] != want.status || g["error"] != nil {
					t.Errorf("%s: %v, want status %s", probe, g, want.status)
				}
				continue
			}
			if g["error"] != want.err {
				t.Errorf("%s: error %v, want %s (%v)", probe, g["error"], want.err, g)
				continue
			}
			if want.typ == "" {
				continue
			}
			msg, _ := g["message"].(string)
			if g["type"] != want.typ || g["non_retryable"] != true {
				t.Errorf("%s: type %v (non-retryable %v), want a non-retryable %s: %s", probe, g["type"], g["non_retryable"], want.typ, msg)
			}
			for _, w := range want.says {
				if !strings.Contains(msg, w) {
					t.Errorf("%s: message %q does not say %q", probe, msg, w)
				}
			}
		}
		if r := got["then a good answer"]["round"]; r != float64(1) {
			t.Errorf("the good answer after the refused ones: round %v, want 1", r)
		}
		if len(got) != 18 {
			t.Errorf("refusals.js reported %d probes, this test checks 18", len(got))
		}
		// Only the two delegations that ran reached the agent: the waiting
		// one (its message and the good answer) and the slow one.
		if m, n := e.agent.MessageCount()-messages, e.agent.TaskCount()-tasks; m != 3 || n != 2 {
			t.Errorf("the agent got %d messages and made %d tasks during the probes, want 3 and 2", m, n)
		}
	})
}

// TestInteropTypeScriptUsage: the example's scripts, given a flag too few,
// an unknown one or one without its value, print why and their usage and
// exit 2, without a stack trace (refusals.js without --prefix died with
// one); --help prints the usage and exits 0. No server is needed.
func TestInteropTypeScriptUsage(t *testing.T) {
	dir, node := requireTypeScriptExample(t)
	for _, c := range []struct {
		script string
		args   []string
		why    string
	}{
		{"refusals.js", []string{"--agent", "http://127.0.0.1:9"}, "missing --prefix"},
		{"refusals.js", []string{"--agent", "http://127.0.0.1:9", "--prefix", "p", "--id", "x"}, `unknown argument "--id"`},
		{"refusals.js", []string{"--agent", "--prefix", "p"}, "--agent needs a value"},
		{"delegate_backend.js", []string{"--agent", "http://127.0.0.1:9"}, "missing --id"},
		{"delegate_backend.js", []string{"http://127.0.0.1:9"}, `unknown argument "http://127.0.0.1:9"`},
	} {
		cmd := exec.Command(node, append([]string{filepath.Join("dist", c.script)}, c.args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=127.0.0.1:1") // nothing is dialed
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		usage := "usage: TEMPORAL_ADDRESS=127.0.0.1:7233 node dist/" + c.script + " --agent URL "
		if code != 2 || !strings.HasPrefix(stderr.String(), c.why+"\n"+usage) || strings.Contains(stderr.String(), "    at ") || stdout.Len() > 0 {
			t.Errorf("node dist/%s %s: exit %d (%v), want 2 with %q and the usage, no stack trace; stdout %q, stderr:\n%s",
				c.script, strings.Join(c.args, " "), code, err, c.why, stdout.String(), stderr.String())
		}
	}
	out, err := exec.Command(node, filepath.Join(dir, "dist", "refusals.js"), "--help").Output()
	if err != nil || !strings.HasPrefix(string(out), "usage: TEMPORAL_ADDRESS=127.0.0.1:7233 node dist/refusals.js --agent URL --prefix P\n") {
		t.Errorf("refusals.js --help: %v, %q", err, out)
	}
}
