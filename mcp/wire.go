package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/a2adelegate/delegate/contracts"
)

// What the server reads off the wire before the go-sdk does (both
// transports): a tools/call's params.task, which go-sdk v1.8.0 drops
// (go-sdk#626), moved into _meta (liftTask; the tasks middleware reads it
// there); and, over HTTP, a request for a method nobody serves, which the
// go-sdk answers with HTTP 400 and a text/plain body before MCP
// 2026-07-28, answered here with the JSON-RPC error -32601 it is.

// standardMethods are the methods go-sdk v1.8.0 serves
// (serverMethodInfos; TestStandardMethodsAreTheSDKs keeps the list true).
var standardMethods = []string{
	"completion/complete", "server/discover", "initialize", "ping", "prompts/list", "prompts/get",
	"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
	"logging/setLevel", "resources/subscribe", "subscriptions/listen", "resources/unsubscribe",
	"notifications/cancelled", "notifications/initialized", "notifications/roots/list_changed", "notifications/progress",
}

// served reports whether method is one the server answers.
func servedMethod(method string) bool {
	switch method {
	case MethodTasksGet, MethodTasksResult, MethodTasksCancel, MethodTasksList, MethodTasksUpdate:
		return true
	}
	for _, m := range standardMethods {
		if m == method {
			return true
		}
	}
	return false
}

// maxLiftBytes bounds a message liftTaskMessage reads (a larger one goes
// to the go-sdk as it came, which bounds it itself).
const maxLiftBytes = 1 << 20

// wireMessage is what liftTaskMessage reads of a JSON-RPC message.
type wireMessage struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// call reports whether m is a request (it has an id).
func (m wireMessage) call() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// joinObject writes the object of members m, each value's text as it
// came (json.Marshal would compact it and escape <, >, &, U+2028 and
// U+2029 in it: a message of "<" characters grew sixfold and broke the
// size bounds).
func joinObject(m map[string]json.RawMessage) ([]byte, error) {
	keys := slices.Sorted(maps.Keys(m))
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// liftTaskMessage returns the JSON-RPC message b (one object, or a batch)
// with each tools/call's params.task moved into params._meta[taskMetaKey],
// and the messages as read (none for one that does not decode). A
// message that does not decode, or whose params or _meta is not an
// object, is returned as it came: the go-sdk says what is wrong with it.
func liftTaskMessage(b []byte) ([]byte, []wireMessage) {
	if len(b) > maxLiftBytes {
		return b, nil
	}
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) != nil || len(batch) == 0 {
			return b, nil
		}
		var read []wireMessage
		changed := false
		for i, m := range batch {
			out, msgs := liftTaskMessage(m)
			read = append(read, msgs...)
			if !bytes.Equal(out, m) {
				batch[i], changed = out, true
			}
		}
		if !changed {
			return b, read
		}
		parts := make([][]byte, len(batch))
		for i, m := range batch {
			parts[i] = m
		}
		return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']'), read
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil || m == nil {
		return b, nil
	}
	var msg wireMessage
	msg.ID, msg.Params = m["id"], m["params"]
	if json.Unmarshal(m["method"], &msg.Method) != nil || msg.Method != "tools/call" {
		return b, []wireMessage{msg}
	}
	params, ok := liftTask(m["params"])
	if !ok {
		return b, []wireMessage{msg}
	}
	m["params"] = params
	out, err := joinObject(m)
	if err != nil {
		return b, []wireMessage{msg}
	}
	return out, []wireMessage{msg}
}

// liftTask moves params.task (MCP 2025-11-25, Tasks, "Creating Tasks")
// into params._meta[taskMetaKey]; ok is false when params has no task
// (a null one included) or cannot take it.
func liftTask(params json.RawMessage) (json.RawMessage, bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return params, false
	}
	task, ok := p["task"]
	if !ok || string(bytes.TrimSpace(task)) == "null" {
		return params, false
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return params, false
		}
	}
	meta[taskMetaKey] = task
	delete(p, "task")
	var err error
	if p["_meta"], err = joinObject(meta); err != nil {
		return params, false
	}
	out, err := joinObject(p)
	if err != nil {
		return params, false
	}
	return out, true
}

// liftingReader is standard input as the go-sdk's stdio transport reads
// it, each newline-delimited message (MCP, stdio transport) passed
// through liftTaskMessage. A line over max bytes (0: no bound) goes on
// as it came, for the go-sdk to refuse.
func liftingReader(r io.Reader, max int) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br, max)
			if len(line) > 0 {
				if n := len(line); line[n-1] == '\n' && (max <= 0 || n-1 <= max) {
					out, _ := liftTaskMessage(line[:n-1])
					line = append(out, '\n')
				}
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// readLine reads one line with its newline, or up to max bytes of one
// (then without its newline: it is passed on unchanged).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			if max > 0 && len(line) > max {
				return line, nil // no newline: passed on as it came
			}
			continue
		}
		return line, err
	}
}

