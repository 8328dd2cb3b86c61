package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// FieldDeadlineIn is the contract file's relative deadline: a Go duration
// ("1h", "90m", "72h"; time.ParseDuration) that the CLI and package client
// resolve to an absolute deadline (now + the duration, cut to the second)
// before the start. It never reaches the workflow: the stored contract
// (workflow input, history) always holds "deadline", and the workflow
// refuses a start that carries "deadline_in" (DecodeDelegationStrict).
const FieldDeadlineIn = "deadline_in"

// refuseDeadlineIn is the error of a contract that reaches the workflow (or
// DecodeDelegationStrict) with "deadline_in" still in it.
func refuseDeadlineIn(data []byte) error {
	ms, _ := topMembers(data)
	for _, m := range ms {
		if strings.EqualFold(m.key, FieldDeadlineIn) {
			return &FieldError{Field: m.key, Rule: `a relative deadline is resolved by the CLI or package client before the start (contracts.ResolveDeadline: now + the duration); a backend that starts the workflow itself must send "deadline", an absolute RFC 3339 time`}
		}
	}
	return nil
}

// ResolveDeadline returns the contract document data with a relative
// deadline made absolute: when the top-level object has "deadline_in" (a
// Go duration string, more than 0 and at most MaxDeadline), that member is
// replaced by "deadline": now + the duration (RFC 3339, UTC, cut to the
// second); everything else in data is kept byte for byte (so an error's
// line and column still point into the file). A document without
// "deadline_in" is returned unchanged, as is one that is not a JSON object
// (DecodeDelegation says what is wrong with it).
//
// Errors are *FieldError: "deadline_in" given with "deadline" (exactly one
// may be given), given twice, not a string, not a Go duration, not
// positive, or more than MaxDeadline (366 days).
func ResolveDeadline(data []byte, now time.Time) ([]byte, error) {
	return resolveDeadline(data, now, 0)
}

// ResolveDeadlineIn is ResolveDeadline with the relative deadline given by
// the caller (`delegate start --deadline-in`): in overrides the document's
// "deadline" or "deadline_in", whichever it has (or neither): the result
// has "deadline": now + in. in must be more than 0 and at most
// MaxDeadline; a document with both fields is refused all the same.
// Errors are *FieldError: field "deadline_in" for in, field "deadline,
// deadline_in" for a document with both.
func ResolveDeadlineIn(data []byte, now time.Time, in time.Duration) ([]byte, error) {
	if err := checkDeadlineIn(in, in.String()); err != nil {
		return nil, err
	}
	return resolveDeadline(data, now, in)
}

// DeadlineAfter is now + in, as the resolved "deadline" holds it (UTC,
// cut to the second), after the rules of "deadline_in": in must be
// more than 0 and at most MaxDeadline. Errors are *FieldError (field
// "deadline_in").
func DeadlineAfter(now time.Time, in time.Duration) (time.Time, error) {
	if err := checkDeadlineIn(in, in.String()); err != nil {
		return time.Time{}, err
	}
	return deadlineAfter(now, in), nil
}

// deadlineAfter is now + in in UTC, cut to the second when that stays
// after now.
func deadlineAfter(now time.Time, in time.Duration) time.Time {
	t := now.Add(in).UTC()
	if r := t.Truncate(time.Second); r.After(now) {
		return r
	}
	return t
}

// checkDeadlineIn refuses a relative deadline the workflow would refuse
// (given is how the caller wrote it).
func checkDeadlineIn(in time.Duration, given string) error {
	switch {
	case in <= 0:
		return &FieldError{Field: FieldDeadlineIn, Rule: fmt.Sprintf("%q must be more than 0 (a Go duration such as \"1h\" or \"72h\")", given)}
	case in > MaxDeadline:
		return &FieldError{Field: FieldDeadlineIn, Rule: fmt.Sprintf("%q is more than %d days (%s): a deadline is at most that far ahead", given, int(MaxDeadline.Hours()/24), MaxDeadline)}
	}
	return nil
}

// member is one member of a JSON object: its key and the byte range
// [start, end) of `"key": value` in the document.
type member struct {
	key        string
	value      json.RawMessage
	start, end int
}

// topMembers lists the members of the JSON object in data (leading space
// and a byte order mark allowed), or ok false when data is not one.
func topMembers(data []byte) (ms []member, ok bool) {
	skip := func(i int, set string) int {
		for i < len(data) && strings.IndexByte(set, data[i]) >= 0 {
			i++
		}
		return i
	}
	// encoding/json does not take a byte order mark; strictDecode does.
	base := 0
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		base = 3
	}
	dec := json.NewDecoder(bytes.NewReader(data[base:]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		at := skip(base+int(dec.InputOffset()), " \t\r\n,")
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{key: key, value: v, start: at, end: base + int(dec.InputOffset())})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return ms, true
}

// resolveDeadline is ResolveDeadline (override 0) and ResolveDeadlineIn.
func resolveDeadline(data []byte, now time.Time, override time.Duration) ([]byte, error) {
	if len(data) > MaxContractBytes {
		return data, nil // DecodeDelegationStrict refuses it
	}
	ms, ok := topMembers(data)
	if !ok {
		return data, nil
	}
	var rel, abs []member
	for _, m := range ms {
		switch m.key {
		case FieldDeadlineIn:
			rel = append(rel, m)
		case "deadline":
			abs = append(abs, m)
		}
	}
	switch {
	case len(rel) > 1:
		return nil, &FieldError{Field: FieldDeadlineIn, Rule: "given twice"}
	case len(rel) == 1 && len(abs) > 0:
		return nil, &FieldError{Field: "deadline, deadline_in", Rule: `both given: give exactly one ("deadline": an RFC 3339 time; "deadline_in": a Go duration such as "1h", resolved when the delegation starts)`}
	case len(rel) == 0 && override == 0:
		return data, nil
	}
	in := override
	if override == 0 {
		var s string
		if err := json.Unmarshal(rel[0].value, &s); err != nil {
			return nil, &FieldError{Field: FieldDeadlineIn, Rule: "wrong type: want string (a Go duration such as \"1h\")"}
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, &FieldError{Field: FieldDeadlineIn, Rule: fmt.Sprintf("%q is not a Go duration (such as \"1h\", \"90m\" or \"72h\"; units ns, us, ms, s, m, h)", CutText(s, 40))}
		}
		if err := checkDeadlineIn(d, s); err != nil {
			return nil, err
		}
		in = d
	}
	resolved := fmt.Appendf(nil, `"deadline": %q`, deadlineAfter(now, in).Format(time.RFC3339Nano))
	// Replace the member in place (each, when "deadline" is given twice:
	// strict decoding refuses that); with neither, add one after the
	// opening brace.
	if len(rel)+len(abs) == 0 {
		i := bytes.IndexByte(data, '{') + 1
		sep := []byte(", ")
		if len(ms) == 0 {
			sep = nil
		}
		return bytes.Join([][]byte{data[:i], resolved, sep, data[i:]}, nil), nil
	}
	out := make([]byte, 0, len(data)+len(resolved))
	last := 0
	for _, m := range ms {
		if m.key == FieldDeadlineIn || m.key == "deadline" {
			out = append(out, data[last:m.start]...)
			out = append(out, resolved...)
			last = m.end
		}
	}
	return append(out, data[last:]...), nil
}
