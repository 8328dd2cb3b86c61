package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/a2adelegate/delegate/contracts"
)

// TemplatesFile is the document `delegate mcp --templates FILE` reads:
//
//	{"templates": [{"name": "open_claim", "description": "...",
//	  "agent_card_url": "http://127.0.0.1:9999", "skill": "open-claim",
//	  "purpose": "...", "allowed_outputs": ["claim_opened"],
//	  "deadline_after": "30m", "text": "... {{order_id}} ...",
//	  "parameters": {"type": "object", "properties": {...}},
//	  "answer": "human"}]}
type TemplatesFile struct {
	Templates []Template `json:"templates"`
}

// Template is what a model may start: one MCP tool named Name. Everything
// but the parameters' values is fixed here, by the operator: the agent,
// the skill, the purpose, the outputs, the deadline and who answers the
// agent's questions. docs/mcp.md documents each field.
type Template struct {
	// Name is the tool's name: 1 to 64 of A-Z a-z 0-9 _ - (no
	// "delegation_" prefix: the fixed tools use it).
	Name string `json:"name"`
	// Description is the tool's description, shown to the model.
	Description string `json:"description"`
	// AgentCardURL is the delegation's agent_card_url (http or https).
	AgentCardURL string `json:"agent_card_url"`
	// Skill is the delegation's skill.
	Skill string `json:"skill"`
	// Purpose is the delegation's purpose (shown to operators).
	Purpose string `json:"purpose"`
	// AllowedOutputs is the delegation's allowed_outputs (non-empty).
	AllowedOutputs []string `json:"allowed_outputs"`
	// OutputSchemas is the delegation's output_schemas (optional).
	OutputSchemas map[string]json.RawMessage `json:"output_schemas,omitempty"`
	// DeadlineAfter is a Go duration ("30m", "48h"): the delegation's
	// deadline is the start time plus it; positive, at most
	// contracts.MaxDeadline.
	DeadlineAfter string `json:"deadline_after"`
	// Text is the message text; each {{param}} is replaced by the value of
	// parameter param (a string as it is, any other value as JSON; an
	// absent optional one by nothing). Every placeholder must name a
	// declared parameter.
	Text string `json:"text"`
	// Parameters is a JSON Schema (2020-12) of type object: its
	// properties are the tool's arguments (names of A-Z a-z 0-9 _, not
	// "wait_seconds"); the arguments become the message's data.
	// additionalProperties is false whatever it says.
	Parameters json.RawMessage `json:"parameters"`
	// SendTimeout is the delegation's send_timeout (a Go duration, 1s to
	// an hour; absent: contracts.DefaultSendTimeout), for an agent that
	// does its work inside the send.
	SendTimeout string `json:"send_timeout,omitempty"`
	// Answer says who answers the agent's questions: "human" (through
	// elicitation, or an operator in the UI or CLI) or "model" (the model,
	// through delegation_answer, recorded as "ACTOR (model)").
	Answer string `json:"answer"`
}

// Who answers a template's questions (Template.Answer).
const (
	AnswerHuman = "human"
	AnswerModel = "model"
)

// MaxTemplatesBytes bounds the templates file (1 MiB), read before it is
// decoded.
const MaxTemplatesBytes = 1 << 20

// WaitSecondsParam is the optional argument the adapter adds to every
// template tool: how long, in seconds (0 to MaxWaitSeconds), the start waits
// for the agent before it returns.
const WaitSecondsParam = "wait_seconds"

// MaxWaitSeconds bounds wait_seconds.
const MaxWaitSeconds = 30

// IDPrefix starts the local_workflow_id of every delegation the adapter
// starts: "mcp.TEMPLATE.UUID" (a template name holds no dot), which is
// also a host-like name: the delegation's resource URI is
// "delegation://" + the id.
const IDPrefix = "mcp."

var (
	toolNamePattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	paramNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	// placeholder is {{name}}, spaces allowed inside the braces.
	placeholder = regexp.MustCompile(`\{\{\s*([^{}\s]*)\s*\}\}`)
)

// template is a Template checked and compiled.
type template struct {
	Template
	deadline time.Duration
	// schema is the published input schema (parameters with
	// additionalProperties false and wait_seconds added); compiled checks
	// the arguments against it.
	schema   map[string]any
	compiled *jsonschema.Schema
	params   []string // declared parameter names, sorted
}

