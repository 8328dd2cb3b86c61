package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"
	sdkclient "go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/mcp"
)

// The Agent Skill for the tools of `delegate mcp` (docs/mcp.md, "The
// Agent Skill"): skills/delegate, in the agentskills.io format. These
// tests keep it true to what the server serves: every tool, argument,
// field, state and status it writes in backticks is a real one, every
// tool call it shows passes the tool's input schema, every `delegate ...`
// command line names a real command and real flags, the fixed tools'
// table lists each tool's arguments exactly, and every A2AState and
// outcome status is explained. `make test-interop` also runs the format's
// reference validator (skills-ref, interop/skills).
const skillDir = "../../skills/delegate"

// servedTools lists the tools `delegate mcp` serves with the example
// templates, over an in-memory MCP session (Temporal is never dialled).
func servedTools(t *testing.T) map[string]*sdk.Tool {
	t.Helper()
	ts, err := mcp.LoadTemplates("../../mcp/examples/templates.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sdkclient.NewLazyClient(sdkclient.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := mcp.New(mcp.Options{Client: c, Templates: ts, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "skill-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// toolSchema is a tool's input schema as JSON.
type toolSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

func schemaOf(t *testing.T, tl *sdk.Tool) (toolSchema, []byte) {
	t.Helper()
	raw, err := json.Marshal(tl.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s toolSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("tool %s: input schema %s: %v", tl.Name, raw, err)
	}
	return s, raw
}

// skillFile is one Markdown file of the skill.
type skillFile struct {
	name string // relative to skillDir
	text string // without the front matter for SKILL.md
}

func readSkill(t *testing.T) (front map[string]any, files []skillFile) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(skillDir, "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if !strings.HasPrefix(text, "---\n") {
		t.Fatal("SKILL.md must start with YAML front matter (---)")
	}
	end := strings.Index(text[4:], "\n---\n")
	if end < 0 {
		t.Fatal("SKILL.md: front matter not closed with ---")
	}
	fm, body := text[4:4+end], text[4+end+5:]
	if strings.Contains(fm, "---") {
		// The reference parser splits the file on the first three "---".
		t.Fatal(`SKILL.md: the front matter holds "---"`)
	}
	if err := yaml.Unmarshal([]byte(fm), &front); err != nil {
		t.Fatalf("SKILL.md front matter: %v", err)
	}
	files = append(files, skillFile{"SKILL.md", body})
	refs, err := filepath.Glob(filepath.Join(skillDir, "references", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range refs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, skillFile{filepath.Join("references", filepath.Base(p)), string(b)})
	}
	return front, files
}

// TestSkillFormat: the agentskills.io rules, as the reference validator
// (skills-ref) checks them, and the body's budget.
func TestSkillFormat(t *testing.T) {
	front, files := readSkill(t)
	allowed := []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
	for k := range front {
		if !slices.Contains(allowed, k) {
			t.Errorf("front matter field %q: not one of %s", k, strings.Join(allowed, ", "))
		}
	}
	name, _ := front["name"].(string)
	if name != filepath.Base(skillDir) {
		t.Errorf("name %q: must be the folder's name, %q", name, filepath.Base(skillDir))
	}
	if !regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`).MatchString(name) || len(name) > 64 {
		t.Errorf("name %q: 1 to 64 lowercase letters, digits and single hyphens, not at either end", name)
	}
	desc, _ := front["description"].(string)
	if strings.TrimSpace(desc) == "" || len([]rune(desc)) > 1024 {
		t.Errorf("description: 1 to 1024 characters, got %d", len([]rune(desc)))
	}
	for _, w := range []string{"Use when", mcp.ToolStatus, "input-required"} {
		if !strings.Contains(desc, w) {
			t.Errorf("description does not say %q: it alone decides when a host loads the skill", w)
		}
	}
	if c, ok := front["compatibility"]; ok {
		if s, _ := c.(string); s == "" || len([]rune(s)) > 500 {
			t.Errorf("compatibility: a string of 1 to 500 characters")
		}
	}
	// Under 5,000 tokens: a token is about 4 characters of English; 3 is
	// a bound with room for code and names.
	if n := len(files[0].text) / 3; n >= 5000 {
		t.Errorf("SKILL.md body: about %d tokens, over the 5,000 the format recommends; move detail into references/", n)
	}
	// Relative links resolve.
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, f := range files {
		for _, m := range link.FindAllStringSubmatch(f.text, -1) {
			p := filepath.Join(skillDir, filepath.Dir(f.name), m[1])
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s, which does not exist", f.name, m[1])
			}
		}
	}
}

// codeSpans returns the backticked spans of a Markdown text (a span may
// go over a line end, read as a space) and each line of its fenced blocks.
func codeSpans(t *testing.T, name, text string) []string {
	t.Helper()
	var prose []string
	var spans []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			prose = append(prose, "")
			continue
		}
		if fenced {
			if s := strings.TrimSpace(l); s != "" {
				spans = append(spans, s)
			}
			prose = append(prose, "")
			continue
		}
		prose = append(prose, l)
	}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(strings.Join(prose, "\n"), -1) {
		s := m[1]
		if strings.Contains(s, "\n\n") || strings.Contains(s, "\n|") {
			t.Errorf("%s: unbalanced backticks near %q", name, contracts.Truncate(s, 80))
			continue
		}
		spans = append(spans, strings.Join(strings.Fields(s), " "))
	}
	return spans
}

// knownNames is every name the skill may write in backticks on its own:
// the served tools and every key of their input schemas, the fields of
// the tools' structuredContent and of a template, the A2AStates, the
// outcome statuses and error categories (read from package contracts'
// source), the values of a template's answer, a question's source and an
// output's authority, and the MCP fields of a tool and a tool result.
func knownNames(t *testing.T, tools map[string]*sdk.Tool) map[string]string {
	t.Helper()
	known := map[string]string{}
	add := func(what string, names ...string) {
		for _, n := range names {
			if _, ok := known[n]; !ok {
				known[n] = what
			}
		}
	}
	var keys func(v any)
	keys = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				add("a key of a served input schema", k)
				keys(e)
			}
		case []any:
			for _, e := range v {
				keys(e)
			}
		}
	}
	for name, tl := range tools {
		add("a served tool", name)
		_, raw := schemaOf(t, tl)
		var v any
		_ = json.Unmarshal(raw, &v)
		keys(v)
	}
	seen := map[reflect.Type]bool{}
	var fields func(what string, ty reflect.Type, deep bool)
	fields = func(what string, ty reflect.Type, deep bool) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" && n != "-" {
				add(what, n)
			}
			if deep {
				fields(what, f.Type, deep)
			}
		}
	}
	fields("a field of a tool's structuredContent", reflect.TypeFor[mcp.Result](), true)
	fields("a field of a tool's structuredContent", reflect.TypeFor[mcp.ListResult](), true)
	fields("a field of a template", reflect.TypeFor[mcp.Template](), false)
	fields("an MCP field", reflect.TypeFor[sdk.Tool](), false)
	fields("an MCP field", reflect.TypeFor[sdk.ToolAnnotations](), false)
	fields("an MCP field", reflect.TypeFor[sdk.CallToolResult](), false)
	add("an A2AState", contracts.A2AStates...)
	add("an outcome status", outcomeConsts(t, "Status")...)
	add("an error category", outcomeConsts(t, "Category")...)
	add("a template's answer", mcp.AnswerHuman, mcp.AnswerModel)
	add("a question's source", mcp.SourceRemoteAgent)
	add("an output's authority", contracts.WriteAuthorityNone)
	return known
}

// outcomeConsts reads the string constants of type typ (Status,
// Category) from package contracts' source: every one there is, also
// those added after this test.
func outcomeConsts(t *testing.T, typ string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../../contracts/outcome.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for _, v := range vs.Values {
				if bl, ok := v.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					s, _ := strconv.Unquote(bl.Value)
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("contracts/outcome.go: no constants of type %s", typ)
	}
	return out
}

var (
	nameSpan = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	callSpan = regexp.MustCompile(`^([A-Za-z0-9_-]+) (\{.*\})$`)
)

// TestSkillNamesAreServed: every span in backticks of SKILL.md and its
// references is a real name, a tool call the tool's input schema accepts,
// a delegate command line with its real flags, or a delegation's id or
// resource URI in the adapter's form; anything else is refused, so that a
// renamed tool, argument, field or state cannot stay in the skill.
func TestSkillNamesAreServed(t *testing.T) {
	tools := servedTools(t)
	known := knownNames(t, tools)
	root := newRoot()
	_, files := readSkill(t)
	checked := 0
	for _, f := range files {
		for _, s := range codeSpans(t, f.name, f.text) {
			checked++
			if err := checkSpan(t, s, tools, known, root); err != nil {
				t.Errorf("%s: `%s`: %v", f.name, s, err)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d spans in backticks read: is the skill there?", checked)
	}
}

func checkSpan(t *testing.T, s string, tools map[string]*sdk.Tool, known map[string]string, root *cobra.Command) error {
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		s = u
	}
	switch {
	case strings.HasSuffix(s, "_"):
		// A prefix: the fixed tools' (which no template's name may have).
		for _, f := range []string{mcp.ToolStatus, mcp.ToolList, mcp.ToolAnswer, mcp.ToolCancel} {
			if !strings.HasPrefix(f, s) {
				return fmt.Errorf("not the prefix of every fixed tool (%s is not %s...)", f, s)
			}
		}
		return nil
	case nameSpan.MatchString(s):
		if _, ok := known[s]; !ok {
			return fmt.Errorf("not a name delegate mcp serves (no tool, argument, field, state or status has it)")
		}
		return nil
	case callSpan.MatchString(s):
		m := callSpan.FindStringSubmatch(s)
		return checkCall(t, tools, m[1], m[2])
	case s == "delegate" || strings.HasPrefix(s, "delegate "):
		return checkCommand(root, strings.Fields(s)[1:])
	case strings.HasPrefix(s, mcp.ResourceScheme):
		if rest := strings.TrimPrefix(s, mcp.ResourceScheme); rest != "ID" && !contracts.ValidWorkflowID(rest) {
			return fmt.Errorf("a resource URI is %sID", mcp.ResourceScheme)
		}
		return nil
	case s == mcp.IDPrefix+"TEMPLATE.UUID":
		return nil
	}
	return fmt.Errorf("neither a name, a tool call (`tool {JSON arguments}`), a delegate command line nor a delegation's id or URI: write it without backticks, or teach this test what it is")
}

// checkCall: the tool is served and the arguments pass its input schema.
func checkCall(t *testing.T, tools map[string]*sdk.Tool, name, args string) error {
	tl := tools[name]
	if tl == nil {
		return fmt.Errorf("tool %q is not served", name)
	}
	_, raw := schemaOf(t, tl)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("tool.json")
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("the input schema of %s refuses these arguments: %v", name, err)
	}
	return nil
}

// checkCommand: delegate's subcommands named, then each --flag one of
// the command's own or its inherited ones.
func checkCommand(root *cobra.Command, args []string) error {
	cmd := root
	i := 0
	for ; i < len(args) && !strings.HasPrefix(args[i], "-"); i++ {
		var next *cobra.Command
		for _, c := range cmd.Commands() {
			if c.Name() == args[i] {
				next = c
			}
		}
		if next == nil {
			if strings.ToUpper(args[i]) == args[i] {
				break // a placeholder: ID, NAME
			}
			return fmt.Errorf("%q: no such command under %q", args[i], cmd.CommandPath())
		}
		cmd = next
	}
	for _, a := range args[i:] {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if cmd.Flags().Lookup(n) == nil && cmd.InheritedFlags().Lookup(n) == nil {
			return fmt.Errorf("%q has no flag --%s", cmd.CommandPath(), n)
		}
	}
	return nil
}

// TestSkillToolTable: references/tools.md has one row per fixed tool
// whose arguments are the tool's, exactly, "?" after each optional one;
// SKILL.md names every fixed tool.
func TestSkillToolTable(t *testing.T) {
	tools := servedTools(t)
	_, files := readSkill(t)
	var skill, table string
	for _, f := range files {
		switch f.name {
		case "SKILL.md":
			skill = f.text
		case filepath.Join("references", "tools.md"):
			table = f.text
		}
	}
	if table == "" {
		t.Fatal("references/tools.md is missing")
	}
	fixed := []string{mcp.ToolStatus, mcp.ToolList, mcp.ToolAnswer, mcp.ToolCancel}
	for name := range tools {
		if strings.HasPrefix(name, "delegation_") && !slices.Contains(fixed, name) {
			t.Errorf("tool %s is served but this test does not know it: add it to the skill and here", name)
		}
	}
	arg := regexp.MustCompile("`([^`]+)`(\\?)?")
	rows := map[string]bool{}
	for _, l := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		if len(cells) < 3 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if !slices.Contains(fixed, name) {
			continue
		}
		rows[name] = true
		s, _ := schemaOf(t, tools[name])
		var got, want []string
		for _, m := range arg.FindAllStringSubmatch(cells[1], -1) {
			got = append(got, m[1]+m[2])
		}
		for p := range s.Properties {
			if slices.Contains(s.Required, p) {
				want = append(want, p)
			} else {
				want = append(want, p+"?")
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("references/tools.md: %s's arguments are %v; the tool takes %v (? marks an optional one)", name, got, want)
		}
	}
	for _, name := range fixed {
		if !rows[name] {
			t.Errorf("references/tools.md has no row for %s", name)
		}
		if !strings.Contains(skill, "`"+name) {
			t.Errorf("SKILL.md does not name %s", name)
		}
	}
}

// TestSkillStatesAndLimits: references/states.md explains every A2AState
// and every outcome status (a row each), and the numbers the skill gives
// are the server's.
func TestSkillStatesAndLimits(t *testing.T) {
	_, files := readSkill(t)
	var all, states string
	for _, f := range files {
		all += f.text + "\n"
		if f.name == filepath.Join("references", "states.md") {
			states = f.text
		}
	}
	if states == "" {
		t.Fatal("references/states.md is missing")
	}
	row := func(v string) bool { return strings.Contains(states, "\n| `"+v+"` |") }
	for _, s := range contracts.A2AStates {
		if !row(s) {
			t.Errorf("references/states.md has no row for a2a_state %q", s)
		}
	}
	for _, s := range outcomeConsts(t, "Status") {
		if !row(s) {
			t.Errorf("references/states.md has no row for outcome status %q", s)
		}
	}
	for _, w := range []string{
		fmt.Sprintf("0 to %d", mcp.MaxWaitSeconds),
		fmt.Sprintf("`wait_seconds` %d", mcp.MaxWaitSeconds),
		fmt.Sprintf("At most %d of your calls wait at once", mcp.MaxWaitingPerActor),
		fmt.Sprintf("%g calls a second on average, bursts of %d", float64(mcp.DefaultRate), mcp.DefaultBurst),
		fmt.Sprintf("at most %d characters", contracts.MaxCancelReason-300),
		fmt.Sprintf("%d KiB of arguments per call, %d KiB per answer", mcp.MaxArgumentBytes>>10, contracts.MaxAnswerBytes>>10),
		fmt.Sprintf("over %d KiB comes summarised", mcp.MaxOutputBytes>>10),
	} {
		if !strings.Contains(strings.Join(strings.Fields(all), " "), w) {
			t.Errorf("the skill does not say %q (the server's number)", w)
		}
	}
}
