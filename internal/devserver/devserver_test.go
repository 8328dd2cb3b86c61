package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
)

// The server's internal services take free ports chosen at each start,
// none of them next to --port: `delegate dev --port P` listened on P+1 to
// P+7 too (with a database file), which a user choosing free ports for
// other programs was not told of.
func TestInternalPortsNotNextToThePort(t *testing.T) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, memory := range []bool{false, true} {
		cfg, err := serverConfig(Config{IP: "127.0.0.1", Port: port, UIPort: port + 1, Memory: memory}, &config.SQL{}, &config.SQL{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]string{}
		for name, s := range cfg.Services {
			for _, p := range []int{s.RPC.GRPCPort, s.RPC.MembershipPort} {
				if p > port && p <= port+8 {
					t.Errorf("memory %v: service %s uses port %d, next to --port %d", memory, name, p, port)
				}
				if other, dup := seen[p]; dup || p == 0 {
					t.Errorf("memory %v: service %s uses port %d (also %s)", memory, name, p, other)
				}
				seen[p] = name
			}
		}
		if len(seen) != 8 {
			t.Errorf("memory %v: %d ports, want 8 (the frontend and 7 internal)", memory, len(seen))
		}
	}
}

// A real server with a database file, --ui-port right after --port: it
// starts, and the UI answers on its port.
func TestUIPortNextToTheFrontend(t *testing.T) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Start(ctx, Config{Port: port, UIPort: port + 1, DBPath: filepath.Join(t.TempDir(), "t.db"), LogLevel: "fatal"})
	if err != nil {
		t.Fatalf("Start(--port %d --ui-port %d) error = %v", port, port+1, err)
	}
	defer srv.Stop()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port+1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("UI status %d", resp.StatusCode)
	}
}

// Every one-host default names a setting the server knows, with a value
// the setting accepts (a typo would be ignored by the server).
func TestOneHostDynamicConfigKeysAreKnown(t *testing.T) {
	var b strings.Builder
	for k, v := range OneHostDynamicConfig {
		fmt.Fprintf(&b, "%s:\n  - value: %v\n", k, v)
	}
	lr := dynamicconfig.LoadYamlFile([]byte(b.String()))
	if err := errors.Join(append(lr.Errors, lr.Warnings...)...); err != nil {
		t.Fatal(err)
	}
}

// --dynamic-config: a file's value replaces the default for its key and
// keeps the others; an unknown key or a refused value is an error naming
// the key.
func TestLoadDynamicConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m, err := LoadDynamicConfig(write("ok.yaml", "history.transferProcessorMaxPollRPS:\n  - value: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := dynamicConfig(m, false)
	if got := c.GetValue(dynamicconfig.MakeKey("history.transferProcessorMaxPollRPS")); len(got) != 1 || got[0].Value != 7 {
		t.Errorf("transferProcessorMaxPollRPS = %v, want the file's 7", got)
	}
	if got := c.GetValue(dynamicconfig.MakeKey("matching.numTaskqueueReadPartitions")); len(got) != 1 || got[0].Value != 1 {
		t.Errorf("numTaskqueueReadPartitions = %v, want the default 1", got)
	}
	for name, tc := range map[string]struct{ text, want string }{
		"typo.yaml":  {"history.transferProcesorMaxPollRPS:\n  - value: 7\n", `"history.transferProcesorMaxPollRPS"`},
		"type.yaml":  {"history.transferProcessorMaxPollRPS:\n  - value: fast\n", "transferprocessormaxpollrps"},
		"yaml.yaml":  {"history.transferProcessorMaxPollRPS: [\n", "yaml"},
		"shape.yaml": {"history.transferProcessorMaxPollRPS: 500\n", "history.transferProcessorMaxPollRPS: want a list of {value: V}"},
		"list.yaml":  {"- history.transferProcessorMaxPollRPS\n", "not a list"},
		"zero.yaml":  {"matching.numTaskqueueReadPartitions:\n  - value: 0\n", `"matching.numTaskqueueReadPartitions": value 0: a task queue needs at least 1 partition`},
		"rps.yaml":   {"history.transferProcessorMaxPollRPS:\n  - value: -5\n", "must be at least 1"},
		// Two spellings of one key (the server lowercases them), an empty
		// list, and a misspelt field were taken without a word.
		"dupcase.yaml":   {"history.transferprocessormaxpollrps:\n  - value: 5\nhistory.transferProcessorMaxPollRPS:\n  - value: 7\n", `"history.transferProcessorMaxPollRPS" and "history.transferprocessormaxpollrps" are the same setting`},
		"emptylist.yaml": {"history.transferProcessorMaxPollRPS: []\n", "history.transferProcessorMaxPollRPS: an empty list sets nothing"},
		"field.yaml":     {"history.transferProcessorMaxPollRPS:\n  - valu: 500\n", `history.transferProcessorMaxPollRPS: item 1: unknown field "valu"`},
		"novalue.yaml":   {"history.transferProcessorMaxPollRPS:\n  - constraints: {}\n", "history.transferProcessorMaxPollRPS: item 1: no value"},
		// The server's loader said "unknown constraint type" without the key.
		"constraint.yaml": {"history.transferProcessorMaxPollRPS:\n  - value: 5\n    constraints: {bogus: x}\n", `history.transferProcessorMaxPollRPS: unknown constraint type "bogus"`},
	} {
		_, err := LoadDynamicConfig(write(name, tc.text))
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
			t.Errorf("%s: error = %v, want one naming the file and saying %q", name, err, tc.want)
		}
	}
	if _, err := LoadDynamicConfig(write("typo.yaml", "history.transferProcesorMaxPollRPS:\n  - value: 7\n")); err == nil ||
		!strings.Contains(err.Error(), `"history.transferProcesorMaxPollRPS"`) {
		t.Errorf("a misspelt key is named as written: %v", err)
	}
	if m, err := LoadDynamicConfig(write("empty.yaml", "# nothing\n")); err != nil || len(m) != 0 {
		t.Errorf("an empty file: %v, %v", m, err)
	}
	if _, err := LoadDynamicConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}

