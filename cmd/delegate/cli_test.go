package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/a2adelegate/delegate/contracts"
)

// cli runs one delegate command line in process (as main does) and
// returns its stdout, stderr and exit code.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// wantExit fails the test unless the command exited with code and its
// stderr holds every one of want.
func wantExit(t *testing.T, code int, want []string, args ...string) {
	t.Helper()
	_, stderr, got := cli(t, args...)
	if got != code {
		t.Errorf("delegate %s: exit %d, want %d; stderr: %s", strings.Join(args, " "), got, code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("delegate %s: stderr %q lacks %q", strings.Join(args, " "), stderr, w)
		}
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A filter typed wrong is refused with the valid values, before any
// server is dialed (the address below has nothing listening).
func TestUnknownStateRefused(t *testing.T) {
	for _, cmd := range [][]string{{"list"}, {"reconcile"}} {
		args := append(cmd, "--state", "input_required", "--address", "127.0.0.1:1")
		wantExit(t, exitUsage, []string{`"input_required" is not an A2AState`, "input-required", "unknown-outcome"}, args...)
	}
	wantExit(t, exitUsage, []string{`--schedule "5s"`, "or off"}, "reconcile", "--schedule", "5s", "--address", "127.0.0.1:1")
}

// --data that is not JSON says where it breaks.
func TestAnswerDataNotJSON(t *testing.T) {
	wantExit(t, exitUsage, []string{"--data: not valid JSON at line 1, column 10"}, "answer", "x", "--text", "a", "--data", `{"a": [1,}`, "--address", "127.0.0.1:1")
}

// A malformed contract names the line and column; a typo'd field names
// the field it was probably meant to be, and that field as missing, in one
// message.
func TestContractErrorsSayWhere(t *testing.T) {
	bad := writeFile(t, "bad.json", "{\n  \"local_workflow_id\": \"x\",\n  \"purpose\": \"p\",,\n}\n")
	wantExit(t, exitUsage, []string{"malformed JSON at line 3, column 18"}, "start", "--contract", bad, "--address", "127.0.0.1:1")
	comma := writeFile(t, "comma.json", "{\n  \"local_workflow_id\": \"x\",\n  \"allowed_outputs\": [\"a\",],\n}\n")
	wantExit(t, exitUsage, []string{"malformed JSON at line 3, column 26: a trailing comma"}, "start", "--contract", comma, "--address", "127.0.0.1:1")
	typo := writeFile(t, "typo.json", `{"local_workflow_id": "x", "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
 "skil": "open-claim", "purpose": "p", "message": {"text": "hi"}, "allowed_outputs": ["claim_opened"],
 "deadline": "2099-01-01T00:00:00Z", "write_authority": "none"}`)
	wantExit(t, exitUsage, []string{`skil: unknown field (names are case-sensitive); did you mean "skill"?`, "skill: required"}, "start", "--contract", typo, "--address", "127.0.0.1:1")
}

// --version names the versions built in.
func TestVersion(t *testing.T) {
	out, _, code := cli(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "delegate ") || !strings.Contains(out, "Temporal server v1.32.2") || !strings.Contains(out, "a2a-go v2.4.0") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// The connection flags are defined once, on the root: every command that
// dials Temporal takes them before or after its name, and a command that
// does not is refused them rather than ignoring them.
func TestConnectionFlagsPersistent(t *testing.T) {
	// Before the command's name: the flag reaches it (nothing listens on
	// port 1, so the dial fails with a network error, exit 3).
	wantExit(t, exitTemporal, []string{"127.0.0.1:1"}, "--address", "127.0.0.1:1", "status", "x")
	wantExit(t, exitTemporal, []string{"127.0.0.1:1"}, "status", "x", "--address", "127.0.0.1:1")
	wantExit(t, exitUsage, []string{`--address: "delegate dev" does not connect to a Temporal server`}, "dev", "--address", "127.0.0.1:1")
	wantExit(t, exitUsage, []string{`--namespace: "delegate card fetch" does not connect`}, "card", "fetch", "http://127.0.0.1:1/", "--namespace", "x")
	wantExit(t, exitUsage, []string{`--tls: "delegate bench" does not connect`}, "--tls", "bench")
	// Counts typed wrong are refused, not run with the defaults.
	wantExit(t, exitUsage, []string{"-n -5: must be at least 1"}, "bench", "-n", "-5")
	wantExit(t, exitUsage, []string{"--concurrency 0: must be at least 1"}, "bench", "--concurrency", "0")
	wantExit(t, exitUsage, []string{"--latency-ops 0: must be at least 1"}, "bench", "--latency-ops", "0")
	wantExit(t, exitUsage, []string{"--waiting -1: must be at least 0"}, "bench", "--waiting", "-1")
	wantExit(t, exitUsage, []string{"--waiting 5: 0 (skip it) or at least 10"}, "bench", "--waiting", "5")
	wantExit(t, exitUsage, []string{"--latency-ops 2000000000: must be at most 1000000"}, "bench", "--latency-ops", "2000000000")
	wantExit(t, exitUsage, []string{`--only "": "embedded" or "postgres"`}, "bench", "--only", "")
	// Help lists only the flags a command takes.
	for args, want := range map[string]bool{"dev --help": false, "card fetch --help": false, "bench --help": false, "status --help": true, "worker --help": true} {
		out, _, _ := cli(t, strings.Fields(args)...)
		if strings.Contains(out, "--address") != want {
			t.Errorf("delegate %s lists --address: %v, want %v", args, !want, want)
		}
	}
	if out, _, _ := cli(t, "dev", "--help"); !strings.Contains(out, "--encryption-key-file") {
		t.Error("delegate dev --help does not list --encryption-key-file")
	}
}

// Remote text shown in a terminal cannot move or hide what is printed:
// control characters and Unicode format characters (bidi overrides,
// zero-width) are escaped.
func TestCleanEscapesFormatCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                           "plain text",
		"A-1001 \u202edetelpmoc\u202c":         `A-1001 \u202edetelpmoc\u202c`,
		"zero\u200bwidth":                      `zero\u200bwidth`,
		"\x1b[2Jcleared":                       `\x1b[2Jcleared`,
		"say \"hi\"\n\xff":                     `say "hi"\n\xff`,
		"isolate \u2066x\u2069 and ok ünïcode": `isolate \u2066x\u2069 and ok ünïcode`,
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %s, want %s", in, got, want)
		}
	}
}

