package a2aclient

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a2adelegate/delegate/contracts"
)

// exactValues is the seam that keeps an agent's JSON exact and reads only
// what a delegation needs (DESIGN principle 12). a2a-go decodes a data
// Part's value and every metadata object into Go's any, so each number
// passes through float64 (7615917337495251231 becomes
// 7615917337495251000), and it fails a whole Task for a member delegate
// never reads (a status timestamp in another layout, a history entry's
// part of an unknown kind, extensions as objects). Before a2a-go sees a
// successful JSON reply (a body, or one event of a stream), protect:
//
//   - puts in the place of each Part's data value, each part's and each
//     artifact's metadata, and each part of no kind a2a-go reads, a
//     placeholder object {key: "N"} (key random per client, so no agent
//     can forge one), keeping the value's text as sent; resolve gives
//     it back when the snapshot is built, so the Outcome, the state and
//     the history carry the agent's own text;
//   - drops a Task's history (A2A 1.0 §3.2.4: delegate asks for
//     historyLength 0 and reads the task, never its history);
//   - drops, with a warning on the snapshot, a member delegate does not
//     need that a2a-go could not read: a status timestamp that is not an
//     RFC 3339 string, metadata that is not an object, extensions that
//     are not a list of strings.
//
// Over gRPC nothing passes here: protobuf carries numbers as doubles
// (google.protobuf.Value), so what a2a-go gives is what was on the wire.
type exactValues struct {
	key string
	// proto: replies are in the proto JSON form of the A2A 0.3 HTTP+JSON
	// binding (a2a-go's a2apb/v0/pbjson: a message's parts in "content",
	// a data part {"data": {"data": V}}); else the JSON-RPC and 1.0 forms.
	proto bool
	// keepHistory keeps a Task's history (ListTasks, read to find the task
	// a message made); otherwise it is dropped unread.
	keepHistory bool

	mu       sync.Mutex
	next     int
	vals     map[string]json.RawMessage
	unknown  map[string]bool
	warnings []string
}

// maxWarnings bounds the warnings one call keeps.
const maxWarnings = 20

func newExactValues() *exactValues {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &exactValues{key: "delegate.exact." + hex.EncodeToString(b[:]), vals: map[string]json.RawMessage{}, unknown: map[string]bool{}}
}

func (x *exactValues) warn(format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.warnings) < maxWarnings {
		x.warnings = append(x.warnings, contracts.CutText(fmt.Sprintf(format, args...), 300))
	}
}

// takeWarnings returns the warnings recorded so far and forgets them.
func (x *exactValues) takeWarnings() []string {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.warnings
	x.warnings = nil
	return w
}

// hold keeps raw (compacted: its numbers' and strings' text unchanged)
// and returns the placeholder that stands for it.
func (x *exactValues) hold(raw json.RawMessage, unknownPart bool) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	if !utf8.Valid(buf.Bytes()) {
		// JSON text is UTF-8 (RFC 8259 §8.1): an invalid byte inside a
		// string becomes U+FFFD, as encoding/json decodes it.
		fixed := bytes.ToValidUTF8(buf.Bytes(), []byte("\uFFFD"))
		buf.Reset()
		buf.Write(fixed)
	}
	x.mu.Lock()
	id := strconv.Itoa(x.next)
	x.next++
	x.vals[id] = buf.Bytes()
	if unknownPart {
		x.unknown[id] = true
	}
	x.mu.Unlock()
	ph, _ := json.Marshal(map[string]string{x.key: id})
	return ph
}

// resolve returns the exact text of a value a2a-go decoded: the held value
// when v is a placeholder (it is then forgotten: a stream holds only what
// is still to be read), else v encoded (gRPC, or a value no placeholder
// stood for). unknownPart reports a part held because a2a-go reads no
// kind of it.
func (x *exactValues) resolve(v any) (raw json.RawMessage, unknownPart bool, ok bool) {
	if x != nil {
		if m, isMap := v.(map[string]any); isMap && len(m) == 1 {
			if id, isStr := m[x.key].(string); isStr {
				x.mu.Lock()
				raw, ok = x.vals[id]
				unknownPart = x.unknown[id]
				delete(x.vals, id)
				delete(x.unknown, id)
				x.mu.Unlock()
				if ok {
					return raw, unknownPart, true
				}
			}
		}
	}
	if v == nil {
		return nil, false, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false, false
	}
	return b, false, true
}

