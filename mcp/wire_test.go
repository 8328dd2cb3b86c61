package mcp

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStandardMethodsAreTheSDKs: every method standardMethods names is
// one the go-sdk serves itself (it refuses to let a custom method shadow
// it), and the tasks methods are not (they are this server's).
func TestStandardMethodsAreTheSDKs(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "probe", Version: "1"}, nil)
	h := func(context.Context, *sdk.ServerSession, *taskIDParams) (*taskResult, error) { return nil, nil }
	for _, m := range standardMethods {
		if err := sdk.AddReceivingCustomMethod(srv, m, h); err == nil {
			t.Errorf("%s: the go-sdk does not serve it: standardMethods is stale", m)
		}
	}
	for _, m := range []string{MethodTasksGet, MethodTasksResult, MethodTasksCancel, MethodTasksList, MethodTasksUpdate} {
		if err := sdk.AddReceivingCustomMethod(srv, m, h); err != nil {
			t.Errorf("%s: the go-sdk serves it now (%v): tasks.go must change", m, err)
		}
		if !servedMethod(m) {
			t.Errorf("servedMethod(%s) = false", m)
		}
	}
	if servedMethod("tasks/subscribe") || servedMethod("acme/search") {
		t.Error("servedMethod takes a method nobody serves")
	}
}

// TestLiftTaskMessage: a tools/call's params.task goes into _meta (the
// members it had kept, the arguments' text exactly); anything else, or a
// message that does not decode, goes on as it came.
func TestLiftTaskMessage(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"open_claim","arguments":{"n":123456789012345678901234567890,"d":0.10},"task":{"ttl":60000},"_meta":{"progressToken":"p1"}}}`
	out, msgs := liftTaskMessage([]byte(in))
	if len(msgs) != 1 || msgs[0].Method != "tools/call" || string(msgs[0].ID) != "7" {
		t.Fatalf("read %+v", msgs)
	}
	var m struct {
		Params struct {
			Arguments json.RawMessage            `json:"arguments"`
			Task      json.RawMessage            `json:"task"`
			Meta      map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m.Params.Task != nil {
		t.Errorf("task still in params: %s", out)
	}
	if string(m.Params.Meta[taskMetaKey]) != `{"ttl":60000}` || string(m.Params.Meta["progressToken"]) != `"p1"` {
		t.Errorf("_meta = %s", out)
	}
	if string(m.Params.Arguments) != `{"n":123456789012345678901234567890,"d":0.10}` {
		t.Errorf("arguments = %s, want them as sent", m.Params.Arguments)
	}
	for _, same := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{},"_meta":[1]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"task":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}`,
		`not json`,
	} {
		if out, _ := liftTaskMessage([]byte(same)); string(out) != same {
			t.Errorf("%s became %s", same, out)
		}
	}
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","task":{}}}]`
	out, msgs = liftTaskMessage([]byte(batch))
	if len(msgs) != 2 || msgs[0].Method != "ping" || msgs[1].Method != "tools/call" || !strings.Contains(string(out), taskMetaKey) || strings.Contains(string(out), `"task":`) {
		t.Errorf("batch became %s (read %+v)", out, msgs)
	}
	// The lift keeps the size: nothing is escaped that was not (json.Marshal
	// escapes <, >, & and U+2028 in every RawMessage).
	plain := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","task":{},"arguments":{"a":"` + strings.Repeat("<&>\u2028", 100) + "\u2028" + `"}}}`
	if out, _ := liftTaskMessage([]byte(plain)); len(out) > len(plain)+len(taskMetaKey)+20 || strings.Contains(string(out), `\u003c`) {
		t.Errorf("lifted %d bytes into %d: %.200s", len(plain), len(out), out)
	}
}

// TestLiftingReader: each line of standard input is lifted on its own,
// a line over the bound passes as it came, and the end of input ends it.
func TestLiftingReader(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","task":{},"arguments":{"pad":"` + strings.Repeat("a", 200) + `"}}}`
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","task":{}}}` + "\r\n" +
		long + "\n"
	got, err := io.ReadAll(liftingReader(strings.NewReader(in), 150))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), got)
	}
	if lines[0] != `{"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Errorf("line 1 = %s", lines[0])
	}
	if !strings.Contains(lines[1], taskMetaKey) || strings.Contains(lines[1], `"task":`) {
		t.Errorf("line 2 = %s, want its task in _meta", lines[1])
	}
	if lines[2] != long {
		t.Errorf("the line over the bound changed: %s", lines[2])
	}
}