// An error from reading a sealed payload without its key says what to do.
func TestKeysHint(t *testing.T) {
	for _, msg := range []string{"payload item 0: encoding binary/encrypted: payload encoding is not supported", `payload sealed with key "k2", which is not among the keys given (k1)`} {
		got := temporalErr(errors.New(msg)).Error()
		if !strings.Contains(got, "--encryption-key-file") || !strings.Contains(got, "may have been taken") || strings.Count(got, "encrypted and this command") != 1 {
			t.Errorf("temporalErr(%q) = %q", msg, got)
		}
	}
	if got := temporalErr(errors.New("connection refused")).Error(); strings.Contains(got, "encrypt") {
		t.Errorf("an unrelated error got the keys hint: %q", got)
	}
}

// An interrupted bench (SIGINT, SIGTERM: its context is done) exits 1 and
// says so; it exited 3 as if Temporal had failed, or 0 when the interrupt
// came during the waiting measurement.
func TestBenchInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"bench", "--only", "embedded", "-n", "1", "--concurrency", "1", "--latency-ops", "1", "--waiting", "0"}, &out, &errOut)
	if code != exitNotComplete || !strings.Contains(errOut.String(), "bench interrupted") {
		t.Errorf("exit %d, stderr %q; want %d and \"bench interrupted\"", code, errOut.String(), exitNotComplete)
	}
}

