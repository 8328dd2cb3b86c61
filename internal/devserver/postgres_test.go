package devserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/internal/testutil"
)

// On a new PostgreSQL database the server sets up both schemas with its
// own schema tool, registers the namespace and the search attributes; a
// second start on the same database finds them and starts too.
func TestPostgresServer(t *testing.T) {
	base := testutil.PostgresURL(t)
	ctx := context.Background()
	url := strings.TrimSuffix(base, "/temporal") + "/devserver_test"
	for i := range 2 {
		srv, err := Start(ctx, Config{Postgres: url, UIPort: -1, SearchAttributes: []string{"A2AState"}, LogLevel: "fatal"})
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Logger: quietLogger{}})
		if err != nil {
			srv.Stop()
			t.Fatal(err)
		}
		resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
		c.Close()
		srv.Stop()
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		if _, ok := resp.GetCustomAttributes()["A2AState"]; !ok {
			t.Fatalf("start %d: search attribute A2AState missing: %v", i+1, resp.GetCustomAttributes())
		}
	}
}

// A --server URL that is not postgres://USER@HOST:PORT/DB is refused with
// the rule, and a password never shows in the error.
func TestPostgresURLErrors(t *testing.T) {
	for _, raw := range []string{"mysql://u@h:1/db", "postgres://u:secret@h/db", "postgres://u:secret@h:5432/", "postgres://u@h:5432/a/b", "postgres://:secret@h:1/db", "postgres://u:secret@h:99999/db"} {
		_, _, err := postgresConfigs(raw)
		if err == nil {
			t.Errorf("%s: accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "USER@HOST:PORT/DB") {
			t.Errorf("%s: error %q", raw, err)
		}
	}
	// The rule broken is named: a database name with a "/" was called
	// missing, and port 99999 got through to the dial (exit 3).
	for raw, want := range map[string]string{
		"postgres://u@h:5432/a/b":        `database name "a/b" has a "/"`,
		"postgres://u:secret@h:99999/db": `port "99999" is not a TCP port, 1 to 65535`,
		// A parameter the driver refuses failed only at the dial (exit 3).
		"postgres://u:secret@h:5432/db?sslmode=bogus":        `wrong value for "sslmode": "bogus" is not supported; supported values are disable`,
		"postgres://u:secret@h:5432/db?connect_timeout=soon": `wrong value for "connect_timeout"`,
	} {
		if _, _, err := postgresConfigs(raw); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
	s, v, err := postgresConfigs("postgres://temporal:pw@127.0.0.1:5432/temporal?sslmode=disable")
	if err != nil || s.DatabaseName != "temporal" || v.DatabaseName != "temporal_visibility" || s.Password != "pw" || s.ConnectAttributes["sslmode"] != "disable" {
		t.Errorf("configs %+v %+v %v", s, v, err)
	}
}

// A server that cannot be reached is reported with its address and
// PostgreSQL's (or the network's) own reason.
func TestPostgresUnreachable(t *testing.T) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Config{Postgres: fmt.Sprintf("postgres://temporal@127.0.0.1:%d/temporal", port), UIPort: -1})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", port)) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("error = %v, want the address and the connection refused", err)
	}
}

// A second server on the same PostgreSQL database, on other ports (every
// bench run and test picks its own), runs a workflow at once: the members
// the first recorded are removed under the database's lock (they were
// waited on for about a minute). While one server holds the database,
// another does not join it: it waits, then says who holds it.
func TestPostgresRestartOnOtherPorts(t *testing.T) {
	base := testutil.PostgresURL(t)
	ctx := context.Background()
	url := strings.TrimSuffix(base, "/temporal") + "/devserver_restart_test"
	for i := range 2 {
		srv, err := Start(ctx, Config{Postgres: url, UIPort: -1, LogLevel: "fatal"})
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		if i == 1 {
			store, _, err := postgresConfigs(url)
			if err != nil {
				t.Fatal(err)
			}
			if db, err := lockPostgres(ctx, store, time.Second); err == nil || !strings.Contains(err.Error(), "in use by another embedded server") {
				if db != nil {
					db.Close()
				}
				t.Errorf("a second lock while a server runs: %v, want refused", err)
			}
		}
		c, err := srv.dial(ctx, "default")
		if err != nil {
			srv.Stop()
			t.Fatal(err)
		}
		w := worker.New(c, "pg-restart", worker.Options{})
		w.RegisterWorkflowWithOptions(func(workflow.Context) (string, error) { return "done", nil }, workflow.RegisterOptions{Name: "Quick"})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		// A minute was the stall; 20 s is far from both it and a healthy start.
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		run, err := c.ExecuteWorkflow(wctx, client.StartWorkflowOptions{ID: fmt.Sprintf("pg-restart-%d", i), TaskQueue: "pg-restart"}, "Quick")
		var out string
		if err == nil {
			err = run.Get(wctx, &out)
		}
		cancel()
		w.Stop()
		c.Close()
		srv.Stop()
		if err != nil || out != "done" {
			t.Fatalf("start %d: a workflow: %q, %v", i+1, out, err)
		}
	}
}
