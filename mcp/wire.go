package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

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
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// liftTaskMessage returns the JSON-RPC message b (one object, or a batch)
// with each tools/call's params.task moved into params._meta[taskMetaKey],
// and the message as read (the first of a batch). A message that does
// not decode, or whose params or _meta is not an object, is returned as
// it came: the go-sdk says what is wrong with it.
func liftTaskMessage(b []byte) ([]byte, wireMessage) {
	var msg wireMessage
	if len(b) > maxLiftBytes {
		return b, msg
	}
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) != nil || len(batch) == 0 {
			return b, msg
		}
		changed := false
		for i, m := range batch {
			out, read := liftTaskMessage(m)
			if i == 0 {
				msg = read
			}
			if !bytes.Equal(out, m) {
				batch[i], changed = out, true
			}
		}
		if !changed {
			return b, msg
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return b, msg
		}
		return out, msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return b, msg
	}
	msg.ID = m["id"]
	if json.Unmarshal(m["method"], &msg.Method) != nil || msg.Method != "tools/call" {
		return b, msg
	}
	params, ok := liftTask(m["params"])
	if !ok {
		return b, msg
	}
	m["params"] = params
	out, err := json.Marshal(m)
	if err != nil {
		return b, msg
	}
	return out, msg
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
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return params, false
	}
	out, err := json.Marshal(p)
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

// wire reads each POST's body (at most maxBody bytes; the go-sdk refuses a
// larger one) and applies liftTaskMessage; a request of a method the
// server does not serve (before MCP 2026-07-28, which the go-sdk answers
// itself) is answered with the JSON-RPC error -32601 (HTTP 200), and such
// a notification is accepted and ignored (202).
func (s *Server) wire(maxBody int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		out, msg := b, wireMessage{}
		if int64(len(b)) <= maxBody {
			out, msg = liftTaskMessage(b)
		}
		if msg.Method != "" && !servedMethod(msg.Method) && r.Header.Get("Mcp-Protocol-Version") < ModernProtocol {
			if len(msg.ID) == 0 || string(msg.ID) == "null" {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			writeRPCError(w, http.StatusOK, msg.ID, jsonrpc.CodeMethodNotFound,
				fmt.Sprintf("Method not found: %q is not a method this server serves", contracts.Truncate(msg.Method, 100)))
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{bytes.NewReader(out), r.Body}
		r.ContentLength = int64(len(out))
		h.ServeHTTP(w, r)
	})
}
