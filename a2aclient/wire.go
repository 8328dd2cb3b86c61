package a2aclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"

	"github.com/a2adelegate/delegate/contracts"
)

// DefaultMaxResponseBytes is the largest response body (JSON-RPC or
// HTTP+JSON, not a stream) read from an agent when Options.MaxResponseBytes
// is zero: 8 MiB. A larger body is not decoded; the call fails with
// ErrResponseTooLarge (category "protocol").
const DefaultMaxResponseBytes = 8 << 20

// ErrResponseTooLarge is wrapped by the error of a call whose response body
// was over the limit; nothing of it was decoded.
var ErrResponseTooLarge = errors.New("response body over the limit")

// excerptBytes is how much of a response body a call keeps for its error
// (before the contract's max_text_chars cuts it further).
const excerptBytes = 4096

// wireTransport is the one seam between a2a-go and what peers send. a2a-go
// v2.4.0 decodes what its own servers write; independent servers differ,
// and a2a-go then fails or misreads the call. Here, before a2a-go sees a
// response:
//
//   - a body over the limit is refused unread (nothing is decoded whole);
//   - the secrets the client sends are redacted from the body (redactor);
//   - the HTTP status, the JSON-RPC error code and message, and a bounded
//     excerpt of an error body (with its length and sha256) are recorded
//     for Classify, whatever the body's shape;
//   - a JSON-RPC error "data" member that is not an array of objects is
//     dropped: JSON-RPC 2.0 §5.1 lets it be any value (servers send strings
//     and objects), a2a-go only decodes a list of typed details and would
//     otherwise fail the whole response, losing the code;
//   - a numeric JSON-RPC response id is read as its string (a2a-go
//     decodes only string ids);
//   - an HTTP+JSON body typed application/a2a+json is passed on as
//     application/json, which is what a2a-go reads errors from;
//   - a TaskState spelled the other version's way ("completed" on a 1.0
//     interface, "TASK_STATE_COMPLETED" on 0.3) is respelled for the
//     interface's version (A2A 1.0 §4.1.3, A2A 0.3 §6.3), so that a2a-go
//     does not read it as unknown or unspecified;
//   - a 201 or 202 of an A2A 0.3 HTTP+JSON server is read as 200, the
//     only success status a2a-go's 0.3 REST client takes besides 204;
//   - a successful reply is protected (exactValues): data and metadata
//     keep their exact text past a2a-go's float64 decoding, a Task's
//     history is dropped, and members delegate does not need that a2a-go
//     cannot read are dropped with a warning;
//   - a successful reply over the limit only because of a history is read
//     past it without holding it (skipHistory, at most MaxSkippedBytes).
//
// Streams (text/event-stream): a2a-go bounds each event; each event is
// normalized and protected as a body is (eventStream).
type wireTransport struct {
	base     http.RoundTripper
	version  string
	binding  string
	maxBytes int64
	// red redacts the secrets the client sends from every body before
	// anything reads or cuts it (nil: the client sends none).
	red *redactor
}

