package bench

import (
	"context"
	"testing"

	"github.com/a2adelegate/delegate/internal/testutil"
)

// The bench runs on a Temporal server on PostgreSQL (make test-postgres,
// scripts/with-postgres.sh): the same measurements, a few operations each,
// and a delegation costs the same history there.
func TestBenchOnPostgres(t *testing.T) {
	url := testutil.PostgresURL(t)
	res, err := Run(context.Background(), Config{N: 6, Concurrency: 3, Latency: 3, Postgres: url + "_bench", Only: "postgres"})
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
	if h := pg.HistoryEvents; h.Completed > 14 || h.OneInputRound > 28 {
		t.Errorf("history on PostgreSQL: %+v, want <= 14 and <= 28", h)
	}
	if _, ok := res.Servers["embedded"]; ok {
		t.Error(`Only "postgres" also measured the embedded server`)
	}
	if res.Settings["server"] != pg.Settings["server"] || res.HistoryEvents != pg.HistoryEvents {
		t.Errorf("top level %v, want the PostgreSQL figures with Only \"postgres\"", res.Settings)
	}
}
