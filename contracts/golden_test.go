package contracts

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The golden files (testdata/golden) hold one fully populated value of
// each shape a run writes and another release reads (docs/versioning.md,
// "Data"): the contract (workflow input 1), the State (Query "state", and
// in the carry), the Carry (workflow input 2 of a run continued as new)
// and the Outcome (the workflow's result). They are append-only: a field
// added to one of these types adds its key (with a value that is not its
// zero value) to the file; nothing there is ever changed or removed,
// since a release that wrote it may still be running.
var goldens = []struct {
	file string
	typ  reflect.Type
	// decode is how the workflow (or a client) reads the shape.
	decode func([]byte) (any, error)
}{
	{"contract.json", reflect.TypeFor[Delegation](), func(b []byte) (any, error) {
		d, err := DecodeDelegationStrict(b)
		if err == nil {
			err = d.Validate(d.Deadline.Add(-time.Hour)) // a contract that runs
		}
		return d, err
	}},
	{"state.json", reflect.TypeFor[State](), strictJSON[State]},
	{"carry.json", reflect.TypeFor[Carry](), strictJSON[Carry]},
	{"outcome.json", reflect.TypeFor[Outcome](), strictJSON[Outcome]},
}

const appendOnly = "the golden files are append-only (docs/versioning.md, \"Data\"): never rename, remove or retype what is there; a field is added, optional, with its key added to the file"

// strictJSON decodes one T, refusing a key T has no field for (so that a
// golden key whose field was renamed or removed fails) and trailing data.
func strictJSON[T any](b []byte) (any, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the object")
	}
	return v, nil
}

