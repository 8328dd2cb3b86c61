package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// checkKeys walks a JSON document against the struct type t and reports
// every key that encoding/json would accept but a strict contract must
// not: a key that is not a field name exactly (encoding/json matches names
// case-insensitively), and a key given twice. Paths name nested fields
// ("message.attachments"). Map-typed fields (output_schemas) and raw JSON
// fields are not walked. Errors are *FieldError, joined.
func checkKeys(data []byte, t reflect.Type) []error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var errs []error
	walkValue(dec, t, "", &errs)
	return errs
}

// DuplicateKeys returns a *FieldError (rule "given twice") for each key
// given twice in one object anywhere in the JSON document data, named by
// its path ("items.qty", "list[2].id"; keys compared after unescaping, so
// "\u0061" and "a" are the same key), or nil. encoding/json keeps the last
// of two values silently, while other parsers keep the first: a document
// checked by one and acted on by another must have none. data should be
// valid JSON (check it first): the walk stops at the first syntax error.
func DuplicateKeys(data []byte) []error { return checkKeys(data, nil) }

func walkValue(dec *json.Decoder, t reflect.Type, path string, errs *[]error) {
	tok, err := dec.Token()
	if err != nil {
		return
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return
	}
	switch d {
	case '{':
		fields := map[string]reflect.Type{}
		known := t != nil && t.Kind() == reflect.Struct && t != reflect.TypeFor[json.RawMessage]()
		if known {
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name != "" && name != "-" {
					fields[name] = f.Type
				}
			}
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return
			}
			key, _ := kt.(string)
			p := key
			if path != "" {
				p = path + "." + key
			}
			if seen[key] {
				*errs = append(*errs, &FieldError{Field: p, Rule: "given twice"})
			}
			seen[key] = true
			var child reflect.Type
			if known {
				ft, ok := fields[key]
				if !ok {
					rule := "unknown field (names are case-sensitive)"
					if near := nearest(key, fields); near != "" {
						rule += fmt.Sprintf("; did you mean %q?", near)
					}
					*errs = append(*errs, &FieldError{Field: p, Rule: rule})
				}
				child = ft
			}
			walkValue(dec, child, p, errs)
		}
		_, _ = dec.Token() // '}'
	case '[':
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice && t != reflect.TypeFor[json.RawMessage]() {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			walkValue(dec, elem, fmt.Sprintf("%s[%d]", path, i), errs)
		}
		_, _ = dec.Token() // ']'
	}
}

// nearest returns the known field name closest to key (case-insensitive
// edit distance at most 2, or a third of the name), or "".
func nearest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", -1
	for name := range fields {
		d := editDistance(strings.ToLower(key), strings.ToLower(name))
		if d > max(2, len(name)/3) {
			continue
		}
		if bestD < 0 || d < bestD || (d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30 // not a typo of a field name
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