// status of a call being retried: before the next attempt is due it says
// when; after, that the attempt started then (it said "next at" a time
// already past for as long as the attempt ran).
func TestStatusRetryingTimes(t *testing.T) {
	for _, tc := range []struct {
		next time.Time
		want string
	}{
		{time.Now().Add(time.Hour), "next at "},
		{time.Now().Add(-15 * time.Second), "the next attempt started at "},
	} {
		var b strings.Builder
		printState(&b, contracts.State{LocalWorkflowID: "r-1", Retrying: &contracts.Retrying{Op: "CheckAndSend", Attempts: 1,
			LastError: "timeout", Since: time.Now().Add(-time.Minute), Next: tc.next}}, "", "")
		if !strings.Contains(b.String(), tc.want+tc.next.UTC().Format(time.RFC3339)) {
			t.Errorf("next %s: status says\n%s\nwant %q", tc.next, b.String(), tc.want)
		}
	}
}

// Temporal's NotFound, as a delegation command gets it, says what to do:
// an unknown id, or a delegation that has ended (an answer to it was
// refused with "workflow execution already completed" alone).
func TestNotFoundSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{serviceerror.NewNotFound("workflow not found for ID: nope"), "no delegation with this id on this server (delegate list shows them"},
		{fmt.Errorf("answer refused: %w", serviceerror.NewNotFound("workflow execution already completed")), "the delegation has ended (delegate status ID says how)"},
	} {
		err := temporalErr(tc.err)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitTemporal || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.err.Error()) {
			t.Errorf("temporalErr(%v) = %v, want exit 3 and %q", tc.err, err, tc.want)
		}
	}
	if err := temporalErr(errors.New("connection refused")); strings.Contains(err.Error(), "delegate list") {
		t.Errorf("another error got the hint: %v", err)
	}
}

// `start --wait` says something at every attempt of a call that keeps
// failing, not only when its error changes (a send failing the same way
// every time looked silent), and once that Temporal took the retries over.
func TestRetryLineEveryAttempt(t *testing.T) {
	next := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var last contracts.Retrying
	steps := []struct {
		rt   *contracts.Retrying
		want string // "" for no line
	}{
		{&contracts.Retrying{Op: "SendMessage", Attempts: 1, LastError: "HTTP 503", Next: next}, "retrying SendMessage (attempt 1, next at 2026-12-01T10:00:00Z): HTTP 503"},
		{&contracts.Retrying{Op: "SendMessage", Attempts: 1, LastError: "HTTP 503", Next: next}, ""},
		{&contracts.Retrying{Op: "SendMessage", Attempts: 2, LastError: "HTTP 503", Next: next}, "retrying SendMessage (attempt 2, next at 2026-12-01T10:00:00Z): the same error"},
		{&contracts.Retrying{Op: "SendMessage", Attempts: 3, LastError: "connection refused", Next: next}, "retrying SendMessage (attempt 3, next at 2026-12-01T10:00:00Z): connection refused"},
		{&contracts.Retrying{Op: "SendMessage", Attempts: 10, LastError: "connection refused", HandedOver: true}, "retrying SendMessage: Temporal retries it from now on"},
		{&contracts.Retrying{Op: "SendMessage", Attempts: 10, LastError: "connection refused", HandedOver: true}, ""},
		{nil, ""},
		{&contracts.Retrying{Op: "GetTask", Attempts: 1, LastError: "HTTP 503", Next: next}, "retrying GetTask (attempt 1, next at 2026-12-01T10:00:00Z): HTTP 503"},
	}
	for i, s := range steps {
		got := retryLine(s.rt, &last)
		if (s.want == "") != (got == "") || !strings.HasPrefix(got, s.want) {
			t.Errorf("step %d: %q, want %q", i, got, s.want)
		}
	}
}

