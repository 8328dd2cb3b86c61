package e2e

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// The backend examples in other languages (docs/backends.md). The
// TypeScript one also runs (TestInteropTypeScriptBackend); the Python one
// cannot here (PyPI is out of reach), so these tests are what keeps both
// on the public names.
const (
	tsExample = "../examples/typescript/src/delegate_backend.ts"
	pyExample = "../examples/python/delegate_backend.py"
)

// exampleConstants are the constants each example declares, with the
// public value each must hold.
var exampleConstants = map[string]string{
	"WORKFLOW_TYPE":                       contracts.WorkflowType,
	"TASK_QUEUE":                          contracts.TaskQueue,
	"QUERY_STATE":                         contracts.QueryState,
	"UPDATE_PROVIDE_INPUT":                contracts.ProvideInput,
	"SIGNAL_CANCEL_REASON":                contracts.SignalCancelReason,
	"SIGNAL_REVOKE":                       contracts.SignalRevoke,
	"SIGNAL_RECONCILE":                    contracts.SignalReconcile,
	"SEARCH_ATTRIBUTE_A2A_STATE":          contracts.SearchAttributeA2AState,
	"SEARCH_ATTRIBUTE_A2A_AGENT":          contracts.SearchAttributeA2AAgent,
	"SEARCH_ATTRIBUTE_A2A_REMOTE_TASK_ID": contracts.SearchAttributeA2ARemoteTaskID,
	"SEARCH_ATTRIBUTE_A2A_PURPOSE":        contracts.SearchAttributeA2APurpose,
	"ERROR_INVALID_CONTRACT":              workflows.ErrTypeInvalidContract,
	"ERROR_CARRIED_STATE":                 workflows.ErrTypeCarriedState,
	"ERROR_INVALID_INPUT":                 workflows.ErrTypeInvalidInput,
}

// publicNames are every Temporal name of the public contract (a string in
// an example that is one of these in another spelling is a stale or wrong
// name).
var publicNames = append([]string{
	contracts.WorkflowType, contracts.TaskQueue, contracts.QueryState, contracts.ProvideInput,
	contracts.SignalRediscover, contracts.ResolveUnknown, contracts.SignalRevoke, contracts.SignalCancelReason,
	contracts.SignalReconcile, contracts.SignalTaskUpdate,
	workflows.ErrTypeInvalidContract, workflows.ErrTypeCarriedState, workflows.ErrTypeInvalidInput,
}, contracts.SearchAttributeNames...)

// squash folds case and separators: "provide_input", "ProvideInput" and
// "provide-input" are one name.
func squash(s string) string {
	return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s))
}

// lang is how one language spells what the checks look for.
type lang struct {
	file string
	// constDecl matches a constant declaration: name, value.
	constDecl *regexp.Regexp
	// literalNames match an SDK call that names a workflow type, task
	// queue, Query, Signal or Update with a literal instead of a constant.
	literalNames *regexp.Regexp
}

var (
	langTS = lang{
		file:         tsExample,
		constDecl:    regexp.MustCompile(`(?m)^export const ([A-Z0-9_]+) = '([^']*)';`),
		literalNames: regexp.MustCompile("(?:\\.(?:query|signal|executeUpdate|startUpdate)(?:<[^>]*>)?|workflow\\.start|taskQueue:)\\(?\\s*['\"`]"),
	}
	langPy = lang{
		file:         pyExample,
		constDecl:    regexp.MustCompile(`(?m)^([A-Z0-9_]+) = "([^"]*)"`),
		literalNames: regexp.MustCompile(`(?:\.(?:query|signal|execute_update|start_update|start_workflow)\(|task_queue=)\s*['"]`),
	}
	// stringLiteral matches a one-line string literal in either language.
	stringLiteral = regexp.MustCompile("'([^'\\n]*)'|\"([^\"\\n]*)\"|`([^`\\n]*)`")
	// searchAttribute matches a word that looks like a Search Attribute.
	searchAttribute = regexp.MustCompile(`\bA2A[A-Z][A-Za-z]*\b`)
)

