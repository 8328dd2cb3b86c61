package devserver

import (
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
