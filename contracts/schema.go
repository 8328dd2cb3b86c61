package contracts

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// ResourceRefKeyword marks, in an output schema, a string that names a
// local resource; its value must be one of the contract's resource_scope.
const ResourceRefKeyword = "x-resource-ref"

type compiledSchema struct{ s *jsonschema.Schema }

const schemaURL = "mem:///output-schema.json"

// compileSchema compiles one output schema (JSON Schema 2020-12 by default,
// santhosh-tekuri/jsonschema/v6) with the x-resource-ref vocabulary bound to
// scope. Nothing is loaded from the network or the file system: a $ref must
// stay inside the schema.
func compileSchema(raw []byte, scope []string) (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, isBool := doc.(bool); !isBool {
			return nil, errors.New("a schema must be an object or a boolean")
		}
	}
	if err := schemaBudget(raw, doc); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.RegisterVocabulary(resourceRefVocab(scope))
	c.AssertVocabs()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", strings.ReplaceAll(err.Error(), schemaURL, ""))
	}
	// A reference cycle shows only when a value is validated: try a few.
	for _, probe := range []any{nil, map[string]any{}, []any{}, "", 0.0} {
		var ve *jsonschema.ValidationError
		err := s.Validate(probe)
		if err != nil && (!errors.As(err, &ve) || hasRefCycle(ve)) {
			return nil, fmt.Errorf("not a usable JSON Schema: %s", strings.ReplaceAll(err.Error(), schemaURL, ""))
		}
	}
	return &compiledSchema{s: s}, nil
}

// Bounds on an output schema, so that validating a remote artifact cannot
// cost without limit (nested anyOf/allOf over $ref grow exponentially).
const (
	maxSchemaBytes        = 64 << 10
	maxSchemaRefs         = 16
	maxSchemaCombinators  = 64
	maxSchemaNestingDepth = 32
)

func schemaBudget(raw []byte, doc any) error {
	if len(raw) > maxSchemaBytes {
		return fmt.Errorf("at most %d bytes", maxSchemaBytes)
	}
	refs, combinators := 0, 0
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if depth > maxSchemaNestingDepth {
			return fmt.Errorf("nested deeper than %d", maxSchemaNestingDepth)
		}
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				switch k {
				case "$ref", "$dynamicRef":
					refs++
				case "anyOf", "allOf", "oneOf", "not", "if":
					combinators++
				}
				if err := walk(x, depth+1); err != nil {
					return err
				}
			}
		case []any:
			for _, x := range t {
				if err := walk(x, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(doc, 0); err != nil {
		return err
	}
	if refs > maxSchemaRefs {
		return fmt.Errorf("at most %d $ref (got %d)", maxSchemaRefs, refs)
	}
	if combinators > maxSchemaCombinators {
		return fmt.Errorf("at most %d anyOf/allOf/oneOf/not/if (got %d)", maxSchemaCombinators, combinators)
	}
	return nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references are not loaded (%s): keep $ref inside the schema", url)
}

// validate returns "" or a rejection reason naming the JSON pointer of
// every failing value, sorted so that the reason is deterministic.
func (cs *compiledSchema) validate(data []byte) string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Sprintf("%s: data is not JSON: %v", ReasonSchemaViolation, err)
	}
	err = cs.s.Validate(inst)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Sprintf("%s: %v", ReasonSchemaViolation, err)
	}
	var leaves []string
	scopeBroken := false
	p := message.NewPrinter(message.MatchLanguage("en"))
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if _, ok := e.ErrorKind.(*outOfScope); ok {
				scopeBroken = true
			}
			leaves = append(leaves, pointer(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(p))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(leaves)
	leaves = slices.Compact(leaves)
	reason := ReasonSchemaViolation
	if scopeBroken {
		reason = ReasonResourceOutOfScope
	}
	return reason + ": " + strings.Join(leaves, "; ")
}

func hasRefCycle(e *jsonschema.ValidationError) bool {
	if _, ok := e.ErrorKind.(*kind.RefCycle); ok {
		return true
	}
	for _, c := range e.Causes {
		if hasRefCycle(c) {
			return true
		}
	}
	return false
}

// pointer renders an instance location as a JSON Pointer (RFC 6901).
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// resourceRefVocab is the vocabulary of the "x-resource-ref" keyword: with
// value true, the instance, when a string, must be in scope.
func resourceRefVocab(scope []string) *jsonschema.Vocabulary {
	return &jsonschema.Vocabulary{
		URL:    "https://a2adelegate.github.io/vocab/resource-ref",
		Schema: nil,
		Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			v, ok := obj[ResourceRefKeyword]
			if !ok {
				return nil, nil
			}
			b, isBool := v.(bool)
			if !isBool {
				return nil, fmt.Errorf("%s must be a boolean", ResourceRefKeyword)
			}
			if !b {
				return nil, nil
			}
			return &resourceRef{scope: scope}, nil
		},
	}
}

type resourceRef struct{ scope []string }

func (r *resourceRef) Validate(ctx *jsonschema.ValidatorContext, v any) {
	s, ok := v.(string)
	if !ok {
		return
	}
	if !slices.Contains(r.scope, s) {
		ctx.AddError(&outOfScope{value: s, scope: r.scope})
	}
}

type outOfScope struct {
	value string
	scope []string
}

func (*outOfScope) KeywordPath() []string { return []string{ResourceRefKeyword} }

func (e *outOfScope) LocalizedString(*message.Printer) string {
	return fmt.Sprintf("%q is not in resource_scope %v", e.value, e.scope)
}