// LoadTemplates reads and checks a templates file (at most
// MaxTemplatesBytes). Errors name the template and the field:
// `templates[1] "open_claim": deadline_after: must be a positive duration`.
func LoadTemplates(path string) ([]Template, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTemplatesBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTemplatesBytes {
		return nil, fmt.Errorf("%s: over the %d-byte limit", path, MaxTemplatesBytes)
	}
	ts, err := ParseTemplates(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// ParseTemplates decodes a templates document strictly (an unknown or
// misspelt field is refused, naming it) and checks every template
// (CheckTemplates).
func ParseTemplates(b []byte) ([]Template, error) {
	if len(b) > MaxTemplatesBytes {
		return nil, fmt.Errorf("over the %d-byte limit", MaxTemplatesBytes)
	}
	var tf TemplatesFile
	if err := contracts.DecodeObject(b, &tf); err != nil {
		return nil, hintDeadlineIn(err)
	}
	if _, err := compileTemplates(tf.Templates, time.Now()); err != nil {
		return nil, err
	}
	return tf.Templates, nil
}

// CheckTemplates checks templates as `delegate mcp` does at start: at least
// one; unique names that are not a fixed tool's; every field by its rule;
// the delegation each would start validated (contracts.Delegation.Validate).
func CheckTemplates(ts []Template) error {
	_, err := compileTemplates(ts, time.Now())
	return err
}

// hintDeadlineIn adds to an "unknown field" error about a template's
// "deadline_in" (the contract file's relative deadline,
// contracts.FieldDeadlineIn) the name a template uses: deadline_after.
func hintDeadlineIn(err error) error {
	each := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		each = j.Unwrap()
	}
	changed := false
	for i, e := range each {
		var fe *contracts.FieldError
		if !errors.As(e, &fe) || strings.Contains(fe.Rule, "did you mean") || !strings.HasPrefix(fe.Rule, "unknown field") {
			continue
		}
		if fe.Field[strings.LastIndex(fe.Field, ".")+1:] != contracts.FieldDeadlineIn {
			continue
		}
		each[i] = &contracts.FieldError{Field: fe.Field, Rule: fe.Rule + `; did you mean "deadline_after"? (a template's deadline is relative: a Go duration such as "30m")`}
		changed = true
	}
	if !changed {
		return err
	}
	return errors.Join(each...)
}

func compileTemplates(ts []Template, now time.Time) (map[string]*template, error) {
	if len(ts) == 0 {
		return nil, &contracts.FieldError{Field: "templates", Rule: "at least one template"}
	}
	out := map[string]*template{}
	var errs []error
	for i, t := range ts {
		ct, err := compileTemplate(t, now)
		if err != nil {
			// Each broken rule on its own line, each naming the template.
			each := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				each = j.Unwrap()
			}
			for _, e := range each {
				errs = append(errs, fmt.Errorf("templates[%d] %q: %w", i, contracts.Truncate(t.Name, 80), e))
			}
			continue
		}
		if _, dup := out[t.Name]; dup {
			errs = append(errs, fmt.Errorf("templates[%d] %q: name: a second template of this name", i, t.Name))
			continue
		}
		out[t.Name] = ct
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func compileTemplate(t Template, now time.Time) (*template, error) {
	var errs []error
	bad := func(field, rule string) { errs = append(errs, &contracts.FieldError{Field: field, Rule: rule}) }
	switch {
	case !toolNamePattern.MatchString(t.Name):
		bad("name", "1 to 64 characters of A-Z a-z 0-9 _ - (a tool name every MCP client takes)")
	case strings.HasPrefix(t.Name, "delegation_"):
		bad("name", `must not start with "delegation_" (the fixed tools' prefix)`)
	}
	if strings.TrimSpace(t.Description) == "" {
		bad("description", "required: the model reads it to choose the tool")
	}
	if u, err := url.Parse(t.AgentCardURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("agent_card_url", "must be an http or https URL with a host")
	}
	if len(t.AllowedOutputs) == 0 {
		bad("allowed_outputs", "at least one output kind")
	}
	var deadline time.Duration
	if d, err := time.ParseDuration(t.DeadlineAfter); err != nil || d <= 0 {
		bad("deadline_after", fmt.Sprintf("must be a positive duration such as \"30m\" or \"48h\", got %q", contracts.Truncate(t.DeadlineAfter, 80)))
	} else if d > contracts.MaxDeadline {
		bad("deadline_after", fmt.Sprintf("at most %s", contracts.MaxDeadline))
	} else {
		deadline = d
	}
	if t.SendTimeout != "" {
		if st, err := time.ParseDuration(t.SendTimeout); err != nil || st < time.Second || st > contracts.MaxSendTimeout {
			bad("send_timeout", fmt.Sprintf("must be a Go duration from 1s to %s, got %q", contracts.MaxSendTimeout, contracts.Truncate(t.SendTimeout, 80)))
		}
	}
	switch t.Answer {
	case AnswerHuman, AnswerModel:
	default:
		bad("answer", fmt.Sprintf(`must be "human" or "model", got %q`, contracts.Truncate(t.Answer, 80)))
	}
	ct := &template{Template: t, deadline: deadline}
	if err := ct.compileParameters(); err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(t.Text) == "" {
		bad("text", "required: the message sent to the agent")
	}
	for _, m := range placeholder.FindAllStringSubmatch(t.Text, -1) {
		if !slices.Contains(ct.params, m[1]) {
			bad("text", fmt.Sprintf("placeholder %s names no declared parameter (declared: %s)", m[0], orNone(ct.params)))
		}
	}
	if rest := placeholder.ReplaceAllString(t.Text, ""); strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		bad("text", "a {{ or }} that is not a placeholder {{name}}")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// The delegation it would start, checked as client.Start checks it.
	d := ct.delegation(IDPrefix+t.Name+"."+uuid.Nil.String(), t.Text, nil, now)
	if err := d.Validate(now); err != nil {
		return nil, fmt.Errorf("the delegation it starts does not validate: %w", err)
	}
	return ct, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// compileParameters checks parameters and builds the published input
// schema and its compiled form.
func (t *template) compileParameters() error {
	bad := func(rule string) error { return &contracts.FieldError{Field: "parameters", Rule: rule} }
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return bad(`required: a JSON Schema of type "object" (give {"type": "object", "properties": {}} for none)`)
	}
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
		return bad("must be a JSON object (a JSON Schema)")
	}
	if schema["type"] != "object" {
		return bad(`"type" must be "object"`)
	}
	props := map[string]any{}
	if p, ok := schema["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return bad(`"properties" must be an object`)
		}
	}
	for name := range props {
		if name == WaitSecondsParam {
			return bad(fmt.Sprintf("must not declare %q: the adapter adds it", WaitSecondsParam))
		}
		if !paramNamePattern.MatchString(name) {
			return bad(fmt.Sprintf("property %q: a name is 1 to 64 of A-Z a-z 0-9 _, not starting with a digit", contracts.Truncate(name, 80)))
		}
		t.params = append(t.params, name)
	}
	sort.Strings(t.params)
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, _ := r.(string); !slices.Contains(t.params, s) {
				return bad(fmt.Sprintf("required names %v, which is not a property", r))
			}
		}
	}
	props[WaitSecondsParam] = map[string]any{
		"type": "integer", "minimum": 0, "maximum": MaxWaitSeconds,
		"description": fmt.Sprintf("Optional: wait up to this many seconds (0-%d) for the agent before returning; otherwise the call returns at once and delegation_status follows the delegation.", MaxWaitSeconds),
	}
	schema["properties"] = props
	schema["additionalProperties"] = false
	raw, _ := json.Marshal(schema)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return bad(err.Error())
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const at = "mem:///parameters.json"
	if err := c.AddResource(at, doc); err != nil {
		return bad(err.Error())
	}
	s, err := c.Compile(at)
	if err != nil {
		return bad("not a valid JSON Schema: " + strings.ReplaceAll(err.Error(), at, ""))
	}
	t.schema, t.compiled = schema, s
	return nil
}

