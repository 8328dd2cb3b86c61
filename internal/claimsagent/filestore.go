package claimsagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// fileStore is an a2asrv task store (taskstore.Store) that keeps every
// task as a JSON file under dir/tasks, so that an agent restarted on the
// same directory still knows the tasks it created: a follow-up to a task
// waiting in INPUT_REQUIRED, GetTask and CancelTask go on as before the
// restart, and a message sent again is not executed twice (A2A 1.0
// §3.3.1): the user messages in the stored tasks' histories say which
// message id created or continued which task. A task is written when it is
// created, before the agent answers, so even an agent killed mid-send knows
// the task after a restart.
//
// The tasks are served from a2a-go's in-memory store, loaded from the files
// at start; each Create and Update is written through (file per task,
// replaced atomically with a rename). One agent at a time: the directory is
// locked (flock on dir/lock) while the store is open. An execution that
// was running when the agent stopped is not resumed: its task keeps the
// last state written.
type fileStore struct {
	*taskstore.InMemory
	dir  string
	lock *os.File

	mu sync.Mutex // orders the writes of one store
}

// storeConfig is the task store's configuration: every caller is one user
// ("caller"), so that ListTasks (A2A 1.0 §3.1.4), which a2a-go's in-memory
// store refuses to an anonymous caller, lists the tasks; the agent has no
// users of its own (RequireBearer is one token for all).
func storeConfig() *taskstore.InMemoryStoreConfig {
	return &taskstore.InMemoryStoreConfig{Authenticator: func(context.Context) (string, error) { return "caller", nil }}
}

// openFileStore opens (creating it when missing) the state directory dir,
// locks it, loads the tasks stored there, and returns the message ids of
// their histories (message id → task id) for the idempotency table.
// Errors: the directory cannot be created, read or locked (another agent
// uses it), or a file under dir/tasks is not a task with an id.
func openFileStore(dir string) (*fileStore, map[string]a2a.TaskID, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o700); err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, nil, fmt.Errorf("state dir %s is in use by another claims agent (%v)", dir, err)
	}
	s := &fileStore{InMemory: taskstore.NewInMemory(storeConfig()), dir: dir, lock: lock}
	fail := func(err error) (*fileStore, map[string]a2a.TaskID, error) {
		_ = s.Close()
		return nil, nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "tasks", "*.json"))
	if err != nil {
		return fail(err)
	}
	seen := map[string]a2a.TaskID{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fail(fmt.Errorf("state dir: %w", err))
		}
		var t a2a.Task
		if err := json.Unmarshal(b, &t); err != nil {
			return fail(fmt.Errorf("state dir: %s: %w", f, err))
		}
		if t.ID == "" {
			return fail(fmt.Errorf("state dir: %s: not a task (no id)", f))
		}
		if _, err := s.InMemory.Create(context.Background(), &t); err != nil {
			return fail(fmt.Errorf("state dir: %s: %w", f, err))
		}
		for _, m := range t.History {
			if m != nil && m.Role == a2a.MessageRoleUser && m.ID != "" {
				seen[m.ID] = t.ID
			}
		}
	}
	return s, seen, nil
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

// Close releases the directory's lock.
func (s *fileStore) Close() error { return s.lock.Close() }
