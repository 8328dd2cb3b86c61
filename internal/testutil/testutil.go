package testutil

import (
	"bytes"
	"os"
	"sync"
	"testing"
)

// LockedBuffer is a bytes.Buffer safe for concurrent writes (a server's
// log, a child process's output) and reads.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// PostgresURL is the PostgreSQL server of `make test-postgres`
// (scripts/with-postgres.sh: DELEGATE_POSTGRES_URL,
// postgres://USER@HOST:PORT/DB). Without it the test is skipped, unless
// DELEGATE_REQUIRE_POSTGRES=1 makes that a failure.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DELEGATE_POSTGRES_URL")
	if u == "" {
		if os.Getenv("DELEGATE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("DELEGATE_POSTGRES_URL is not set (run make test-postgres)")
		}
		t.Skip("no PostgreSQL server: make test-postgres runs this")
	}
	return u
}

// EmptyFile is a new empty file (for example a Temporal config file that
// keeps a user's own out of a test).
func EmptyFile(t testing.TB) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "empty-*")
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return f.Name()
}
