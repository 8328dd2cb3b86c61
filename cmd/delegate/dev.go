//go:build !worker

package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/nexusop"
)

func newDevCmd(cf *clientFlags) *cobra.Command {
	var cfg devserver.Config
	var codecPort int
	var noWorker bool
	var dynamicConfigFile string
	var wf workerFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run an embedded Temporal server (SQLite) with the Temporal UI and the worker",
		Long: `Run a development Temporal server in this process: SQLite persistence in
.delegate/temporal.db (or in memory with --memory), the frontend on 127.0.0.1:7233,
the Temporal UI on 127.0.0.1:8233, namespace "default" with the search attributes
A2AState, A2AAgent, A2ARemoteTaskId, A2APurpose, DelegationStarter and DelegationCodeVersion,
the Nexus endpoint "delegate" (target: that namespace, task queue delegate: workflows in
other namespaces of this server delegate through it, docs/backends.md), and the worker.
Ctrl-C shuts down cleanly; a restart on the same --db carries on with the
open delegations.

Ports: --port (the frontend, what clients dial), --ui-port, and --codec-port when
payloads are encrypted. Besides those, the server's own services listen on seven
more on 127.0.0.1 (the frontend's membership port; the gRPC and membership ports
of history, matching and worker): free ports in 20000-31999 chosen at each start
(never next to --port), printed at startup; nothing outside this process uses them.
The frontend's HTTP API, which Nexus goes through, takes one more such port (printed on
the "Nexus endpoint" line).
No metrics or pprof port is opened unless --metrics-addr / --debug-addr is given.

The server runs with dynamic config chosen for one host (docs/performance.md);
--dynamic-config FILE takes Temporal's own dynamic-config YAML, key by key over it.

With --encryption-key-file (or DELEGATE_ENCRYPTION_KEYS) the worker seals every
payload, and a codec server on 127.0.0.1:--codec-port lets the UI show them decoded
(docs/trust.md); the CLI needs the same keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger, err := wf.logger()
			if err != nil {
				return err
			}
			if dynamicConfigFile != "" {
				dc, err := devserver.LoadDynamicConfig(dynamicConfigFile)
				if err != nil {
					return usageErr(err)
				}
				cfg.DynamicConfig = dc
			}
			keys, err := codec.FromFileOrEnv(cf.conn.EncryptionKeyFile)
			if err != nil {
				return usageErr(err)
			}
			codecUsed := -1 // no codec server without keys
			if keys != nil {
				codecUsed = codecPort
			}
			if err := checkPorts(cfg, codecUsed); err != nil {
				return err
			}
			if _, err := wf.pushSettings(); err != nil {
				return err // checked before anything starts
			}
			var uiOrigin, uiLocalhost atomic.Value // the UI's origin (and as localhost), once it listens
			if keys != nil {
				ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(codecPort)))
				if err != nil {
					return temporalErr(fmt.Errorf("--codec-port %d: %w", codecPort, err))
				}
				cs := publicServer(codec.Handler(keys, codec.ServerOptions{AllowOrigin: func(o string) bool { return o == uiOrigin.Load() || o == uiLocalhost.Load() }}))
				go func() { _ = cs.Serve(ln) }()
				defer cs.Close()
				cfg.CodecEndpoint = "http://" + ln.Addr().String()
			}
			cfg.SearchAttributes = contracts.SearchAttributeNames
			srv, err := devserver.Start(ctx, cfg)
			if err != nil {
				return temporalErr(err)
			}
			defer srv.Stop()
			where := "in memory"
			if !cfg.Memory {
				where = cfg.DBPath
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Temporal server %s (namespace %q, %s)\n", srv.FrontendAddr(), srv.Namespace(), where)
			fmt.Fprintln(cmd.OutOrStdout(), internalPortsLine(srv.InternalPorts()))
			// Nexus: workflows in other namespaces of this server delegate
			// through endpoint "delegate" (nexusop; docs/backends.md).
			if err := srv.EnsureNexusEndpoint(ctx, nexusop.Endpoint, srv.Namespace(), contracts.TaskQueue); err != nil {
				return temporalErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Nexus endpoint  %q (service %q, operation %q; HTTP API %s)\n", nexusop.Endpoint, nexusop.Service, nexusop.Operation, srv.HTTPAddr())
			if u := srv.UIURL(); u != "" {
				uiOrigin.Store(strings.TrimSuffix(u, "/"))
				uiLocalhost.Store(strings.Replace(strings.TrimSuffix(u, "/"), "127.0.0.1", "localhost", 1))
				fmt.Fprintf(cmd.OutOrStdout(), "Temporal UI     %s\n", u)
			}
			if keys != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "Codec server    %s (payloads sealed with key %q)\n", cfg.CodecEndpoint, keys.IDs()[len(keys.IDs())-1])
			}
			if dynamicConfigFile != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "Dynamic config  %d settings from %s over the one-host defaults\n", len(cfg.DynamicConfig), dynamicConfigFile)
			}
			if noWorker {
				<-ctx.Done()
				return nil
			}
			own, err := srv.ClientOptions()
			if err != nil {
				return temporalErr(err)
			}
			if keys != nil {
				own.DataConverter, own.FailureConverter = keys.DataConverter(), keys.FailureConverter()
			}
			opts, err := wf.clientOptions(ctx, own, logger)
			if err != nil {
				return err
			}
			c, err := client.DialContext(ctx, opts)
			if err != nil {
				return temporalErr(err)
			}
			defer c.Close()
			return runWorker(ctx, c, opts.Namespace, wf, logger)
		},
	}
	cmd.Flags().StringVar(&cfg.DBPath, "db", ".delegate/temporal.db", "SQLite file")
	cmd.Flags().BoolVar(&cfg.Memory, "memory", false, "keep everything in memory (lost at exit)")
	cmd.Flags().IntVar(&cfg.Port, "port", 7233, "frontend gRPC port")
	cmd.Flags().IntVar(&cfg.UIPort, "ui-port", 8233, "Temporal UI port (-1: no UI)")
	cmd.Flags().BoolVar(&noWorker, "no-worker", false, "do not run the worker in this process")
	cmd.Flags().StringVar(&dynamicConfigFile, "dynamic-config", "", "Temporal dynamic-config YAML file, over the one-host defaults (docs/performance.md)")
	cmd.Flags().IntVar(&codecPort, "codec-port", 8234, "port of the codec server the UI uses when payloads are encrypted (0: any free port)")
	cmd.Flags().StringVar(&cfg.LogLevel, "server-log-level", "fatal", "log level of the embedded Temporal server (to stderr): debug, info, warn, error, fatal")
	wf.add(cmd)
	return cmd
}

// internalPortsLine is the startup line that names the embedded server's
// internal ports (devserver.Server.InternalPorts).
func internalPortsLine(ps []devserver.ServicePort) string {
	hosts := map[string]bool{}
	var ports []string
	for _, p := range ps {
		h, port, _ := net.SplitHostPort(p.Addr)
		hosts[h] = true
		ports = append(ports, port)
	}
	where := "127.0.0.1"
	if len(hosts) > 1 || (len(hosts) == 1 && !hosts["127.0.0.1"]) {
		ports = ports[:0]
		for _, p := range ps {
			ports = append(ports, p.Addr)
		}
		where = "these addresses"
	}
	return fmt.Sprintf("Internal ports  %s on %s (the server's own: frontend membership; history, matching, worker gRPC and membership; chosen at each start)", strings.Join(ports, " "), where)
}

// checkPorts refuses out-of-range, repeated or busy ports before the
// server starts, with an error that names the flag (both flags for a port
// given twice: a usage error, exit 2). codecPort is --codec-port when a
// codec server will listen (0: any free port), -1 when none will.
func checkPorts(cfg devserver.Config, codecPort int) error {
	given := []struct {
		flag string
		port int
	}{{"--port", cfg.Port}, {"--ui-port", cfg.UIPort}, {"--codec-port", codecPort}}
	for i, a := range given {
		for _, b := range given[i+1:] {
			if a.port > 0 && a.port == b.port {
				return usageErr(fmt.Errorf("%s %d and %s %d: the same port; give each its own", a.flag, a.port, b.flag, b.port))
			}
		}
	}
	for _, p := range []struct {
		flag string
		port int
		off  bool
	}{{"--port", cfg.Port, false}, {"--ui-port", cfg.UIPort, cfg.UIPort == -1}} {
		if p.off {
			continue
		}
		if p.port < 1 || p.port > 65535 {
			return usageErr(fmt.Errorf("%s %d: must be 1-65535", p.flag, p.port))
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			return temporalErr(fmt.Errorf("%s %d: the port is in use (another delegate dev or Temporal server?)", p.flag, p.port))
		}
		_ = ln.Close()
	}
	return nil
}