func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	rec, _ := req.Context().Value(recordKey{}).(*record)
	if err != nil || resp == nil {
		return resp, err
	}
	if rec != nil {
		rec.mu.Lock()
		rec.status = resp.StatusCode
		rec.mu.Unlock()
	}
	if t.protoForm() && (resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusAccepted) {
		// A2A 0.3 HTTP+JSON servers answer a send 201 and a cancel 202
		// (the a2a-js 0.3 SDK does); a2a-go v2.4.0's 0.3 REST client
		// (a2acompat/a2av0) takes only 200 and 204 as success and reads
		// the task it was sent as an error.
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" && rec != nil && rec.stream && resp.StatusCode < 300 {
		// A stream the call asked for: a2a-go bounds each event; each
		// event's JSON is normalized and protected here as a body is. A
		// reply to any other call is read (and capped) as a body,
		// whatever its Content-Type says.
		rec.exact.proto = t.protoForm()
		resp.Body = newEventStream(resp.Body, t.version, rec.exact, t.red)
		if rec.opened != nil {
			rec.opened()
		}
		return resp, nil
	}
	if mt == "application/a2a+json" {
		// A2A 1.0 §11 names application/a2a+json for HTTP+JSON bodies (the
		// a2a-js SDK sends its errors so); a2a-go reads a google.rpc.Status
		// error only from application/json and would call it a server
		// error.
		resp.Header.Set("Content-Type", "application/json")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBytes+1))
	if err == nil && int64(len(body)) > t.maxBytes && resp.StatusCode/100 == 2 && rec != nil && !rec.keepBody && (rec.exact == nil || !rec.exact.keepHistory) {
		// Over the bound: perhaps only for what this client never reads (a
		// history it did not ask for, A2A 1.0 §3.2.4). Read on, past such
		// members, without holding them (skipHistory).
		var skipped int64
		body, skipped, err = skipHistory(io.MultiReader(bytes.NewReader(body), resp.Body), t.maxBytes, MaxSkippedBytes)
		if err == nil && skipped > 0 && rec.exact != nil {
			rec.exact.warn("the reply's history (%d bytes) was skipped unread", skipped)
		}
	}
	resp.Body.Close()
	if errors.Is(err, ErrResponseTooLarge) {
		return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
	}
	if err != nil {
		// The reply was cut (reset, EOF before Content-Length): the
		// request was taken, its answer lost.
		return nil, &BodyReadError{Status: resp.StatusCode, Err: err}
	}
	if int64(len(body)) > t.maxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes (HTTP %d)", ErrResponseTooLarge, t.maxBytes, resp.StatusCode)
	}
	body = t.red.wireBody(body)
	if err := checkRPCResponse(req, resp.StatusCode, body); err != nil {
		return nil, err
	}
	if rec != nil && resp.StatusCode/100 == 2 {
		rec.mu.Lock()
		if rec.keepBody {
			rec.body = body
		}
		rec.mu.Unlock()
	}
	if rec != nil && rec.exact != nil && !rec.keepBody && resp.StatusCode/100 == 2 {
		// Before normalizeBody, which re-encodes what it rewrites: the
		// held values keep the text the agent wrote.
		rec.exact.proto = t.protoForm()
		body = rec.exact.protect(body)
	}
	body, info := normalizeBody(body, t.version)
	if rec != nil && (resp.StatusCode >= 300 || info.rpcError) {
		rec.mu.Lock()
		rec.rpcCode, rec.rpcMessage, rec.hasRPCCode = info.code, t.red.text(info.message), info.rpcError
		rec.excerpt = excerptOf(t.red.bytes(body))
		rec.bodyBytes = len(body)
		sum := sha256.Sum256(body)
		rec.bodySHA256 = hex.EncodeToString(sum[:])
		rec.mu.Unlock()
	}
	if rec != nil && rec.stream && resp.StatusCode/100 == 2 && isReply(body) {
		// A stream asked for, answered with one plain JSON reply (servers
		// that do not stream a send, answer its first event so, or refuse
		// it with a JSON-RPC error): read as a stream of that one event.
		resp.Header.Set("Content-Type", "text/event-stream")
		var one bytes.Buffer
		_ = json.Compact(&one, body) // isReply: valid JSON
		body = append(append([]byte("data: "), one.Bytes()...), '\n', '\n')
		if rec.opened != nil {
			rec.opened()
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// isReply reports whether body is one JSON reply: a JSON-RPC response with a
// result or an error, or an HTTP+JSON object that is not an error.
func isReply(body []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return false
	}
	if _, isRPC := obj["jsonrpc"]; isRPC {
		return (obj["result"] != nil && !isNull(obj["result"])) || (obj["error"] != nil && !isNull(obj["error"]))
	}
	return obj["error"] == nil
}

// protoForm reports whether replies come in the proto JSON form of the A2A
// 0.3 HTTP+JSON binding (a2a-go's a2apb/v0/pbjson).
func (t *wireTransport) protoForm() bool {
	return t.binding == "HTTP+JSON" && strings.HasPrefix(t.version, "0.")
}

// ErrRPCMismatch is wrapped by the error of a JSON-RPC call whose
// response does not answer it (JSON-RPC 2.0 §5): another id, or both a
// result and an error. a2a-go reads neither: it took a response to another
// request as this one's, and an error beside a result as the error.
var ErrRPCMismatch = errors.New("the JSON-RPC response does not answer the request")

// checkRPCResponse holds a JSON-RPC response to its request (JSON-RPC 2.0
// §5): "jsonrpc" exactly "2.0", the same id (a number and its string are
// the same), and a result or an error, not both. Anything else (not a JSON-RPC request, a body that
// is not a JSON object) is left to a2a-go.
func checkRPCResponse(req *http.Request, status int, body []byte) error {
	if req.Method != http.MethodPost || req.GetBody == nil || status/100 != 2 {
		return nil
	}
	rb, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer rb.Close()
	var in struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
	}
	if json.NewDecoder(io.LimitReader(rb, 1<<20)).Decode(&in) != nil || in.JSONRPC == "" || len(in.ID) == 0 {
		return nil
	}
	var out struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	// The first value, as a2a-go reads it (json.Decoder): what follows it
	// would be read by no one, so a body that has more is no response.
	dec := json.NewDecoder(bytes.NewReader(body))
	if dec.Decode(&out) != nil {
		return nil // not a JSON object: a2a-go says what it is
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return fmt.Errorf("%w: data follows the response object", ErrRPCMismatch)
	}
	hasResult := out.Result != nil && string(out.Result) != "null"
	hasError := out.Error != nil && string(out.Error) != "null"
	switch {
	case out.JSONRPC == nil:
		return fmt.Errorf("%w: it has no \"jsonrpc\" member (a JSON-RPC 2.0 response has \"jsonrpc\": \"2.0\")", ErrRPCMismatch)
	case !isVersion20(out.JSONRPC):
		// JSON-RPC 2.0 §5: "jsonrpc" MUST be exactly "2.0". a2a-go reads
		// the member and never checks it.
		return fmt.Errorf("%w: its \"jsonrpc\" member is %s (a JSON-RPC 2.0 response has exactly \"2.0\")", ErrRPCMismatch, contracts.CutText(string(out.JSONRPC), 40))
	case hasResult && hasError:
		return fmt.Errorf("%w: it has both a result and an error", ErrRPCMismatch)
	case hasResult && string(bytes.TrimSpace(out.ID)) == "null":
		return fmt.Errorf("%w: a result with a null id (only an error to a request that could not be read has one)", ErrRPCMismatch)
	}
	id := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(bytes.TrimSpace(raw))
	}
	// A response to a request it could not read may carry a null id
	// (JSON-RPC 2.0 §5); its error then stands.
	if string(bytes.TrimSpace(out.ID)) != "null" && id(out.ID) != id(in.ID) {
		return fmt.Errorf("%w: its id is %s, the request's %s", ErrRPCMismatch, contracts.CutText(string(out.ID), 100), contracts.CutText(string(in.ID), 100))
	}
	return nil
}

