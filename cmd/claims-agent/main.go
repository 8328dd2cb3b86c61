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

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "host:port to listen on")
	publicURL := flag.String("public-url", "", "the URL clients reach the agent at, written in its card (default http://ADDR)")
	delay := flag.Duration("work-delay", 500*time.Millisecond, "how long the agent works between states")
	signKey := flag.String("sign-key", "", "private JWK file: sign the served card and serve the public key at /.well-known/jwks.json")
	kid := flag.String("kid", "", "key id of --sign-key (required with it)")
	jku := flag.String("jku", "", "JWK Set URL to name in the signature's protected header")
	flag.Parse()
	cfg := claimsagent.Config{WorkDelay: *delay}
	if *signKey != "" {
		if *kid == "" {
			fmt.Fprintln(os.Stderr, "claims-agent: --kid is required with --sign-key")
			os.Exit(2)
		}
		key, err := cards.LoadSigningKey(*signKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "claims-agent: --sign-key:", err)
			os.Exit(2)
		}
		cfg.SignKey, cfg.KeyID, cfg.JKU = key, *kid, *jku
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claims-agent:", err)
		os.Exit(1)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	base := "http://" + ln.Addr().String()
	if *publicURL != "" {
		base = *publicURL
	}
	cfg.BaseURL, cfg.Logger = base, logger
	agent := claimsagent.New(cfg)
	fmt.Printf("claims agent: card at %s/.well-known/agent-card.json\n", base)
	if err := agent.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "claims-agent:", err)
		os.Exit(1)
	}
}