// A database file is in write-ahead-log mode, the mode the server's SQLite
// plugin is built for (SQLite file format: header bytes 18 and 19 are 2 for
// WAL, 1 for a rollback journal). The pragma was once given under another
// driver's name and silently ignored.
func TestDatabaseFileIsWAL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	s, err := Start(context.Background(), Config{DBPath: db, UIPort: -1, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	f, err := os.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := make([]byte, 20)
	if _, err := io.ReadFull(f, h); err != nil {
		t.Fatal(err)
	}
	if h[18] != 2 || h[19] != 2 {
		t.Errorf("header bytes 18-19 = %d %d, want 2 2 (WAL)", h[18], h[19])
	}
}

// A new store gets the namespace and every search attribute before the
// server starts, so the server runs without reading its search attributes
// afresh on every lookup. A database from before an attribute existed gets
// it through the API, and it is usable at once in that run (a start that
// sets it, a list that filters on it); the run after needs nothing late.
func TestSearchAttributesBeforeTheStart(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "temporal.db")
	start := func(attrs ...string) *Server {
		t.Helper()
		s, err := Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal", SearchAttributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start("A2AState")
	if s.lateSearchAttributes != nil {
		t.Errorf("a new database registered %v after the start", s.lateSearchAttributes)
	}
	s.Stop()

	s = start("A2AState", "A2AAgent")
	if fmt.Sprint(s.lateSearchAttributes) != "[A2AAgent]" {
		t.Errorf("late search attributes = %v, want [A2AAgent]", s.lateSearchAttributes)
	}
	c, err := s.dial(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	agent := temporal.NewSearchAttributeKeyKeyword("A2AAgent")
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "late-sa", TaskQueue: "nobody",
		TypedSearchAttributes: temporal.NewSearchAttributes(agent.ValueSet("https://agent.example"))}, "Nothing"); err != nil {
		t.Fatalf("a start with the late attribute: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: `A2AAgent = "https://agent.example"`})
		if err == nil && len(resp.GetExecutions()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list by the late attribute: %v, %v", resp.GetExecutions(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.TerminateWorkflow(ctx, "late-sa", "", "test over"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.Stop()

	s = start("A2AState", "A2AAgent")
	defer s.Stop()
	if s.lateSearchAttributes != nil {
		t.Errorf("the run after registered %v after the start", s.lateSearchAttributes)
	}
}

// A database file started again on other ports (another --port, or the
// next seven ports busy) runs workflows at once: the cluster members the
// last server recorded in the file are gone (one server per file, under
// its lock), and were waited on for about a minute.
func TestRestartOnOtherPorts(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "temporal.db")
	s, err := Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	first := s.cfg.Port
	s.Stop()
	s, err = Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.cfg.Port == first {
		t.Fatalf("the second start got the same port %d", first)
	}
	c, err := s.dial(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "restart", worker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context) (string, error) { return "done", nil }, workflow.RegisterOptions{Name: "Quick"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A minute was the stall; 20 s is far from both it and a healthy start.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(wctx, client.StartWorkflowOptions{ID: "restart-quick", TaskQueue: "restart"}, "Quick")
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := run.Get(wctx, &out); err != nil || out != "done" {
		t.Fatalf("a workflow on the restarted server: %q, %v", out, err)
	}
}

// A first start killed while it wrote the schema left a file every later
// start refused ("no such table: namespaces"). The schema is now written
// to FILE.new and renamed when complete; an empty file is set up; a file
// without the whole schema is refused with its name and what to do, and
// kept.
func TestInterruptedFirstStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	start := func(db string) error {
		s, err := Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal"})
		if err == nil {
			s.Stop()
		}
		return err
	}
	// Killed before the rename: a partial FILE.new, no FILE.
	db := filepath.Join(dir, "killed.db")
	if err := os.WriteFile(db+".new", []byte("SQLite format 3\x00 half a schema"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := start(db); err != nil {
		t.Fatalf("a start after one killed while creating the file: %v", err)
	}
	if _, err := os.Stat(db + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.new is left: %v", db, err)
	}
	if err := start(db); err != nil {
		t.Fatalf("the start after: %v", err)
	}
	// An empty file (touched, or killed before SQLite wrote a page).
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := start(empty); err != nil {
		t.Fatalf("an empty file: %v", err)
	}
	// Part of a schema (an older build killed half-way), or not SQLite.
	partial := filepath.Join(dir, "partial.db")
	pdb, err := sql.Open("sqlite", "file:"+partial)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pdb.Exec(`CREATE TABLE namespaces(id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	pdb.Close()
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("my notes, not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{partial, other} {
		before, _ := os.ReadFile(f)
		err := start(f)
		if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "not a complete Temporal database") || !strings.Contains(err.Error(), "give another --db") {
			t.Errorf("%s: error = %v, want one naming the file, the rule and the way out", f, err)
		}
		if after, _ := os.ReadFile(f); string(after) != string(before) {
			t.Errorf("%s was changed", f)
		}
	}
}