// isVersion20 reports whether a "jsonrpc" member is the JSON string "2.0"
// (however its characters are spelled).
func isVersion20(raw json.RawMessage) bool {
	var v string
	return json.Unmarshal(raw, &v) == nil && v == "2.0"
}

func excerptOf(body []byte) string {
	if len(body) > excerptBytes {
		body = body[:excerptBytes]
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// bodyInfo is what normalizeBody read of a JSON-RPC error.
type bodyInfo struct {
	rpcError bool
	code     int
	message  string
}

// normalizeBody applies the rewrites of wireTransport to one JSON body and
// returns it (unchanged when nothing needed a rewrite, or when it is not
// JSON: a2a-go then reports the decoding error).
func normalizeBody(body []byte, version string) ([]byte, bodyInfo) {
	var info bodyInfo
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return body, info
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body, info
	}
	changed := false
	if obj, ok := v.(map[string]any); ok {
		if n, ok := obj["id"].(json.Number); ok {
			if _, isRPC := obj["jsonrpc"]; isRPC {
				// JSON-RPC 2.0 §4 lets the id be a number; a2a-go decodes
				// only a string.
				obj["id"] = n.String()
				changed = true
			}
		}
		if e, ok := obj["error"].(map[string]any); ok {
			if _, isRPC := obj["jsonrpc"]; isRPC {
				info.rpcError = true
				if n, ok := e["code"].(json.Number); ok {
					if c, err := n.Int64(); err == nil {
						info.code = int(c)
					}
				}
				info.message, _ = e["message"].(string)
				if d, has := e["data"]; has && !typedDetails(d) {
					delete(e, "data")
					changed = true
				}
			}
		}
	}
	if respellStates(v, version) {
		changed = true
	}
	if !changed {
		return body, info
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body, info
	}
	return out, info
}

// typedDetails reports whether a JSON-RPC error's data is what a2a-go
// decodes: an array of objects.
func typedDetails(d any) bool {
	arr, ok := d.([]any)
	if !ok {
		return false
	}
	for _, x := range arr {
		if _, ok := x.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// respellStates rewrites every "state" string of a "status" object to the
// spelling of version, and reports whether anything changed. Parts and
// metadata (remote content) are not entered.
func respellStates(v any, version string) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			switch k {
			case "parts", "metadata", "extensions":
				// Remote content: never rewritten.
				continue
			}
			if k == "status" {
				if st, ok := child.(map[string]any); ok {
					if s, ok := st["state"].(string); ok {
						if spelled := spellState(s, version); spelled != s {
							st["state"] = spelled
							changed = true
						}
					}
				}
			}
			if respellStates(child, version) {
				changed = true
			}
		}
	case []any:
		for _, child := range x {
			if respellStates(child, version) {
				changed = true
			}
		}
	}
	return changed
}