// An id no delegation has is refused naming the id rule: one a Temporal
// request cannot carry failed with a gRPC header error ("temporal-resource-id
// ... non-printable"), one with a space with "not found".
func TestIDWithCharactersNoIDHas(t *testing.T) {
	for _, cmd := range []string{"status", "answer", "cancel", "revoke"} {
		for _, id := range []string{"\u00fcn\u00efcode\u202eid", " lp2", "lp2 ", "has space"} {
			_, stderr, code := cli(t, cmd, id, "--address", "127.0.0.1:1")
			if code != exitUsage || !strings.Contains(stderr, "local_workflow_id") || strings.Contains(stderr, "\u202e") {
				t.Errorf("%s %q: exit %d, %q", cmd, id, code, stderr)
			}
		}
	}
}

// A relative deadline is checked before any server is dialed: a file with
// both deadline and deadline_in, a deadline_in that is not positive or
// too far, and a --deadline-in the same.
func TestStartDeadlineInRefused(t *testing.T) {
	contract := func(deadline string) string {
		return writeFile(t, "c.json", `{"local_workflow_id": "x", "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
 "skill": "open-claim", "purpose": "p", "message": {"text": "hi"}, "allowed_outputs": ["claim_opened"],
 `+deadline+`, "write_authority": "none"}`)
	}
	noServer := []string{"--address", "127.0.0.1:1"}
	both := contract(`"deadline": "2099-01-01T00:00:00Z", "deadline_in": "1h"`)
	wantExit(t, exitUsage, []string{"deadline, deadline_in: both given: give exactly one"}, append([]string{"start", "--contract", both}, noServer...)...)
	for in, rule := range map[string]string{`"0s"`: "must be more than 0", `"-1h"`: "must be more than 0", `"9000h"`: "more than 366 days", `"1 day"`: "not a Go duration"} {
		wantExit(t, exitUsage, []string{"deadline_in: ", rule}, append([]string{"start", "--contract", contract(`"deadline_in": ` + in)}, noServer...)...)
	}
	ok := contract(`"deadline_in": "1h"`)
	for in, rule := range map[string]string{"0s": "must be more than 0", "-1h": "must be more than 0", "9000h": "more than 366 days"} {
		wantExit(t, exitUsage, []string{"--deadline-in: ", rule}, append([]string{"start", "--contract", ok, "--deadline-in", in}, noServer...)...)
	}
	// The flag does not excuse a file with both.
	wantExit(t, exitUsage, []string{"deadline, deadline_in: both given"}, append([]string{"start", "--contract", both, "--deadline-in", "1h"}, noServer...)...)
	// A past absolute deadline is overridden by the flag: it gets as far
	// as dialing the server.
	past := contract(`"deadline": "2020-01-01T00:00:00Z"`)
	if _, stderr, code := cli(t, append([]string{"start", "--contract", past, "--deadline-in", "1h"}, noServer...)...); code == exitUsage {
		t.Errorf("--deadline-in over a past deadline: usage error %s", stderr)
	}
}

// status prints a failure as its text: several lines stay lines (indented
// under the value, so that none reads as a row of its own), quotes and
// backslashes stay as they are. It printed `\n` and `\"` (the whole value
// quoted as soon as it held a newline).
func TestStatusPrintsFailureText(t *testing.T) {
	var out bytes.Buffer
	printState(&out, contracts.State{LocalWorkflowID: "x",
		Failure: "invalid contract: write_authority: only \"none\" is accepted\ndeadline_in: a backend must send \"deadline\" (C:\\path)"}, "", "")
	got := out.String()
	want := regexp.MustCompile(`\nfailure: +invalid contract: write_authority: only "none" is accepted\n +deadline_in: a backend must send "deadline" \(C:\\path\)\n`)
	if !want.MatchString(got) {
		t.Errorf("status prints\n%s\nwant it to match %s", got, want)
	}
	if strings.Contains(got, `\n`) || strings.Contains(got, `\"`) {
		t.Errorf("status prints escapes:\n%s", got)
	}
	// Remote text cannot make a line of its own look like a row.
	out.Reset()
	printState(&out, contracts.State{LocalWorkflowID: "x", Failure: "a\nstatus:    completed\r\x1b[2J"}, "", "")
	if got := out.String(); !regexp.MustCompile(`\nfailure: +a\n +status: +completed\\r\\x1b\[2J\n`).MatchString(got) {
		t.Errorf("status prints\n%q", got)
	}
}

