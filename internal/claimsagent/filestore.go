package claimsagent

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// fileStore is an a2asrv task store (taskstore.Store) that keeps every
// task as a JSON file under dir/tasks, so that an agent restarted on the
// same directory still knows the tasks it created: a follow-up to a task
// waiting in INPUT_REQUIRED, GetTask and CancelTask go on as before the
// restart. It also journals which message id created or continued which
// task (dir/messages.jsonl), so that a message resent after a restart is
// still not executed twice (A2A 1.0 §3.3.1).
//
// The tasks are served from a2a-go's in-memory store, loaded from the files
// at start; each Create and Update is written through (file per task,
// replaced atomically with a rename). An execution that was running when the
// agent stopped is not resumed: its task keeps the last state written.
type fileStore struct {
	*taskstore.InMemory
	dir string

	mu      sync.Mutex // orders the writes of one store
	journal *os.File
}

// openFileStore opens (creating it when missing) the state directory dir,
// loads the tasks stored there, and returns the message journal's entries
// (message id → task id) for the idempotency table.
func openFileStore(dir string) (*fileStore, map[string]a2a.TaskID, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o700); err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	s := &fileStore{InMemory: taskstore.NewInMemory(nil), dir: dir}
	files, err := filepath.Glob(filepath.Join(dir, "tasks", "*.json"))
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("state dir: %w", err)
		}
		var t a2a.Task
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, nil, fmt.Errorf("state dir: %s: %w", f, err)
		}
		if _, err := s.InMemory.Create(context.Background(), &t); err != nil {
			return nil, nil, fmt.Errorf("state dir: %s: %w", f, err)
		}
	}
	seen := map[string]a2a.TaskID{}
	jpath := filepath.Join(dir, "messages.jsonl")
	if f, err := os.Open(jpath); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e journalEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.MessageID != "" && e.TaskID != "" {
				seen[e.MessageID] = a2a.TaskID(e.TaskID)
			}
		}
		_ = f.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	if s.journal, err = os.OpenFile(jpath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	return s, seen, nil
}

type journalEntry struct {
	MessageID string `json:"message_id"`
	TaskID    string `json:"task_id"`
}

// Create implements taskstore.Store.
func (s *fileStore) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.InMemory.Create(ctx, task)
	if err != nil {
		return v, err
	}
	return v, s.write(task)
}

// Update implements taskstore.Store.
func (s *fileStore) Update(ctx context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.InMemory.Update(ctx, req)
	if err != nil {
		return v, err
	}
	return v, s.write(req.Task)
}

// write replaces the task's file. File names are a digest of the task id,
// so no id can name a path outside dir.
func (s *fileStore) write(t *a2a.Task) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(t.ID))
	final := filepath.Join(s.dir, "tasks", hex.EncodeToString(sum[:16])+".json")
	tmp := final + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// remember journals that message id created or continued task id.
func (s *fileStore) remember(messageID string, taskID a2a.TaskID) {
	b, _ := json.Marshal(journalEntry{MessageID: messageID, TaskID: string(taskID)})
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.journal.Write(append(b, '\n'))
}

// Close closes the journal.
func (s *fileStore) Close() error { return s.journal.Close() }
