package claimsagent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// startIn serves an agent keeping its state in dir, on addr ("" picks a
// port); stop() stops it as Ctrl-C would.
func startIn(t *testing.T, dir, addr string) (agent *Agent, base string, stop func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	base = "http://" + ln.Addr().String()
	agent, err = Open(Config{BaseURL: base, StateDir: dir})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = agent.Serve(ctx, ln) }()
	return agent, base, func() { cancel(); <-done }
}

// A restart on the same state directory carries on: the task waiting in
// INPUT_REQUIRED takes its follow-up and completes, GetTask reads it, and
// the first message resent after the restart creates no second task.
func TestStateDirSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, base, stop := startIn(t, dir, "")
	c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
	first := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("my parcel for order B-77 was lost"))
	task := send(t, ctx, c, first)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state = %s, want INPUT_REQUIRED", task.Status.State)
	}
	stop()

	agent, base2, stop2 := startIn(t, dir, base[len("http://"):])
	defer stop2()
	if base2 != base {
		t.Fatalf("restarted at %s, want %s", base2, base)
	}
	c = dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("GetTask after restart = %v, %v; want INPUT_REQUIRED", got, err)
	}
	again := send(t, ctx, c, first)
	if again.ID != task.ID || agent.TaskCount() != 1 {
		t.Errorf("resent first message: task %s (want %s), agent tasks %d (want 1)", again.ID, task.ID, agent.TaskCount())
	}
	follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("photo attached"))
	done := send(t, ctx, c, follow)
	if done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) != 1 {
		t.Fatalf("follow-up after restart: state %s, %d artifacts; want COMPLETED with 1", done.Status.State, len(done.Artifacts))
	}
	if d, _ := done.Artifacts[0].Parts[0].Data().(map[string]any); d["order_id"] != "B-77" {
		t.Errorf("artifact data = %v, want order_id B-77 (read back from the stored task)", d)
	}
}

// A state directory holding something that is not a task is an error
// naming the file, not an agent that silently forgot its tasks.
func TestStateDirRefusesBadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "tasks", "x.json")
	for _, body := range []string{"{not json", "{}", "null"} {
		if err := os.WriteFile(bad, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(Config{BaseURL: "http://127.0.0.1:1", StateDir: dir})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Fatalf("%s: Open() error = %v, want one naming %s", body, err, bad)
		}
	}
}

// Two agents never share a state directory.
func TestStateDirLocked(t *testing.T) {
	dir := t.TempDir()
	_, _, stop := startIn(t, dir, "")
	_, err := Open(Config{BaseURL: "http://127.0.0.1:1", StateDir: dir})
	if err == nil || !strings.Contains(err.Error(), "in use by another claims agent") {
		t.Fatalf("second Open() error = %v, want the directory in use", err)
	}
	stop()
	if _, err := Open(Config{BaseURL: "http://127.0.0.1:1", StateDir: dir}); err != nil {
		t.Fatalf("Open() after the first stopped: %v", err)
	}
}

// Scenario "hang": the task is made and completed even though the caller
// gave up waiting for the answer; the same message sent again gets that
// task, not a second one.
func TestHangScenarioMakesTheTaskAnyway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agent, base := start(t, func(c *Config) { c.HangDelay = time.Hour })
	c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"scenario": "hang", "order_id": "A-1"}))
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := c.SendMessage(short, &a2a.SendMessageRequest{Message: m})
	stop()
	if err == nil {
		t.Fatal("SendMessage() answered at once; want the answer held")
	}
	deadline := time.Now().Add(10 * time.Second)
	for agent.TaskCount() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("agent tasks = %d, want 1 after the caller gave up", agent.TaskCount())
		}
		time.Sleep(10 * time.Millisecond)
	}
	again := send(t, ctx, c, m)
	if again.Status.State != a2a.TaskStateCompleted || agent.TaskCount() != 1 {
		t.Errorf("resend: state %s, agent tasks %d; want COMPLETED and 1", again.Status.State, agent.TaskCount())
	}
}
