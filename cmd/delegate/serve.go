package main

import (
	"context"
	"expvar"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/bench"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/internal/metrics"
	"github.com/a2adelegate/delegate/internal/tracing"
	"github.com/a2adelegate/delegate/workflows"
)

// workerFlags configure the worker.
type workerFlags struct {
	pollInitial, pollMax time.Duration
	debugAddr            string
	metricsAddr          string
	cacheSize            int
	trust                string
	policy               string
	credentials          string
	// logFormat is --log-format: "text" (default) or "json" (slog). Logs
	// carry ids and categories, never message bodies or secrets.
	logFormat string
}

func (f *workerFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "serve the Temporal SDK's metrics for Prometheus at host:port/metrics")
	cmd.Flags().StringVar(&f.debugAddr, "debug-addr", "", "serve /debug/vars (expvar: memstats) and /debug/pprof on this loopback host:port")
	cmd.Flags().IntVar(&f.cacheSize, "cache-size", 500, "workflows kept in the worker's sticky cache (waiting delegations beyond it are replayed when they wake)")
	cmd.Flags().StringVar(&f.policy, "policy", os.Getenv("DELEGATE_POLICY"), "authorization policy file, checked before every outbound message and reloaded when it changes (env DELEGATE_POLICY)")
	cmd.Flags().StringVar(&f.credentials, "credentials", os.Getenv("DELEGATE_CREDENTIALS"), "credential store file: secrets per agent origin and by reference (env DELEGATE_CREDENTIALS)")
	cmd.Flags().StringVar(&f.trust, "trust", os.Getenv("DELEGATE_TRUST"), "trust store file: keys that may sign agent cards, HTTP guard exceptions (env DELEGATE_TRUST)")
	cmd.Flags().DurationVar(&f.pollInitial, "poll-initial", time.Second, "first GetTask polling interval (doubles each poll)")
	cmd.Flags().DurationVar(&f.pollMax, "poll-max", 30*time.Second, "longest GetTask polling interval")
}

// clientOptions are the Temporal client options of the worker (o: where
// and how to connect), with its logger and the SDK metrics on
// --metrics-addr when set.
func (f *workerFlags) clientOptions(ctx context.Context, o client.Options, logger *slog.Logger) (client.Options, error) {
	o.Logger = sdklog.NewStructuredLogger(logger)
	if err := addTracing(ctx, &o, "delegate-worker", logger); err != nil {
		return o, err
	}
	if tracing.Enabled() {
		logger.Info("traces exported over OTLP (OTEL_* environment)")
	}
	if f.metricsAddr != "" {
		h, _, err := metrics.Serve(ctx, f.metricsAddr)
		if err != nil {
			return o, usageErr(fmt.Errorf("--metrics-addr: %w", err))
		}
		o.MetricsHandler = h
		logger.Info("metrics served", "addr", f.metricsAddr, "path", "/metrics")
	}
	return o, nil
}

// runWorker runs the worker until ctx is done.
func runWorker(ctx context.Context, c client.Client, f workerFlags, logger *slog.Logger) error {
	ts, err := loadTrust(f.trust)
	if err != nil {
		return err
	}
	if ts == nil {
		logger.Info("no trust store: agent cards are used unverified unless a contract sets require_signed_card")
	}
	pf := &activities.PolicyFile{Path: f.policy}
	if f.policy == "" {
		logger.Info("no policy file: every delegation is allowed (set --policy or DELEGATE_POLICY)")
	} else if _, _, err := pf.Current(); err != nil {
		return usageErr(fmt.Errorf("--policy: %w", err))
	}
	var creds *a2aclient.Credentials
	if f.credentials != "" {
		if creds, err = a2aclient.LoadCredentials(f.credentials); err != nil {
			return usageErr(fmt.Errorf("--credentials: %w", err))
		}
	}
	if f.debugAddr != "" {
		if err := serveDebug(ctx, f.debugAddr); err != nil {
			return usageErr(fmt.Errorf("--debug-addr: %w", err))
		}
	}
	if f.cacheSize > 0 {
		worker.SetStickyWorkflowCacheSize(f.cacheSize)
	}
	w := worker.New(c, contracts.TaskQueue, bench.WorkerOptions())
	workflows.Register(w, &activities.Activities{PollInitial: f.pollInitial, PollMax: f.pollMax, Logger: logger,
		Fetcher: &cards.Fetcher{Trust: ts}, Policy: pf, Credentials: creds, Temporal: c}, workflows.Options{})
	if err := w.Start(); err != nil {
		return temporalErr(fmt.Errorf("starting the worker: %w", err))
	}
	logger.Info("worker started", "task_queue", contracts.TaskQueue)
	<-ctx.Done()
	w.Stop()
	logger.Info("worker stopped")
	return nil
}