// spellState spells a TaskState the way version does; a state it cannot
// read is left as it is (and reads as "unknown").
func spellState(s, version string) string {
	short := string(contracts.ParseTaskState(s))
	if short == string(contracts.TaskStateUnknown) {
		return s
	}
	if strings.HasPrefix(version, "0.") {
		return short
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(short, "-", "_"))
}

// BodyReadError is a response whose body could not be read to its end
// (the connection was reset or closed early): the request was received,
// the reply lost. Classify makes it unknown_outcome for a send and
// transient for a read.
type BodyReadError struct {
	Status int
	Err    error
}

func (e *BodyReadError) Error() string {
	return fmt.Sprintf("reading the response body (HTTP %d): %v", e.Status, e.Err)
}

func (e *BodyReadError) Unwrap() error { return e.Err }

type recordKey struct{}

// record is what the transport saw of one call.
type record struct {
	mu         sync.Mutex
	stream     bool
	status     int
	written    bool
	hasRPCCode bool
	rpcCode    int
	rpcMessage string
	excerpt    string
	bodyBytes  int
	bodySHA256 string
	// keepBody asks the wire seam to keep the (bounded, redacted) body of
	// a 2xx reply in body, as received (GetExtendedAgentCard).
	keepBody bool
	body     []byte
	// The gRPC binding's (grpcSeam): grpc, a call was made over it;
	// grpcHeader and grpcTrailer, the server sent its headers, its
	// status; grpcFailed, the call failed with status grpcCode and
	// grpcMessage (redacted); dialErr, the connection's last dial error
	// when the code is Unavailable.
	grpc, grpcHeader, grpcTrailer, grpcFailed bool
	grpcCode                                  codes.Code
	grpcMessage                               string
	dialErr                                   error
	// exact holds the values of the reply a2a-go would alter, and the
	// warnings of what was ignored (exactValues).
	exact *exactValues
	// opened, when set, is called once the stream a call asked for is
	// answered (its headers came, before any event).
	opened func()
}

func withRecord(ctx context.Context) (context.Context, *record) {
	rec := &record{exact: newExactValues()}
	ctx = context.WithValue(ctx, recordKey{}, rec)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			rec.mu.Lock()
			rec.written = true
			rec.mu.Unlock()
		},
	})
	return ctx, rec
}