// noLoader refuses every $ref outside the schema: nothing is read from
// the network or the file system.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s: a $ref must stay inside the schema", u)
}

// delegation is the contract this template starts with text and data.
func (t *template) delegation(id, text string, data json.RawMessage, now time.Time) contracts.Delegation {
	return contracts.Delegation{
		LocalWorkflowID: id,
		AgentCardURL:    t.AgentCardURL,
		Skill:           t.Skill,
		Purpose:         t.Purpose,
		Message:         contracts.MessageSpec{Text: text, Data: data},
		AllowedOutputs:  t.AllowedOutputs,
		OutputSchemas:   t.OutputSchemas,
		Deadline:        now.Add(t.deadline).UTC().Truncate(time.Second),
		WriteAuthority:  contracts.WriteAuthorityNone,
		SendTimeout:     t.SendTimeout,
	}
}

// render fills the text's placeholders with args: a string as it is, any
// other value as compact JSON, an absent one as nothing.
func (t *template) render(args map[string]json.RawMessage) string {
	return placeholder.ReplaceAllStringFunc(t.Text, func(m string) string {
		v, ok := args[placeholder.FindStringSubmatch(m)[1]]
		if !ok {
			return ""
		}
		return textOf(v)
	})
}

// textOf is what an argument's value puts in the text: a string as it is,
// any other value as compact JSON.
func textOf(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) == nil {
		return buf.String()
	}
	return string(v)
}

// checkText refuses, in the value of each argument a placeholder of the
// text names, a control character (but tab, newline and carriage return)
// and a bidirectional embedding, override or isolate (U+202A to U+202E,
// U+2066 to U+2069): they make what an operator or an agent reads differ
// from what was sent. The refusal names the argument and the character.
func (t *template) checkText(args map[string]json.RawMessage) error {
	for _, m := range placeholder.FindAllStringSubmatch(t.Text, -1) {
		v, ok := args[m[1]]
		if !ok {
			continue
		}
		for _, r := range textOf(v) {
			if (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r') || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
				return fmt.Errorf("argument %q: holds U+%04X, a control or bidirectional formatting character; the text it fills takes none (tab, newline and carriage return are fine)", m[1], r)
			}
		}
	}
	return nil
}

// newID is a fresh local_workflow_id for a delegation of template name:
// "mcp.NAME.UUID".
func newID(name string) string { return IDPrefix + name + "." + uuid.NewString() }

// templateOf returns the template name an adapter-made id carries, or "".
func templateOf(id string) string {
	rest, ok := strings.CutPrefix(id, IDPrefix)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return name
}