// One port given to two of dev's listeners is a usage error naming both
// flags, before anything starts (it failed late, binding, with exit 3);
// the help names the flags that open the metrics and pprof ports.
func TestDevSamePortTwice(t *testing.T) {
	wantExit(t, exitUsage, []string{"--port 7645 and --ui-port 7645: the same port"}, "dev", "--memory", "--port", "7645", "--ui-port", "7645")
	keys := writeFile(t, "keys", "k1:"+strings.Repeat("A", 43)+"=\n")
	wantExit(t, exitUsage, []string{"--ui-port 7646 and --codec-port 7646: the same port"}, "dev", "--memory", "--port", "7645", "--ui-port", "7646", "--codec-port", "7646", "--encryption-key-file", keys)
	out, _, code := cli(t, "dev", "--help")
	if code != 0 || !strings.Contains(out, "No metrics or pprof port is opened unless --metrics-addr / --debug-addr is given") {
		t.Errorf("dev --help: exit %d, %s", code, out)
	}
}

// status says who answered each round, how and when, and who started the
// delegation (DelegationStarter): answered_by showed only with --json.
// Operator and remote text cannot make a line of its own.
func TestStatusAnswersAndStarter(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printState(&out, contracts.State{LocalWorkflowID: "x", InputRounds: 2, Answers: []contracts.AnswerRecord{
		{Round: 1, AnsweredBy: "alice", Via: "update", At: at},
		{Round: 2, AnsweredBy: "eve\nstatus:    completed", Via: "signal", At: at.Add(time.Minute), Refused: "HTTP 400\r\x1b[2J"},
		{Round: 2, AnsweredBy: "bob", Via: "update", At: at.Add(2 * time.Minute), Unconfirmed: "no reply"},
	}}, "", "mcp:carol")
	got := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\nstarted by: +mcp:carol\n`),
		regexp.MustCompile(`\nanswers: +round 1: by alice via update at 2026-12-01T10:00:00Z\n` +
			` +round 2: by eve\\nstatus: +completed via signal at 2026-12-01T10:01:00Z; answer not taken: HTTP 400\\r\\x1b\[2J\n` +
			` +round 2: by bob via update at 2026-12-01T10:02:00Z; answer unconfirmed: no reply\n`),
	} {
		if !want.MatchString(got) {
			t.Errorf("status prints\n%s\nwant it to match %s", got, want)
		}
	}
	out.Reset()
	printState(&out, contracts.State{LocalWorkflowID: "x"}, "", "")
	if got := out.String(); strings.Contains(got, "started by") || strings.Contains(got, "answers") {
		t.Errorf("status with no starter and no answer prints\n%s", got)
	}
}

// --send-timeout sets the contract's send_timeout, checked like it: past an
// hour is a usage error naming the flag, before anything is dialed.
func TestStartSendTimeout(t *testing.T) {
	ok := writeFile(t, "ok.json", `{"local_workflow_id": "x", "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
 "skill": "open-claim", "purpose": "p", "message": {"text": "hi"}, "allowed_outputs": ["claim_opened"],
 "deadline_in": "1h", "write_authority": "none"}`)
	wantExit(t, exitUsage, []string{"--send-timeout: must be 1s to 1h0m0s, got 2h0m0s"}, "start", "--contract", ok, "--send-timeout", "2h", "--address", "127.0.0.1:1")
	bad := writeFile(t, "bad.json", `{"local_workflow_id": "x", "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
 "skill": "open-claim", "purpose": "p", "message": {"text": "hi"}, "allowed_outputs": ["claim_opened"],
 "deadline_in": "1h", "write_authority": "none", "send_timeout": "forever"}`)
	wantExit(t, exitUsage, []string{`send_timeout: "forever" is not a Go duration`}, "start", "--contract", bad, "--address", "127.0.0.1:1")
	// The flag overrides a bad file value: the start gets as far as the
	// server (none here), not refused for the file's send_timeout.
	_, errOut, code := cli(t, "start", "--contract", bad, "--send-timeout", "45s", "--address", "127.0.0.1:1")
	if code == exitUsage || strings.Contains(errOut, "send_timeout") {
		t.Errorf("--send-timeout 45s over a bad file value: exit %d, %s", code, errOut)
	}
}

// status names what the agent's last reply held that delegate ignored
// (TaskSnapshot.Warnings), remote text kept to its line.
func TestStatusShowsIgnoredMembers(t *testing.T) {
	var out bytes.Buffer
	printState(&out, contracts.State{LocalWorkflowID: "x", LastSnapshot: &contracts.TaskSnapshot{State: contracts.TaskStateCompleted,
		Warnings: []string{"status.timestamp 1733076000 is not an RFC 3339 time (ignored)", "x\nstatus:    failed"}}}, "", "")
	got := out.String()
	if !regexp.MustCompile(`\nignored in the reply: +status.timestamp 1733076000 is not an RFC 3339 time \(ignored\); x\n +status: +failed\n`).MatchString(got) {
		t.Errorf("status prints\n%s", got)
	}
}

// A delegation that waits for an operator names the Temporal UI page of
// its run, the tab where the question is (the browser test opens it and
// finds the question there); an ended one names none.
func TestStatusNamesTheUIPage(t *testing.T) {
	page := uiPage("", "lost parcel/1", "0190-run")
	if want := "/namespaces/default/workflows/lost%20parcel%2F1/0190-run/user-metadata"; page != want {
		t.Errorf("uiPage = %q, want %q", page, want)
	}
	if got := uiPage("claims", "x", "r"); got != "/namespaces/claims/workflows/x/r/user-metadata" {
		t.Errorf("uiPage in namespace claims = %q", got)
	}
	waiting := contracts.State{LocalWorkflowID: "x", A2AState: "input-required",
		Question: &contracts.Question{Round: 1, State: contracts.TaskStateInputRequired, Text: "a photo?"}}
	row := regexp.MustCompile(`(?m)^in the ui: +(/\S+) \(.*"User Metadata" tab`)
	for name, s := range map[string]contracts.State{
		"question":        waiting,
		"unknown outcome": {LocalWorkflowID: "x", A2AState: "unknown-outcome", Unknown: &contracts.UnknownOutcome{Round: 0, MessageID: "m"}},
		"card changed":    {LocalWorkflowID: "x", A2AState: "card-changed"},
	} {
		var out strings.Builder
		printStateAt(&out, s, "", "", page)
		if m := row.FindStringSubmatch(out.String()); m == nil || m[1] != page {
			t.Errorf("%s: status prints\n%s\nwant the row \"in the ui: %s\"", name, out.String(), page)
		}
	}
	ended := waiting
	ended.Outcome = &contracts.Outcome{Status: contracts.StatusCompleted}
	for name, s := range map[string]contracts.State{"ended": ended, "working": {LocalWorkflowID: "x", A2AState: "working"}} {
		var out strings.Builder
		printStateAt(&out, s, "", "", page)
		if strings.Contains(out.String(), "in the ui") {
			t.Errorf("%s: status prints the UI page:\n%s", name, out.String())
		}
	}
	var out strings.Builder
	printState(&out, waiting, "", "")
	if strings.Contains(out.String(), "in the ui") {
		t.Errorf("no page known: status prints a UI row:\n%s", out.String())
	}
}