// protect rewrites one successful JSON reply (a JSON-RPC response, an
// HTTP+JSON body, or one stream event) as described on exactValues. A body
// that is not a JSON object or array is returned as it is (a2a-go then
// says what it is).
func (x *exactValues) protect(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') || !json.Valid(trimmed) {
		return body
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(trimmed, &top) == nil && top["error"] != nil && !isNull(top["error"]) {
		return body // an error (JSON-RPC 2.0 §5.1), not a reply to protect
	}
	out, changed := x.walk(trimmed, "")
	if !changed {
		return body
	}
	return out
}

// walk rewrites the structure of a reply (never remote content: data,
// metadata and text are held or passed as they are). path names where it
// is, for warnings ("result.status").
func (x *exactValues) walk(raw json.RawMessage, path string) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return raw, false
	}
	switch raw[0] {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return raw, false
		}
		changed := false
		for i := range arr {
			if v, c := x.walk(arr[i], fmt.Sprintf("%s[%d]", path, i)); c {
				arr[i], changed = v, true
			}
		}
		if !changed {
			return raw, false
		}
		out, _ := json.Marshal(arr)
		return out, true
	case '{':
	default:
		return raw, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw, false
	}
	changed := false
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	if _, isTask := obj["status"]; isTask && !x.keepHistory {
		if _, has := obj["history"]; has {
			// Never read: A2A 1.0 §3.2.4 lets a server send more history
			// than asked for.
			delete(obj, "history")
			changed = true
		}
	}
	artifactLike := obj["artifactId"] != nil
	for k, v := range obj {
		switch k {
		case "parts", "content":
			if k == "content" && !x.proto {
				if nv, c := x.walk(v, at(k)); c {
					obj[k], changed = nv, true
				}
				continue
			}
			if nv, c := x.parts(v, at(k)); c {
				obj[k], changed = nv, true
			}
		case "metadata":
			if isNull(v) {
				continue
			}
			if !isObject(v) {
				x.warn("%s is not a JSON object (ignored)", at(k))
				delete(obj, k)
				changed = true
				continue
			}
			if artifactLike {
				obj[k], changed = x.hold(v, false), true
			}
		case "extensions":
			var list []string
			if !isNull(v) && json.Unmarshal(v, &list) != nil {
				x.warn("%s is not a list of strings (ignored)", at(k))
				delete(obj, k)
				changed = true
			}
		case "timestamp":
			if !isNull(v) && !rfc3339(v) {
				x.warn("%s %s is not an RFC 3339 time (ignored)", at(k), contracts.CutText(string(v), 64))
				delete(obj, k)
				changed = true
			}
		default:
			// Only the members that hold A2A structure are entered (the
			// reply's result, a Task, a Message, a status, an artifact, a
			// list of tasks); any other member is passed on unread: walking
			// it would cost its depth times its size.
			if !structural[k] {
				continue
			}
			if nv, c := x.walk(v, at(k)); c {
				obj[k], changed = nv, true
			}
		}
	}
	if !changed {
		return raw, false
	}
	out, _ := json.Marshal(obj)
	return out, true
}

// structural are the members walk enters: where A2A objects (Task,
// Message, TaskStatus, Artifact, the stream events, a ListTasks result)
// sit in a reply of either version and binding.
var structural = map[string]bool{
	"result": true, "task": true, "message": true, "status": true, "statusUpdate": true, "artifactUpdate": true,
	"artifact": true, "artifacts": true, "tasks": true, "update": true,
}

// parts rewrites a list of Parts: each data value and each part's metadata
// is held; a part of no kind a2a-go reads is held whole, to be recorded as
// a part of unknown kind (an artifact holding one is then rejected with
// that reason, never silently shortened).
func (x *exactValues) parts(raw json.RawMessage, path string) (json.RawMessage, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) != nil {
		return raw, false
	}
	for i, el := range arr {
		var p map[string]json.RawMessage
		if json.Unmarshal(el, &p) != nil || p == nil {
			continue
		}
		if !readablePart(p, x.proto) {
			keys := make([]string, 0, len(p))
			for k := range p {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			x.warn("%s[%d] is a part of no kind this client reads (members %s)", path, i, contracts.CutText(strings.Join(keys, ", "), 120))
			ph := x.hold(el, true)
			if x.proto {
				inner, _ := json.Marshal(map[string]json.RawMessage{"data": ph})
				arr[i], _ = json.Marshal(map[string]json.RawMessage{"data": inner})
			} else {
				arr[i], _ = json.Marshal(map[string]json.RawMessage{"kind": json.RawMessage(`"data"`), "data": ph})
			}
			continue
		}
		if d, has := p["data"]; has && !isNull(d) {
			if x.proto {
				// {"data": {"data": V}}: V is the value.
				var dp map[string]json.RawMessage
				if json.Unmarshal(d, &dp) == nil && dp["data"] != nil {
					dp["data"] = x.hold(dp["data"], false)
					p["data"], _ = json.Marshal(dp)
				}
			} else {
				p["data"] = x.hold(d, false)
			}
		}
		if m, has := p["metadata"]; has && !isNull(m) {
			if isObject(m) {
				p["metadata"] = x.hold(m, false)
			} else {
				x.warn("%s[%d].metadata is not a JSON object (ignored)", path, i)
				delete(p, "metadata")
			}
		}
		arr[i], _ = json.Marshal(p)
	}
	out, _ := json.Marshal(arr)
	return out, true
}

