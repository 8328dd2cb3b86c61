package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/mcp"
)

// mcpMaxBody bounds one HTTP request body and one stdio frame (1 MiB):
// arguments are bounded again, at mcp.MaxArgumentBytes, before decoding.
const mcpMaxBody = 1 << 20

func newMCPCmd(cf *clientFlags) *cobra.Command {
	var templatesFile, actor, addr, tokensFile, issuer, audience string
	var stdio bool
	cmd := &cobra.Command{
		Use:   "mcp --templates FILE (--stdio --actor NAME | --addr HOST:PORT [--tokens FILE] [--issuer URL --audience A])",
		Short: "Serve delegations as MCP tools to agent runtimes, under an operator's templates",
		Long: `Serve the Model Context Protocol (MCP 2025-11-25; go-sdk) so that an agent runtime
can start delegations from an operator's templates, follow them, answer them and
cancel them. Each template of --templates is one tool; the fixed tools are
delegation_status, delegation_list, delegation_cancel and delegation_answer
(docs/mcp.md). A model never names an agent, a skill, an output, a deadline or an
authority: the template does.

Exactly one transport:
  --stdio --actor NAME     for a desktop client that launches this command; every
                           call acts as NAME
  --addr HOST:PORT         Streamable HTTP at /mcp; every request carries a bearer
                           token: --tokens FILE (token hashes and their actors, read
                           again when the file changes) and/or --issuer URL
                           --audience A (JWT access tokens of an OAuth issuer; the
                           actor is the token's sub)

It needs Temporal access only (the connection flags, profile and encryption keys of
every command), no agent credentials.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if templatesFile == "" {
				return usageErr(errors.New("--templates FILE is required (docs/mcp.md)"))
			}
			if stdio == (addr != "") {
				return usageErr(errors.New("give exactly one transport: --stdio (with --actor) or --addr HOST:PORT"))
			}
			if stdio {
				if actor == "" {
					return usageErr(errors.New("--actor NAME is required with --stdio: every call acts as NAME"))
				}
				if !dclient.ValidStarter(actor) {
					return usageErr(fmt.Errorf("--actor: %s", dclient.StarterRule))
				}
				if tokensFile != "" || issuer != "" || audience != "" {
					return usageErr(errors.New("--tokens, --issuer and --audience are for --addr (HTTP); over --stdio the actor is --actor"))
				}
			} else {
				if actor != "" {
					return usageErr(errors.New("--actor is for --stdio; over HTTP the actor comes from each request's bearer token (--tokens or --issuer)"))
				}
				if tokensFile == "" && issuer == "" {
					return usageErr(errors.New("--addr needs --tokens FILE and/or --issuer URL --audience A: every request must carry a bearer token"))
				}
				if (issuer == "") != (audience == "") {
					return usageErr(errors.New("--issuer and --audience go together"))
				}
			}
			templates, err := mcp.LoadTemplates(templatesFile)
			if err != nil {
				return usageErr(fmt.Errorf("--templates: %w", err))
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			var tokens *mcp.Tokens
			if tokensFile != "" {
				if tokens, err = mcp.NewTokens(tokensFile, logger); err != nil {
					return usageErr(fmt.Errorf("--tokens: %w", err))
				}
			}
			var oidc *mcp.OIDC
			if issuer != "" {
				if oidc, err = mcp.NewOIDC(cmd.Context(), issuer, audience); err != nil {
					return usageErr(err)
				}
			}
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				// A namespace without DelegationStarter would refuse every
				// start: say so now. A server that does not let this caller
				// list search attributes (Temporal Cloud with an API key of
				// a narrow role) is only warned about.
				if err := mcp.CheckSearchAttribute(ctx, c, cf.namespace); errors.Is(err, mcp.ErrNoStarterAttribute) {
					return temporalErr(err)
				} else if err != nil {
					logger.Warn("could not check the search attribute DelegationStarter", "err", err)
				}
				srv, err := mcp.New(mcp.Options{Client: c, Namespace: cf.namespace, Templates: templates, Actor: actor, Logger: logger, Version: version()})
				if err != nil {
					return usageErr(err)
				}
				if stdio {
					// Standard output carries the protocol: nothing else is
					// written to it.
					return srv.ServeStdio(ctx, mcpMaxBody)
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return usageErr(fmt.Errorf("--addr: %w", err))
				}
				base := "http://" + ln.Addr().String()
				mux := srv.Mux(base, mcp.Verifier(tokens, oidc), issuer, mcpMaxBody)
				modes := []string{}
				if tokens != nil {
					modes = append(modes, "tokens "+tokensFile)
				}
				if oidc != nil {
					modes = append(modes, "OAuth issuer "+issuer+" audience "+audience)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "MCP (Streamable HTTP) on %s/mcp; bearer tokens: %s; %d template tool(s)\n", base, strings.Join(modes, ", "), len(templates))
				// No write timeout: a tool call's response streams (SSE) for
				// as long as a human takes to answer an elicitation form
				// (mcp.ElicitTimeout at most); bodies are bounded in size.
				hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
				go func() {
					<-ctx.Done()
					_ = hs.Close()
				}()
				if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&templatesFile, "templates", "", "templates file (JSON): what a model may start, one tool each (docs/mcp.md)")
	cmd.Flags().BoolVar(&stdio, "stdio", false, "serve MCP over standard input and output (with --actor)")
	cmd.Flags().StringVar(&actor, "actor", "", "with --stdio: who every call acts as (recorded as the starter and as answered_by)")
	cmd.Flags().StringVar(&addr, "addr", "", "serve MCP over Streamable HTTP at http://HOST:PORT/mcp")
	cmd.Flags().StringVar(&tokensFile, "tokens", "", `with --addr: bearer tokens file {"tokens": [{"actor": "alice", "sha256": "<hex sha256 of the token>"}]}, read again when it changes`)
	cmd.Flags().StringVar(&issuer, "issuer", "", "with --addr: OAuth 2.0 / OpenID Connect issuer whose JWT access tokens are accepted (keys from its discovery document); the actor is the token's sub")
	cmd.Flags().StringVar(&audience, "audience", "", "with --issuer: the audience (aud) a token must carry")
	return cmd
}