// checkNames checks that an example declares each public name once with
// its value, names nothing with a literal where it should use one of
// them, spells no public name another way, and queries only the Search
// Attributes there are.
func checkNames(t *testing.T, l lang) string {
	t.Helper()
	b, err := os.ReadFile(l.file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	declared := map[string][]string{}
	for _, m := range l.constDecl.FindAllStringSubmatch(src, -1) {
		declared[m[1]] = append(declared[m[1]], m[2])
	}
	for name, want := range exampleConstants {
		if got := declared[name]; len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s = %q, want it declared once as %q", l.file, name, got, want)
		}
	}
	for name, values := range declared {
		for _, p := range []string{"WORKFLOW_", "TASK_QUEUE", "QUERY_", "SIGNAL_", "UPDATE_", "SEARCH_ATTRIBUTE_", "ERROR_"} {
			if _, known := exampleConstants[name]; strings.HasPrefix(name, p) && !known {
				t.Errorf("%s: %s = %q is not a public name this test knows (contracts/names.go)", l.file, name, values)
			}
		}
	}
	for _, m := range l.literalNames.FindAllString(src, -1) {
		t.Errorf("%s: %q names a workflow, task queue, Query, Signal or Update with a literal: use the constants", l.file, m)
	}
	// The JSON fields of what travels (a2a_state) are not Temporal names.
	var fields []string
	for _, v := range []any{contracts.Delegation{}, contracts.Answer{}, contracts.State{}, contracts.Question{}, contracts.Outcome{}} {
		fields = append(fields, jsonFields(v)...)
	}
	for _, m := range stringLiteral.FindAllStringSubmatch(src, -1) {
		lit := m[1] + m[2] + m[3]
		if slices.Contains(fields, lit) {
			continue
		}
		for _, name := range publicNames {
			if lit != name && squash(lit) == squash(name) {
				t.Errorf("%s: %q is %q spelled another way", l.file, lit, name)
			}
		}
	}
	for _, sa := range searchAttribute.FindAllString(src, -1) {
		if !slices.Contains(contracts.SearchAttributeNames, sa) {
			t.Errorf("%s: %s is not a Search Attribute (%v)", l.file, sa, contracts.SearchAttributeNames)
		}
	}
	return src
}

// jsonFields returns the JSON field names of a Go type.
func jsonFields(v any) []string {
	var out []string
	ty := reflect.TypeOf(v)
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// requiredContractFields are the contract's required fields
// (docs/contracts.md).
var requiredContractFields = []string{"local_workflow_id", "agent_card_url", "skill", "purpose", "message", "allowed_outputs", "deadline", "write_authority"}

// TestBackendExampleNamesTypeScript checks the TypeScript example's names,
// and that its interfaces carry only the JSON fields of the Go types they
// mirror and its Status lists every Outcome status.
func TestBackendExampleNamesTypeScript(t *testing.T) {
	src := checkNames(t, langTS)
	mirrors := map[string]any{
		"Delegation": contracts.Delegation{}, "Answer": contracts.Answer{}, "ProvideInputResult": contracts.ProvideInputResult{},
		"Question": contracts.Question{}, "State": contracts.State{}, "Output": contracts.Output{}, "Outcome": contracts.Outcome{},
	}
	field := regexp.MustCompile(`(?m)^  ([a-z_0-9A-Z]+)\??:`)
	for name, v := range mirrors {
		_, body, ok := strings.Cut(src, "\nexport interface "+name+" {\n")
		if !ok {
			t.Errorf("%s: no interface %s", tsExample, name)
			continue
		}
		body, _, _ = strings.Cut(body, "\n}")
		fields := jsonFields(v)
		var got []string
		for _, m := range field.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
			if !slices.Contains(fields, m[1]) {
				t.Errorf("%s: interface %s has field %q, which %T does not (%v): the workflow refuses or never sends it", tsExample, name, m[1], v, fields)
			}
		}
		if name == "Delegation" {
			for _, f := range requiredContractFields {
				if !slices.Contains(got, f) {
					t.Errorf("%s: interface Delegation lacks the required field %q", tsExample, f)
				}
			}
		}
	}
	_, union, _ := strings.Cut(src, "\nexport type Status =")
	union, _, _ = strings.Cut(union, ";")
	var statuses []string
	for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(union, -1) {
		statuses = append(statuses, m[1])
	}
	slices.Sort(statuses)
	want := []string{}
	for _, s := range []contracts.Status{contracts.StatusCompleted, contracts.StatusInvalidOutput, contracts.StatusFailed, contracts.StatusRejected,
		contracts.StatusCanceled, contracts.StatusDeadlineExceeded, contracts.StatusUnknownOutcome, contracts.StatusAuthorizationDenied,
		contracts.StatusProtocolError, contracts.StatusCardUntrusted, contracts.StatusCardChanged, contracts.StatusCancelUnconfirmed} {
		want = append(want, string(s))
	}
	slices.Sort(want)
	if !slices.Equal(statuses, want) {
		t.Errorf("%s: type Status = %v, want the Outcome statuses %v", tsExample, statuses, want)
	}
}

