package devserver

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"go.temporal.io/server/common/config"
)

// The internal ports that follow --port skip the UI's port, so that
// --ui-port P+1 works next to --port P.
func TestInternalPortsSkipTheUIPort(t *testing.T) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := serverConfig(Config{IP: "127.0.0.1", Port: port, UIPort: port + 1}, &config.SQL{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range cfg.Services {
		for _, p := range []int{s.RPC.GRPCPort, s.RPC.MembershipPort} {
			if p == port+1 {
				t.Errorf("service %s uses port %d, the UI's", name, p)
			}
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