func readGolden(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenShapesDecodeAndReencode: today's code reads each golden file
// and writes it back as the same JSON. A field renamed, removed or given
// another type, or a default that now writes a key the golden lacks,
// fails here: a run written by the release before (or after) would be
// misread.
func TestGoldenShapesDecodeAndReencode(t *testing.T) {
	for _, g := range goldens {
		for _, p := range roundTrip(readGolden(t, g.file), g.decode) {
			t.Errorf("testdata/golden/%s: %s; %s", g.file, p, appendOnly)
		}
	}
}

// rollingNextMissing are the fields the rollingnext build ("release N+1"
// of e2e/rolling_test.go) adds: the golden files, written for the
// release, do not hold them, and the coverage check must say so.
var rollingNextMissing = map[string][]string{
	"state.json": {"rolling_next"},
	"carry.json": {"rolling_next", "state.rolling_next"},
}

// TestGoldenShapesCoverEveryField: every field of each Go type (walked by
// reflection over its json tags, nested types, list elements and pointers
// included) is in its golden file, so that a field added without its key
// in the golden fails, and the round trip above guards it from then on.
// In the rollingnext build the fields it adds must be found missing.
func TestGoldenShapesCoverEveryField(t *testing.T) {
	for _, g := range goldens {
		missing := uncovered(g.typ, readGolden(t, g.file))
		var want []string
		if rollingNext {
			want = rollingNextMissing[g.file]
		}
		if !slices.Equal(missing, want) {
			t.Errorf("testdata/golden/%s does not hold %v of %s: add each with a value that is not its zero value; %s",
				g.file, missing, g.typ, appendOnly)
			if rollingNext {
				t.Errorf("(the rollingnext build adds %v: those, and only those, are missing)", want)
			}
		}
	}
}

// TestGoldenChecksCatch shows each check failing on a made-up shape
// change: a field renamed, removed, retyped, made to write a default, or
// added (at the top, and inside a list element) without its golden key.
func TestGoldenChecksCatch(t *testing.T) {
	type item struct {
		ID string `json:"id"`
	}
	type v1 struct {
		Name  string    `json:"name"`
		Count int       `json:"count,omitempty"`
		At    time.Time `json:"at"`
		Items []item    `json:"items"`
		Next  *item     `json:"next,omitempty"`
	}
	golden := []byte(`{"name":"a","count":2,"at":"2030-01-01T00:00:00Z","items":[{"id":"x"}],"next":{"id":"y"}}`)
	if p := roundTrip(golden, strictJSON[v1]); p != nil {
		t.Fatalf("the unchanged shape fails the round trip: %v", p)
	}
	if m := uncovered(reflect.TypeFor[v1](), golden); m != nil {
		t.Fatalf("the unchanged shape misses %v", m)
	}

	type renamed struct {
		Title string    `json:"title"`
		Count int       `json:"count,omitempty"`
		At    time.Time `json:"at"`
		Items []item    `json:"items"`
		Next  *item     `json:"next,omitempty"`
	}
	type removed struct {
		Name  string    `json:"name"`
		At    time.Time `json:"at"`
		Items []item    `json:"items"`
		Next  *item     `json:"next,omitempty"`
	}
	type retyped struct {
		Name  string    `json:"name"`
		Count string    `json:"count,omitempty"`
		At    time.Time `json:"at"`
		Items []item    `json:"items"`
		Next  *item     `json:"next,omitempty"`
	}
	type writesDefault struct {
		v1
		Flag bool `json:"flag"`
	}
	for name, decode := range map[string]func([]byte) (any, error){
		"renamed": strictJSON[renamed], "removed": strictJSON[removed], "retyped": strictJSON[retyped],
		"a new field without omitempty": strictJSON[writesDefault],
	} {
		if p := roundTrip(golden, decode); p == nil {
			t.Errorf("%s: the round trip passed", name)
		}
	}

	type added struct {
		v1
		Extra string `json:"extra,omitempty"`
	}
	type itemAdded struct {
		ID   string `json:"id"`
		Note string `json:"note,omitempty"`
	}
	type addedInItem struct {
		Name  string      `json:"name"`
		Count int         `json:"count,omitempty"`
		At    time.Time   `json:"at"`
		Items []itemAdded `json:"items"`
		Next  *itemAdded  `json:"next,omitempty"`
	}
	if p := roundTrip(golden, strictJSON[added]); p != nil {
		t.Errorf("an optional field added: the round trip fails (%v), but an older golden must still be read", p)
	}
	if m, want := uncovered(reflect.TypeFor[added](), golden), []string{"extra"}; !slices.Equal(m, want) {
		t.Errorf("a field added: missing %v, want %v", m, want)
	}
	if m, want := uncovered(reflect.TypeFor[addedInItem](), golden), []string{"items[].note", "next.note"}; !slices.Equal(m, want) {
		t.Errorf("a field added to a list element and a pointed-to struct: missing %v, want %v", m, want)
	}
	if m := uncovered(reflect.TypeFor[v1](), []byte(`{"name":"a","count":2,"at":"2030-01-01T00:00:00Z","items":[],"next":null}`)); !slices.Equal(m, []string{"items (empty: no element to check)", "next (null)"}) {
		t.Errorf("an empty list and a null: missing %v", m)
	}
}

// roundTrip decodes golden with decode, encodes the value again, and
// returns how the JSON written differs from the golden (compared as JSON
// values, numbers by their text), or why it does not decode.
func roundTrip(golden []byte, decode func([]byte) (any, error)) []string {
	v, err := decode(golden)
	if err != nil {
		return []string{"today's code does not read it: " + err.Error()}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return []string{"today's code does not write it: " + err.Error()}
	}
	var want, got any
	if err := unmarshalNumbers(golden, &want); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	if err := unmarshalNumbers(out, &got); err != nil {
		return []string{"written JSON does not parse: " + err.Error()}
	}
	var diffs []string
	diffJSON("", want, got, &diffs)
	return diffs
}

func unmarshalNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func diffJSON(path string, want, got any, diffs *[]string) {
	at := path
	if at == "" {
		at = "(document)"
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: the golden holds an object, today's code writes %s", at, short(got)))
			return
		}
		for _, k := range sortedKeys(w) {
			if _, ok := g[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s: in the golden, not written by today's code", join(path, k)))
				continue
			}
			diffJSON(join(path, k), w[k], g[k], diffs)
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s: written by today's code (%s), not in the golden", join(path, k), short(g[k])))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: the golden holds %s, today's code writes %s", at, short(want), short(got)))
			return
		}
		for i := range w {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: the golden holds %s, today's code writes %s", at, short(want), short(got)))
		}
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	return CutText(string(b), 80)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// uncovered returns the JSON paths of the fields of t that golden does
// not hold ("items[].note" for a field of a list's elements held by none
// of them), sorted. A value is walked into when its type is a struct
// (through pointers, list elements and map values); time.Time, raw JSON,
// bytes and types with their own JSON or text encoding are leaves.
func uncovered(t reflect.Type, golden []byte) []string {
	var v any
	if err := unmarshalNumbers(golden, &v); err != nil {
		return []string{"(not JSON: " + err.Error() + ")"}
	}
	m := map[string]bool{}
	missingIn(t, v, "", m)
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// missingIn adds to missing the paths under path of the fields of t that
// v lacks.
func missingIn(t reflect.Type, v any, path string, missing map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if leaf(t) {
		return
	}
	if v == nil {
		missing[path+" (null)"] = true
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			missing[path+" (not an object)"] = true
			return
		}
		for _, f := range jsonFields(t) {
			p := join(path, f.name)
			child, ok := obj[f.name]
			if !ok {
				missing[p] = true
				continue
			}
			missingIn(f.typ, child, p, missing)
		}
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok {
			missing[path+" (not a list)"] = true
			return
		}
		elems := make([]any, len(list))
		copy(elems, list)
		missingInAll(t.Elem(), elems, path+"[]", missing)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			missing[path+" (not an object)"] = true
			return
		}
		var elems []any
		for _, k := range sortedKeys(obj) {
			elems = append(elems, obj[k])
		}
		missingInAll(t.Elem(), elems, path+"{}", missing)
	}
}

// missingInAll: a field of the elements is held when one element holds it.
func missingInAll(t reflect.Type, elems []any, path string, missing map[string]bool) {
	if len(elems) == 0 {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if !leaf(t) || t.Kind() == reflect.Struct {
			missing[strings.TrimSuffix(strings.TrimSuffix(path, "[]"), "{}")+" (empty: no element to check)"] = true
		}
		return
	}
	var common map[string]bool
	for _, e := range elems {
		m := map[string]bool{}
		missingIn(t, e, path, m)
		if common == nil {
			common = m
			continue
		}
		for p := range common {
			if !m[p] {
				delete(common, p)
			}
		}
	}
	for p := range common {
		missing[p] = true
	}
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields are the fields encoding/json writes for struct t: exported,
// not tagged "-", named by their tag, those of embedded structs without a
// name promoted.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, jsonFields(ft)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// leaf reports whether values of t are not walked into: not a struct, a
// list, a map (or a pointer to one), or a type with its own encoding
// (time.Time, json.RawMessage) or bytes.
func leaf(t reflect.Type) bool {
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
		t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return false
	case reflect.Slice, reflect.Array:
		return t.Elem().Kind() == reflect.Uint8
	}
	return true
}
