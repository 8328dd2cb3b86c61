package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkclient "go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// tourStep is what one command line of the README's tour must do.
type tourStep struct {
	line string         // as written in README.md
	want *regexp.Regexp // in its stdout
	poll bool           // run again (up to a minute) until want shows
}

// The README's tour, in order. The test fails when the README's command
// lines and this list differ, so the two cannot drift apart.
var tour = []tourStep{
	{`./bin/delegate list --state input-required`, regexp.MustCompile(`lost-parcel-YYYYMMDD-HHMMSS\s+Claims Agent\s+input-required`), true},
	{`./bin/delegate status lost-parcel-YYYYMMDD-HHMMSS`, regexp.MustCompile(`question:\s+"Please send a photo`), true},
	{`./bin/delegate answer lost-parcel-YYYYMMDD-HHMMSS --text "photo attached: box.jpg" --by alice`, regexp.MustCompile(`answer accepted for round 1`), false},
	{`./bin/delegate status lost-parcel-YYYYMMDD-HHMMSS`, regexp.MustCompile(`(?s)answers:\s+round 1: by alice via update at \S+Z\n.*status:\s+completed.*output:\s+claim_opened .*"order_id":"A-1001"`), true},
	{`./bin/delegate start --contract contracts/examples/instant.json --wait`, regexp.MustCompile(`"status": "completed"`), false},
	{`./bin/delegate start --contract contracts/examples/slow.json`, regexp.MustCompile(`claims-slow-example`), false},
	{`./bin/delegate cancel claims-slow-example --reason "no longer needed"`, regexp.MustCompile(`ended canceled`), false},
	{`./bin/delegate status claims-slow-example`, regexp.MustCompile(`(?s)cancel reason:\s+no longer needed.*status:\s+canceled`), false},
}