// wire reads each POST's body (at most maxBody bytes: 413 beyond) and
// applies liftTaskMessage. Before the go-sdk:
//   - a request of a method the server does not serve is answered with
//     the JSON-RPC error -32601 (HTTP 200; before MCP 2026-07-28 the
//     go-sdk answers HTTP 400 with a text body), and such a notification
//     is accepted and ignored (202, in every version); a batch (MCP
//     2025-03-26) that holds one is refused whole, each request in it
//     answered with an error;
//   - a tasks/* request whose params are not what the method takes is
//     refused with -32602 naming the member (the go-sdk's refusal quotes
//     the whole params: a megabyte of them came back as five);
//   - a request whose HTTP request ends before its answer (the client
//     went away) is cancelled as notifications/cancelled would, so that
//     no call (a tasks/result that waits for days) runs on for nobody.
func (s *Server) wire(maxBody int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "reading the body: "+contracts.Truncate(err.Error(), 200))
			return
		}
		if int64(len(b)) > maxBody {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request body exceeds %d bytes", maxBody))
			return
		}
		out, msgs := liftTaskMessage(b)
		if refuseUnserved(w, msgs, bytes.HasPrefix(bytes.TrimSpace(b), []byte("["))) || refuseTaskParams(w, msgs) {
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{bytes.NewReader(out), r.Body}
		r.ContentLength = int64(len(out))
		h.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			s.cancelCalls(h, r, msgs)
		}
	})
}

// refuseUnserved answers what asks for a method nobody serves (wire), and
// reports whether it did.
func refuseUnserved(w http.ResponseWriter, msgs []wireMessage, batch bool) bool {
	unserved := false
	for _, m := range msgs {
		if m.Method != "" && !servedMethod(m.Method) {
			unserved = true
		}
	}
	if !unserved {
		return false
	}
	notFound := func(m wireMessage) jsonrpc.Error {
		return jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %q is not a method this server serves", contracts.Truncate(m.Method, 100))}
	}
	if !batch {
		if !msgs[0].call() {
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		e := notFound(msgs[0])
		writeRPCError(w, http.StatusOK, msgs[0].ID, e.Code, e.Message)
		return true
	}
	type response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}
	var answers []response
	for _, m := range msgs {
		if !m.call() {
			continue
		}
		e := jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not run: the batch holds a method this server does not serve; send it without that one"}
		if m.Method != "" && !servedMethod(m.Method) {
			e = notFound(m)
		}
		answers = append(answers, response{"2.0", m.ID, e})
	}
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	body, err := json.Marshal(answers)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return true
}

// refuseTaskParams refuses (-32602) a tasks/* request whose params are
// not an object of the members the method takes with their types, and
// reports whether it did.
func refuseTaskParams(w http.ResponseWriter, msgs []wireMessage) bool {
	for _, m := range msgs {
		if !m.call() || !servedMethod(m.Method) || !strings.HasPrefix(m.Method, "tasks/") {
			continue
		}
		if why := taskParamsProblem(m.Params); why != "" {
			writeRPCError(w, http.StatusOK, m.ID, jsonrpc.CodeInvalidParams, m.Method+": "+why)
			return true
		}
	}
	return false
}

// taskParamsProblem says what is wrong with a tasks/* request's params
// ("" for nothing): an object (or none) whose taskId, cursor and
// requestState are strings and whose inputResponses is an object.
func taskParamsProblem(params json.RawMessage) string {
	if len(params) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return ""
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return "params: must be a JSON object"
	}
	for _, k := range []string{"taskId", "cursor", "requestState"} {
		if v, ok := p[k]; ok {
			var str string
			if json.Unmarshal(v, &str) != nil {
				return k + ": must be a string"
			}
		}
	}
	if v, ok := p["inputResponses"]; ok {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return "inputResponses: must be an object of responses by input request key"
		}
	}
	return ""
}

// cancelCalls sends the session notifications/cancelled for each request
// of msgs, once its HTTP request ended before its answer: the go-sdk
// (v1.8.0) runs a session's request on after its POST is gone, and the
// notification is how MCP cancels one (a request already answered is
// not cancelled by it).
func (s *Server) cancelCalls(h http.Handler, r *http.Request, msgs []wireMessage) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return
	}
	for _, m := range msgs {
		if !m.call() {
			continue
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": m.ID, "reason": "the HTTP request ended before its answer"}})
		req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, r.URL.String(), bytes.NewReader(body))
		if err != nil {
			continue
		}
		for _, k := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Authorization"} {
			if v := r.Header.Get(k); v != "" {
				req.Header.Set(k, v)
			}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
		h.ServeHTTP(discard{header: http.Header{}}, req)
		s.o.Logger.Info("mcp: request cancelled: its HTTP request ended", "method", contracts.Truncate(m.Method, 100))
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d discard) Header() http.Header       { return d.header }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
func (discard) Flush()                      {}
