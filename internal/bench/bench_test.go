package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2adelegate/delegate/internal/testutil"
)

// The bench runs on a Temporal server on PostgreSQL (make test-postgres,
// scripts/with-postgres.sh): the same measurements, a few operations each,
// and a delegation costs the same history there.
func TestBenchOnPostgres(t *testing.T) {
	url := testutil.PostgresURL(t)
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{N: 6, Concurrency: 3, Latency: 3, Postgres: url + "_bench", Only: "postgres", CPUProfileDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pg := res.Servers["postgres"]
	if pg == nil {
		t.Fatalf("no postgres figures: %+v", res.Servers)
	}
	for name, p := range map[string]Pair{"raw": pg.Raw, "trivial": pg.Trivial, "delegate": pg.Delegate} {
		if p.C1.Errors+p.CN.Errors > 0 || p.C1.P50ms <= 0 {
			t.Errorf("%s: %+v", name, p)
		}
	}
	if h := pg.HistoryEvents; h.Completed > 12 || h.OneInputRound > 26 {
		t.Errorf("history on PostgreSQL: %+v, want <= 12 and <= 26", h)
	}
	// --cpuprofile: both kinds at concurrency C, each over a window that
	// holds its measurement (the worker ran in this process: no
	// worker.pprof, and the error says why).
	want := map[string]bool{"server.pprof": true, "trivial-server.pprof": true}
	if p := res.CPUProfile; p == nil || len(p.Files) != 2 || !want[p.Files[0]] || !want[p.Files[1]] || p.Seconds < 1 || p.TrivialSeconds < 1 ||
		!strings.Contains(p.Error, "trivial-worker.pprof: the worker ran in the bench process") {
		t.Errorf("cpu profile: %+v, want server.pprof and trivial-server.pprof", p)
	} else {
		for _, f := range p.Files {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	if _, ok := res.Servers["embedded"]; ok {
		t.Error(`Only "postgres" also measured the embedded server`)
	}
	if res.Settings["server"] != pg.Settings["server"] || res.HistoryEvents != pg.HistoryEvents {
		t.Errorf("top level %v, want the PostgreSQL figures with Only \"postgres\"", res.Settings)
	}
}