// TestReadmeTour runs every command line of the README's tour, as written
// (placeholders filled in), through the CLI against `delegate dev` and the
// claims agent, both in this process, and checks what each prints. It
// runs the tour twice: the second time as a newcomer who runs it again
// (the example ids are reused once their delegations ended).
func TestReadmeTour(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := tourLines(t, string(readme))
	var want []string
	for _, s := range tour {
		want = append(want, s.line)
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("README.md's tour runs\n  %s\nthis test checks\n  %s\n(update the tour table with the README)", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freeTCPPort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var devOut testutil.LockedBuffer
	devDone := make(chan int, 1)
	go func() {
		devDone <- run(ctx, []string{"dev", "--memory", "--port", strconv.Itoa(port), "--ui-port", "-1", "--poll-initial", "100ms"}, &devOut, &devOut)
	}()
	t.Cleanup(func() { cancel(); <-devDone })
	t.Setenv("TEMPORAL_ADDRESS", addr)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	agent, err := claimsagent.Open(claimsagent.Config{BaseURL: base, WorkDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = agent.Serve(ctx, ln) }()

	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, _, code := cli(t, "list"); code == 0 {
			break
		}
		select {
		case code := <-devDone:
			t.Fatalf("delegate dev exited %d: %s", code, devOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("delegate dev not serving at %s: %s", addr, devOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// delegate dev names the ports it listens on besides --port, and none
	// is next to it (it took --port+1 to +7 unannounced). The frontend
	// may answer before the line is printed.
	for until := time.Now().Add(30 * time.Second); !strings.Contains(devOut.String(), "Internal ports") && time.Now().Before(until); {
		time.Sleep(20 * time.Millisecond)
	}
	if m := regexp.MustCompile(`Internal ports  ((?:\d+ ){6}\d+) on 127\.0\.0\.1 `).FindStringSubmatch(devOut.String()); m == nil {
		t.Errorf("delegate dev does not print its internal ports:\n%s", devOut.String())
	} else {
		for _, f := range strings.Fields(m[1]) {
			if p, _ := strconv.Atoi(f); p > port && p <= port+7 {
				t.Errorf("delegate dev --port %d listens on %d too", port, p)
			}
		}
	}

	// The Nexus endpoint "delegate" is created, and the frontend's HTTP
	// API (which Nexus goes through) is named, on a port of its own.
	for until := time.Now().Add(30 * time.Second); !strings.Contains(devOut.String(), "Nexus endpoint") && time.Now().Before(until); {
		time.Sleep(20 * time.Millisecond)
	}
	if m := regexp.MustCompile(`Nexus endpoint  "delegate" \(service "delegate", operation "start-delegation"; HTTP API 127\.0\.0\.1:(\d+)\)`).FindStringSubmatch(devOut.String()); m == nil {
		t.Errorf("delegate dev does not name its Nexus endpoint:\n%s", devOut.String())
	} else if p, _ := strconv.Atoi(m[1]); p >= port && p <= port+7 {
		t.Errorf("delegate dev --port %d: HTTP API on %d", port, p)
	}

	dir := t.TempDir()
	// example rewrites a contract of contracts/examples as make run does:
	// this test's agent, and optionally an id (the deadline is the file's
	// own "deadline_in", resolved by start).
	example := func(name, id string) string {
		b, err := os.ReadFile(filepath.Join("../../contracts/examples", name))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), "http://127.0.0.1:9999", base, 1)
		if id != "" {
			s = regexp.MustCompile(`"local_workflow_id": "[^"]*"`).ReplaceAllString(s, `"local_workflow_id": "`+id+`"`)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	for round := 1; round <= 2; round++ {
		// What make run does: the sample delegation with a fresh id.
		id := fmt.Sprintf("lost-parcel-tour-%d", round)
		if _, stderr, code := cli(t, "start", "--contract", example("lost-parcel.json", id)); code != 0 {
			t.Fatalf("starting the sample: exit %d: %s", code, stderr)
		}
		for _, step := range tour {
			args := shellWords(t, strings.ReplaceAll(step.line, "lost-parcel-YYYYMMDD-HHMMSS", id))[1:]
			for i, a := range args {
				if strings.HasPrefix(a, "contracts/examples/") {
					args[i] = example(strings.TrimPrefix(a, "contracts/examples/"), "")
				}
			}
			want := regexp.MustCompile(strings.ReplaceAll(step.want.String(), "lost-parcel-YYYYMMDD-HHMMSS", regexp.QuoteMeta(id)))
			until := time.Now().Add(time.Minute)
			for {
				out, stderr, code := cli(t, args...)
				if code == 0 && want.MatchString(out) {
					break
				}
				if !step.poll || time.Now().After(until) {
					t.Fatalf("tour %d: %s\nexit %d, want 0 and output matching %s\nstdout:\n%s\nstderr:\n%s", round, step.line, code, want, out, stderr)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}

	// Beyond the tour: a cancel reason that cannot be sent is refused
	// before anything is sent (it would otherwise wait for the next cancel).
	if _, stderr, code := cli(t, "start", "--contract", example("slow.json", "")); code != 0 {
		t.Fatalf("start slow: %s", stderr)
	}
	if _, stderr, code := cli(t, "cancel", "claims-slow-example", "--reason", "bad \xff utf8"); code != exitUsage || !strings.Contains(stderr, "--reason: must be valid UTF-8") {
		t.Errorf("cancel with an invalid reason: exit %d, %s", code, stderr)
	}
	if out, stderr, code := cli(t, "cancel", "claims-slow-example"); code != 0 || !strings.Contains(out, "ended canceled") {
		t.Errorf("cancel: exit %d, %s %s", code, out, stderr)
	}
	if out, _, _ := cli(t, "status", "claims-slow-example"); strings.Contains(out, "cancel reason") {
		t.Errorf("a refused reason was used by the next cancel:\n%s", out)
	}
	// Canceling it again says how it ended (not only "workflow completed").
	if _, stderr, code := cli(t, "cancel", "claims-slow-example"); code != exitTemporal || !strings.Contains(stderr, "has already ended: canceled (workflow completed)") {
		t.Errorf("cancel of a canceled delegation: exit %d, %s", code, stderr)
	}
	// A run of an id used again is told apart from the first by its start
	// (lists follow a little behind: wait for both rows, at most 10 s).
	row := regexp.MustCompile(`(?m)^claims-slow-example .* (running|completed)\s+\d{4}-\d\d-\d\dT\S+Z$`)
	before, _, _ := cli(t, "list")
	if _, stderr, code := cli(t, "start", "--contract", example("slow.json", "")); code != 0 {
		t.Fatalf("start slow again: %s", stderr)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _, _ := cli(t, "list")
		if regexp.MustCompile(`(?m)WORKFLOW\s+STARTED$`).MatchString(out) && len(row.FindAllString(out, -1)) == len(row.FindAllString(before, -1))+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("list shows the two runs of claims-slow-example with their starts:\n%s", out)
			break
		}
	}
	if _, stderr, code := cli(t, "cancel", "claims-slow-example"); code != 0 {
		t.Errorf("cancel the second run: %s", stderr)
	}

	// A stop that has not landed within --wait exits 1 (it exited 0, as if
	// done): the stubborn agent refuses the cancel and works on for 2 s.
	if _, stderr, code := cli(t, "start", "--contract", example("stubborn.json", "")); code != 0 {
		t.Fatalf("start stubborn: %s", stderr)
	}
	// Once its task exists (canceled before the send, it ends at once).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _, _ := cli(t, "status", "claims-stubborn-example", "--json")
		if strings.Contains(out, `"a2a_state": "working"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stubborn delegation never worked:\n%s", out)
		}
	}
	if out, stderr, code := cli(t, "cancel", "claims-stubborn-example", "--wait", "200ms"); code != exitNotComplete || !strings.Contains(out, "still stopping after 200ms") || !strings.Contains(stderr, "had not ended") {
		t.Errorf("cancel not landed within --wait: exit %d, %s %s", code, out, stderr)
	}

	// A delegation canceled while its first send was still retrying is
	// listed with how it ended, and its card URL is not passed off as the
	// agent's name (it listed A2A STATE "ended" and the URL as the agent).
	if _, stderr, code := cli(t, "start", "--contract", example("unreachable.json", "")); code != 0 {
		t.Fatalf("start unreachable: %s", stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _, _ := cli(t, "status", "claims-unreachable-example")
		if strings.Contains(out, "retrying:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unreachable delegation never retried:\n%s", out)
		}
	}
	if out, stderr, code := cli(t, "cancel", "claims-unreachable-example"); code != 0 || !strings.Contains(out, "ended canceled") {
		t.Fatalf("cancel unreachable: exit %d, %s %s", code, out, stderr)
	}
	unreachable := regexp.MustCompile(`(?m)^claims-unreachable-example\s+http://127\.0\.0\.1:9/\.well-known/agent-card\.json \(name unknown\)\s+ended\s+canceled\s+-\s+-\s+completed\s`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _, _ := cli(t, "list")
		if unreachable.MatchString(out) && regexp.MustCompile(`(?m)^ID\s+AGENT\s+A2A STATE\s+OUTCOME\s+WAITING SINCE`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("list shows the canceled unreachable delegation as\n%s\nwant a row matching %s", out, unreachable)
			break
		}
	}

	// Runs a backend started itself, without the search attributes
	// package client sets: one whose contract the workflow refused lists
	// its failure's category as OUTCOME (it showed "-" and no agent), one
	// whose deadline had passed lists the contract's card URL (it showed
	// " (name unknown)" alone).
	c, err := dclient.Dial(ctx, dclient.Connection{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw := func(id, deadline, writeAuthority string) {
		t.Helper()
		contract := map[string]any{"local_workflow_id": id, "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
			"skill": "open-claim", "purpose": "p", "message": map[string]any{"text": "hi"}, "allowed_outputs": []string{"claim_opened"},
			"deadline": deadline, "write_authority": writeAuthority}
		if _, err := c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: id, TaskQueue: contracts.TaskQueue}, contracts.WorkflowType, contract); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	raw("tour-refused", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "all")
	raw("tour-past-deadline", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "none")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tour-refused\s+http://127\.0\.0\.1:9/\.well-known/agent-card\.json \(name unknown\)\s+ended\s+invalid_contract\s+-\s+-\s+failed\s`),
		regexp.MustCompile(`(?m)^tour-past-deadline\s+http://127\.0\.0\.1:9/\.well-known/agent-card\.json \(name unknown\)\s+\S+\s+deadline_exceeded\s+-\s+-\s+completed\s`),
	} {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			out, _, _ := cli(t, "list")
			if want.MatchString(out) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("list shows\n%s\nwant a row matching %s", out, want)
				break
			}
		}
	}

	// status names who started a delegation (DelegationStarter, as
	// delegate mcp sets it).
	d, err := contracts.DecodeDelegation([]byte(`{"local_workflow_id": "tour-started-by", "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
 "skill": "open-claim", "purpose": "p", "message": {"text": "hi"}, "allowed_outputs": ["claim_opened"], "deadline_in": "1h", "write_authority": "none"}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dclient.Start(ctx, c, d, dclient.WithStarter("carol@example.com")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _, _ := cli(t, "status", "tour-started-by")
		if regexp.MustCompile(`\nstarted by: +carol@example\.com\n`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("status of a delegation started with a starter:\n%s", out)
			break
		}
	}
	if _, stderr, code := cli(t, "cancel", "tour-started-by"); code != 0 {
		t.Errorf("cancel tour-started-by: %s", stderr)
	}

	// The reconcile schedule is created, then replaced (a second
	// --schedule printed the same line as the first), removed (off in any
	// case), and removing it again says there is none. Created, it says
	// what it will do (it printed `(state "", older than 0s)`).
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile", "--schedule", "15m"}, `schedule delegate-reconcile created: every 15m, Signal "reconcile" to every open delegation (any A2AState, any age), then the orphan sweep (delegations terminated within the last 24h whose remote task still works are canceled)`},
		{[]string{"reconcile", "--schedule", "1h30m", "--state", "input-required", "--older-than", "2h"}, `schedule delegate-reconcile replaced: every 1h30m, Signal "reconcile" to every open delegation whose A2AState is input-required, started more than 2h ago, then the orphan sweep`},
		{[]string{"reconcile", "--schedule", "OFF"}, "schedule delegate-reconcile removed"},
		{[]string{"reconcile", "--schedule", "off"}, "schedule delegate-reconcile: there is none"},
	} {
		out, stderr, code := cli(t, c.args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("delegate %s: exit %d, stdout %q (want %q), stderr %q", strings.Join(c.args, " "), code, out, c.want, stderr)
		}
	}
}

// tourLines returns the ./bin/delegate command lines of the ```sh blocks
// in README.md's "A five-minute tour" section, in order.
func tourLines(t *testing.T, readme string) []string {
	t.Helper()
	start := strings.Index(readme, "\n## A five-minute tour")
	if start < 0 {
		t.Fatal(`README.md has no "## A five-minute tour" section`)
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var lines []string
	in := false
	for _, l := range strings.Split(section, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.HasPrefix(l, "./bin/delegate "):
			lines = append(lines, l)
		case in && l != "":
			t.Errorf("README.md tour: %q is not a ./bin/delegate command line; the tour test cannot run it", l)
		}
	}
	return lines
}

// shellWords splits a command line as sh would for plain words and
// "double" or 'single' quoted ones (no expansions).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '$' || r == '`' || r == '|' || r == '>' || r == '<' || r == ';' || r == '&':
			t.Fatalf("command line %q uses shell syntax (%c) the tour test does not run", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("command line %q: unclosed quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
