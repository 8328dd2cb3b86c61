// Command claims-agent serves the example A2A claims agent
// (internal/claimsagent): the Agent Card at /.well-known/agent-card.json,
// JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/a2adelegate/delegate/internal/claimsagent"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "host:port to listen on")
	delay := flag.Duration("work-delay", 500*time.Millisecond, "how long the agent works between states")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claims-agent:", err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	base := "http://" + ln.Addr().String()
	agent := claimsagent.New(claimsagent.Config{BaseURL: base, WorkDelay: *delay, Logger: logger})
	fmt.Printf("claims agent: card at %s/.well-known/agent-card.json\n", base)
	if err := agent.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "claims-agent:", err)
		os.Exit(1)
	}
}