// logger returns the logger --log-format asks for, writing to stderr, or
// a usage error for a format that is neither text nor json.
func (f *workerFlags) logger() (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch f.logFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	}
	return nil, usageErr(fmt.Errorf("--log-format %q: text or json", f.logFormat))
}

func newWorkerCmd() *cobra.Command {
	var cf clientFlags
	var wf workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the delegate worker against an external Temporal server",
		Long: `Run the delegate worker: it polls task queue "delegate" and runs the Delegation
workflow and its activities (every call to an agent). Run two or more; any one can
continue any delegation (docs/deployment.md).

Connection: the Temporal config file's profile (--profile, --config-file), then the
TEMPORAL_* environment, then the flags below (the Temporal CLI's names).
Agents: --trust, --policy and --credentials (files read by the worker only).
Traces: exported over OTLP when the OTEL_* environment asks (OTEL_EXPORTER_OTLP_ENDPOINT);
off otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger, err := wf.logger()
			if err != nil {
				return err
			}
			conn, err := cf.options(cmd)
			if err != nil {
				return err
			}
			opts, err := wf.clientOptions(ctx, conn, logger)
			if err != nil {
				return err
			}
			c, err := client.DialContext(ctx, opts)
			if err != nil {
				return temporalErr(fmt.Errorf("connecting to Temporal at %s: %w", dclient.Describe(opts), err))
			}
			logger.Info("connected to Temporal", "server", dclient.Describe(opts))
			defer c.Close()
			return runWorker(ctx, c, wf, logger)
		},
	}
	cf.add(cmd)
	wf.add(cmd)
	return cmd
}

func newDevCmd() *cobra.Command {
	var cfg devserver.Config
	var noWorker bool
	var dynamicConfigFile string
	var wf workerFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run an embedded Temporal server (SQLite) with the Temporal UI and the worker",
		Long: `Run a development Temporal server in this process: SQLite persistence in
.delegate/temporal.db (or in memory with --memory), the frontend on 127.0.0.1:7233,
the Temporal UI on 127.0.0.1:8233, namespace "default" with the search attributes
A2AState, A2AAgent, A2ARemoteTaskId and A2APurpose, and the worker. Ctrl-C shuts
down cleanly; a restart on the same --db carries on with the open delegations.

The server runs with dynamic config chosen for one host (docs/performance.md);
--dynamic-config FILE takes Temporal's own dynamic-config YAML, key by key over it.`,
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
			if err := checkPorts(cfg); err != nil {
				return err
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
			if u := srv.UIURL(); u != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "Temporal UI     %s\n", u)
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
			opts, err := wf.clientOptions(ctx, own, logger)
			if err != nil {
				return err
			}
			c, err := client.DialContext(ctx, opts)
			if err != nil {
				return temporalErr(err)
			}
			defer c.Close()
			return runWorker(ctx, c, wf, logger)
		},
	}
	cmd.Flags().StringVar(&cfg.DBPath, "db", ".delegate/temporal.db", "SQLite file")
	cmd.Flags().BoolVar(&cfg.Memory, "memory", false, "keep everything in memory (lost at exit)")
	cmd.Flags().IntVar(&cfg.Port, "port", 7233, "frontend gRPC port")
	cmd.Flags().IntVar(&cfg.UIPort, "ui-port", 8233, "Temporal UI port (-1: no UI)")
	cmd.Flags().BoolVar(&noWorker, "no-worker", false, "do not run the worker in this process")
	cmd.Flags().StringVar(&dynamicConfigFile, "dynamic-config", "", "Temporal dynamic-config YAML file, over the one-host defaults (docs/performance.md)")
	cmd.Flags().StringVar(&cfg.LogLevel, "server-log-level", "fatal", "log level of the embedded Temporal server (to stderr): debug, info, warn, error, fatal")
	wf.add(cmd)
	return cmd
}

// checkPorts refuses out-of-range or busy ports before the server starts,
// with an error that names the flag.
func checkPorts(cfg devserver.Config) error {
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

// serveDebug serves expvar and pprof on a loopback address.
func serveDebug(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", expvar.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/heap", pprof.Index)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// flushTraces, set when tracing is on, flushes and stops the exporter;
// run calls it before the CLI exits.
var flushTraces func(context.Context) error

// addTracing, when the OTEL_* environment asks for traces
// (tracing.Enabled), installs the OTLP exporter once per process and adds
// the Temporal tracing interceptor to o. Errors: the exporter cannot be
// made (bad input: exit 2).
func addTracing(ctx context.Context, o *client.Options, service string, logger *slog.Logger) error {
	if !tracing.Enabled() {
		return nil
	}
	if flushTraces == nil {
		shutdown, err := tracing.Setup(ctx, service, logger)
		if err != nil {
			return usageErr(err)
		}
		flushTraces = shutdown
	}
	ic, err := tracing.Interceptor()
	if err != nil {
		return usageErr(err)
	}
	o.Interceptors = append(o.Interceptors, ic)
	return nil
}
