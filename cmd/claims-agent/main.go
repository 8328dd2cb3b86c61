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
	stateDir := flag.String("state-dir", "", "keep tasks in files in this directory, so a restart carries on with them (default: in memory)")
	grpcAddr := flag.String("grpc-addr", "", "host:port to serve the gRPC interface on (A2A 1.0 §10), listed in the card as GRPC at that address (default: none)")
	grpcOnly := flag.Bool("grpc-only", false, "with --grpc-addr: the card lists only the gRPC interfaces (the HTTP interfaces still serve), so a client must use gRPC")
	stubborn := flag.Duration("stubborn-delay", 2*time.Minute, "how long a \"stubborn\" task works before it completes")
	think := flag.Duration("think-delay", claimsagent.DefaultThinkDelay, "how long a \"think\" task works inside the send before it completes")
	flag.Usage = usage
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "claims-agent: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	cfg := claimsagent.Config{WorkDelay: *delay, StubbornDelay: *stubborn, ThinkDelay: *think, StateDir: *stateDir, AuthToken: os.Getenv("CLAIMS_AGENT_AUTH_TOKEN")}
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
	var gln net.Listener
	if *grpcAddr != "" {
		if gln, err = net.Listen("tcp", *grpcAddr); err != nil {
			fmt.Fprintln(os.Stderr, "claims-agent: --grpc-addr:", err)
			os.Exit(1)
		}
		cfg.GRPCURL = gln.Addr().String()
		cfg.GRPCOnly = *grpcOnly
	} else if *grpcOnly {
		fmt.Fprintln(os.Stderr, "claims-agent: --grpc-only needs --grpc-addr")
		os.Exit(2)
	}
	agent, err := claimsagent.Open(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claims-agent: --state-dir:", err)
		os.Exit(1)
	}
	fmt.Printf("claims agent: card at %s/.well-known/agent-card.json\n", base)
	if gln != nil {
		fmt.Printf("claims agent: gRPC at %s\n", cfg.GRPCURL)
		go func() {
			if err := agent.ServeGRPC(ctx, gln); err != nil {
				fmt.Fprintln(os.Stderr, "claims-agent: gRPC:", err)
				os.Exit(1)
			}
		}()
	}
	if err := agent.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "claims-agent:", err)
		os.Exit(1)
	}
}

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprint(out, `claims-agent: an example A2A 1.0 agent (a2a-go's server) that opens claims for lost parcels.

It serves its Agent Card at /.well-known/agent-card.json (skill "open-claim"), JSON-RPC at
/a2a/jsonrpc, HTTP+JSON at /a2a/rest and A2A 0.3 JSON-RPC at /a2a/v0.3/jsonrpc; with
--grpc-addr, gRPC (A2A 1.0) at that address too (--grpc-only: the card lists only it; a gRPC
interface's origin is http://ADDR, which a worker's trust store must allow with interface_origins and
under which its credentials are filed: docs/trust.md).

Scenarios: the data field "scenario" of a delegation's message picks one
(contracts/examples/ has a contract for each; docs/claims-agent.md says what to try):

`)
	for _, s := range claimsagent.Scenarios {
		fmt.Fprintf(out, "  %-12s %s\n", s.Name, s.Does)
	}
	fmt.Fprint(out, `
Environment: CLAIMS_AGENT_AUTH_TOKEN is the bearer token scenario "auth" waits for.

Flags:
`)
	flag.PrintDefaults()
}
