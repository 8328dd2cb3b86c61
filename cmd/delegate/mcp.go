package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
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
	var templatesFile, actor, addr, tokensFile, issuer, audience, resourceURL string
	var allowedOrigins []string
	var stdio bool
	cmd := &cobra.Command{
		Use:   "mcp --templates FILE (--stdio --actor NAME | --addr HOST:PORT [--tokens FILE] [--issuer URL --audience A] [--resource-url URL] [--allowed-origins O,...])",
		Short: "Serve delegations as MCP tools to agent runtimes, under an operator's templates",
		Long: `Serve the Model Context Protocol (MCP 2026-07-28, 2025-11-25 and the versions before
them; go-sdk) so that an agent runtime
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
                           actor is the token's sub). --resource-url URL is the URL
                           clients reach /mcp at (default http://ADDR/mcp), which
                           the OAuth protected resource metadata names
                           (/.well-known/oauth-protected-resource/mcp) and which
                           is an accepted audience too; a request whose Origin
                           header is not the resource's, a loopback one (when
                           ADDR is loopback) or one of --allowed-origins is
                           refused (403)

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
				if tokensFile != "" || issuer != "" || audience != "" || resourceURL != "" || len(allowedOrigins) > 0 {
					return usageErr(errors.New("--tokens, --issuer, --audience, --resource-url and --allowed-origins are for --addr (HTTP); over --stdio the actor is --actor"))
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
				if resourceURL != "" {
					if err := mcp.CheckResourceURL(resourceURL); err != nil {
						return usageErr(fmt.Errorf("--resource-url %w", err))
					}
				}
				if _, err := mcp.ParseOrigins(allowedOrigins); err != nil {
					return usageErr(fmt.Errorf("--allowed-origins: %w", err))
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
			// Listen before the issuer is asked: the default resource URL
			// (an accepted audience) is the address bound.
			var ln net.Listener
			if !stdio {
				if ln, err = net.Listen("tcp", addr); err != nil {
					return usageErr(fmt.Errorf("--addr: %w", err))
				}
				defer ln.Close()
				if resourceURL == "" {
					resourceURL = defaultResourceURL(addr, ln.Addr().(*net.TCPAddr))
					if ln.Addr().(*net.TCPAddr).IP.IsUnspecified() {
						logger.Warn("--addr listens on every interface and no --resource-url is given: the resource URL (named by the OAuth metadata, an accepted audience) is "+resourceURL+", which only local clients reach; give --resource-url, the URL clients reach /mcp at", "addr", addr)
					}
				}
			}
			var oidc *mcp.OIDC
			if issuer != "" {
				if oidc, err = mcp.NewOIDC(cmd.Context(), issuer, audience, resourceURL); err != nil {
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
				loopback := ln.Addr().(*net.TCPAddr).IP.IsLoopback()
				mux, err := srv.Mux(mcp.HTTPOptions{ResourceURL: resourceURL, Verify: mcp.Verifier(tokens, oidc), Issuer: issuer,
					AllowedOrigins: allowedOrigins, LoopbackOrigins: loopback, MaxBody: mcpMaxBody})
				if err != nil {
					return usageErr(err)
				}
				base := "http://" + ln.Addr().String()
				modes := []string{}
				if tokens != nil {
					modes = append(modes, "tokens "+tokensFile)
				}
				if oidc != nil {
					modes = append(modes, "OAuth issuer "+issuer+" audience "+audience)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "MCP (Streamable HTTP) on %s/mcp; bearer tokens: %s; %d template tool(s)\n", base, strings.Join(modes, ", "), len(templates))
				fmt.Fprintf(cmd.OutOrStdout(), "resource %s; its OAuth metadata %s\n", resourceURL, mcp.MetadataURL(resourceURL))
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
	cmd.Flags().StringVar(&audience, "audience", "", "with --issuer: the audience (aud) a token must carry (or the resource URL)")
	cmd.Flags().StringVar(&resourceURL, "resource-url", "", "with --addr: the URL clients reach the MCP endpoint at (default http://ADDR/mcp; behind a proxy, the proxy's): named by the OAuth protected resource metadata and every 401, an accepted audience with --issuer, an allowed Origin")
	cmd.Flags().StringSliceVar(&allowedOrigins, "allowed-origins", nil, "with --addr: origins (scheme://host[:port], comma-separated or repeated) a request's Origin header may name besides the resource URL's and, when ADDR is loopback, loopback ones; any other is refused with 403 (a request without Origin is served)")
	return cmd
}

// defaultResourceURL is the resource URL of an MCP server listening at
// bound for --addr addr: http://HOST:PORT/mcp, HOST as --addr names it
// (localhost stays localhost, the audience a client that was given
// http://localhost:PORT/mcp asks for), localhost when --addr names no host
// or every interface, PORT the one bound (--addr HOST:0).
func defaultResourceURL(addr string, bound *net.TCPAddr) string {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(bound.Port)) + "/mcp"
}
