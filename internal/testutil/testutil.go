package testutil

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
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
		SkipGroup(t, GroupPostgres, "no PostgreSQL server: make test-postgres runs this")
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

// Trickle writes s to w, flushed, every interval, n times (n < 0: until
// the client goes), as a hostile agent that holds a reply open does. It
// returns when a write fails or r's context ends.
func Trickle(w http.ResponseWriter, r *http.Request, s string, every time.Duration, n int) {
	for i := 0; n < 0 || i < n; i++ {
		if _, err := io.WriteString(w, s); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(every):
		}
	}
}