// TestBackendExampleNamesPython checks the Python example's names (it is
// never run here), that its contract has exactly the required fields and
// its answer only the Answer's, and that it says it was not run.
func TestBackendExampleNamesPython(t *testing.T) {
	src := checkNames(t, langPy)
	_, body, ok := strings.Cut(src, "\ndef lost_parcel(")
	if !ok {
		t.Fatalf("%s: no def lost_parcel", pyExample)
	}
	body, _, _ = strings.Cut(body, "\n\n\n")
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^        "([A-Za-z0-9_]+)": `).FindAllStringSubmatch(body, -1) {
		keys = append(keys, m[1])
	}
	slices.Sort(keys)
	want := slices.Clone(requiredContractFields)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("%s: lost_parcel's contract has fields %v, want %v", pyExample, keys, want)
	}
	m := regexp.MustCompile(`execute_update\(UPDATE_PROVIDE_INPUT, \{([^}]*)\}\)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no execute_update(UPDATE_PROVIDE_INPUT, {...})", pyExample)
	}
	for _, k := range regexp.MustCompile(`"([A-Za-z0-9_]+)":`).FindAllStringSubmatch(m[1], -1) {
		if !slices.Contains(jsonFields(contracts.Answer{}), k[1]) {
			t.Errorf("%s: the answer has field %q, which contracts.Answer does not", pyExample, k[1])
		}
	}
	if !strings.Contains(src, "NOT RUN IN CI: PyPI is not reachable") {
		t.Errorf("%s does not say that it is not run", pyExample)
	}
}

// TestBackendDocQuotesExamples checks that the TypeScript and Python code
// docs/backends.md shows is quoted from the example files, line by line,
// so the page cannot drift from the code that runs (or is checked).
func TestBackendDocQuotesExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/backends.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ section, fence, file string }{
		{"TypeScript", "ts", tsExample},
		{"Python", "python", pyExample},
	} {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(string(src), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		_, body, ok := strings.Cut(string(doc), "\n## "+c.section+"\n")
		if !ok {
			t.Fatalf("docs/backends.md has no section %q", c.section)
		}
		body, _, _ = strings.Cut(body, "\n## ")
		blocks := regexp.MustCompile("(?s)\n```"+c.fence+"\n(.*?)\n```\n").FindAllStringSubmatch(body, -1)
		if len(blocks) == 0 {
			t.Errorf("docs/backends.md, %s: no %s code block", c.section, c.fence)
		}
		for _, b := range blocks {
			for _, l := range strings.Split(b[1], "\n") {
				if l = strings.TrimSpace(l); l != "" && !lines[l] {
					t.Errorf("docs/backends.md, %s: %q is not a line of %s", c.section, l, c.file)
				}
			}
		}
	}
}