// readablePart reports whether a2a-go reads a kind of the part: exactly
// one of text (a string), data, url (a string) or raw (1.0, A2A 1.0
// §4.1.6), a 0.3 part whose kind is text, data or file (A2A 0.3 §6.5), or
// in the proto form exactly one of text, file (an object) or data (an
// object holding data).
func readablePart(p map[string]json.RawMessage, proto bool) bool {
	if proto {
		n := 0
		for k, v := range p {
			if isNull(v) {
				continue
			}
			switch k {
			case "text":
				if !isString(v) {
					return false
				}
			case "file":
				if !isObject(v) {
					return false
				}
			case "data":
				var dp map[string]json.RawMessage
				if json.Unmarshal(v, &dp) != nil || dp["data"] == nil || isNull(dp["data"]) {
					return false
				}
			default:
				continue
			}
			n++
		}
		return n == 1
	}
	if k, has := p["kind"]; has {
		var kind string
		if json.Unmarshal(k, &kind) != nil {
			return false
		}
		switch kind {
		case "text":
			return isString(p["text"])
		case "data":
			return p["data"] != nil && !isNull(p["data"])
		case "file":
			return isObject(p["file"])
		}
		return false
	}
	n := 0
	for _, k := range []string{"text", "data", "url", "raw"} {
		if v, has := p[k]; has && !isNull(v) {
			n++
			if (k == "text" || k == "url" || k == "raw") && !isString(v) {
				return false
			}
		}
	}
	return n == 1
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

func isString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

// rfc3339 reports whether v is a JSON string that time.Time reads (RFC
// 3339, what a2a-go's TaskStatus.Timestamp decodes).
func rfc3339(v json.RawMessage) bool {
	var t time.Time
	return json.Unmarshal(v, &t) == nil
}

// noHistory is historyLength 0 (A2A 1.0 §3.2.4: no history in the reply).
func noHistory() *int {
	n := 0
	return &n
}

// outboundData decodes a message's data part for a2a-go without a float64
// in between: numbers stay json.Number, which encoding/json writes with
// their own text (JSON-RPC and HTTP+JSON, 1.0 and 0.3). Over gRPC a number
// is a protobuf double (google.protobuf.Value), so each is converted, and
// one a double cannot hold exactly (7615917337495251231, a 30-digit
// decimal) is refused naming its place: sending it would change it.
func outboundData(raw json.RawMessage, grpc bool) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("message data is not JSON: %w", err)
	}
	if !grpc {
		return v, nil
	}
	return toDoubles(v, "message.data")
}

// toDoubles converts every json.Number of v into a float64, refusing one
// whose value the double does not hold exactly.
func toDoubles(v any, path string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil || !sameNumber(x.String(), f) {
			return nil, fmt.Errorf("%s: the number %s cannot be sent exactly over gRPC (protobuf carries numbers as IEEE 754 doubles, google.protobuf.Value); send it as a string, or use an agent's JSON-RPC or HTTP+JSON interface", path, contracts.CutText(x.String(), 64))
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			c, err := toDoubles(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, err := toDoubles(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
	}
	return v, nil
}

// sameNumber reports whether the decimal text and the double are the same
// number: the double's shortest form reads as the same rational (0.1 and
// 1e2 pass; 9007199254740993 does not).
func sameNumber(text string, f float64) bool {
	a, ok := new(big.Rat).SetString(text)
	if !ok {
		return false
	}
	b, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return ok && a.Cmp(b) == 0
}
