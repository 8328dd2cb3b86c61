package main

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/metrics"
	"github.com/a2adelegate/delegate/internal/tracing"
	"github.com/a2adelegate/delegate/internal/workeropts"
	"github.com/a2adelegate/delegate/nexusop"
	"github.com/a2adelegate/delegate/push"
	"github.com/a2adelegate/delegate/workflows"
)

// workerFlags configure the worker.
type workerFlags struct {
	pollInitial, pollMax time.Duration
	debugAddr            string
	metricsAddr          string
	// healthAddr is --health-addr; health, set by clientOptions when it
	// is given, watches the worker's polls.
	healthAddr string
	health     *pollHealth
	// metrics, set by clientOptions when --metrics-addr is given, holds
	// the SDK's and delegate's own metrics (internal/metrics);
	// waitingInterval is --waiting-interval, how often it reads the
	// waiting delegations from visibility.
	metrics              *metrics.Metrics
	waitingInterval      time.Duration
	cacheSize            int
	trust                string
	policy               string
	credentials          string
	pushURL, pushKeyFile string
	// logFormat is --log-format: "text" (default) or "json" (slog). Logs
	// carry ids and categories, never message bodies or secrets.
	logFormat string
	// benchTrivial is the hidden --bench-trivial: also register the
	// bench's trivial workflow (workeropts.RegisterTrivial), for the
	// worker process `delegate bench` starts.
	benchTrivial bool
}

func (f *workerFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "serve delegate's metrics and the Temporal SDK's for Prometheus at host:port/metrics (docs/operations.md, \"Watching delegate\")")
	cmd.Flags().DurationVar(&f.waitingInterval, "waiting-interval", metrics.DefaultWaitingInterval, "with --metrics-addr: how often the worker reads the waiting delegations from visibility (delegate_waiting_delegations; at least 1s)")
	cmd.Flags().StringVar(&f.healthAddr, "health-addr", os.Getenv(envHealthAddr), "serve GET "+healthPath+" on host:port: 200 while the worker polls task queue \"delegate\", 503 otherwise (env "+envHealthAddr+"; delegate health asks it)")
	cmd.Flags().StringVar(&f.debugAddr, "debug-addr", "", "serve /debug/vars (expvar: memstats) and /debug/pprof on this loopback host:port")
	cmd.Flags().IntVar(&f.cacheSize, "cache-size", 500, "workflows kept in the worker's sticky cache (waiting delegations beyond it are replayed when they wake)")
	cmd.Flags().StringVar(&f.policy, "policy", os.Getenv("DELEGATE_POLICY"), "authorization policy file, checked before every outbound message and reloaded when it changes (env DELEGATE_POLICY)")
	cmd.Flags().StringVar(&f.credentials, "credentials", os.Getenv("DELEGATE_CREDENTIALS"), "credential store file: secrets per agent origin and by reference, read at start (env DELEGATE_CREDENTIALS; docs/trust.md)")
	cmd.Flags().StringVar(&f.trust, "trust", os.Getenv("DELEGATE_TRUST"), "trust store file: keys that may sign agent cards, HTTP guard exceptions (env DELEGATE_TRUST)")
	cmd.Flags().DurationVar(&f.pollInitial, "poll-initial", time.Second, "first GetTask polling interval (doubles each poll)")
	cmd.Flags().DurationVar(&f.pollMax, "poll-max", 30*time.Second, "longest GetTask polling interval")
	cmd.Flags().StringVar(&f.pushURL, "push-url", os.Getenv("DELEGATE_PUSH_URL"), "public URL of the delegate webhook: agents whose card declares pushNotifications push their tasks' changes there instead of being polled (env DELEGATE_PUSH_URL)")
	cmd.Flags().BoolVar(&f.benchTrivial, "bench-trivial", false, "also register the bench's trivial workflow (for delegate bench)")
	_ = cmd.Flags().MarkHidden("bench-trivial")
	cmd.Flags().StringVar(&f.pushKeyFile, "push-key-file", "", "file holding the base64 key (at least 32 random bytes) push tokens are derived with, shared with the webhook (or env "+push.EnvKey+" holding the key itself)")
}

// pushSettings are --push-url and the push key, or nil when push is off.
func (f *workerFlags) pushSettings() (*push.Settings, error) {
	key, err := push.LoadKey(f.pushKeyFile)
	if err != nil {
		return nil, usageErr(err)
	}
	switch {
	case f.pushURL == "" && key == nil:
		return nil, nil
	case f.pushURL == "":
		return nil, usageErr(errors.New("--push-url: the webhook's public URL is needed with a push key"))
	case key == nil:
		return nil, usageErr(errors.New("--push-key-file (or " + push.EnvKey + "): a key is needed with --push-url"))
	}
	s, err := push.NewSettings(f.pushURL, key)
	if err != nil {
		return nil, usageErr(err)
	}
	return s, nil
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
		if f.waitingInterval < time.Second {
			return o, usageErr(fmt.Errorf("--waiting-interval %s: at least 1s", f.waitingInterval))
		}
		m := metrics.New(metrics.Options{})
		addr, err := m.Serve(ctx, f.metricsAddr)
		if err != nil {
			_ = m.Close()
			return o, usageErr(fmt.Errorf("--metrics-addr: %w", err))
		}
		f.metrics = m
		o.MetricsHandler = m.Handler()
		logger.Info("metrics served", "addr", addr, "path", "/metrics")
	}
	if f.healthAddr != "" {
		f.health = newPollHealth()
		o.MetricsHandler = f.health.wrap(o.MetricsHandler)
	}
	return o, nil
}

// runWorker runs the worker until ctx is done.
func runWorker(ctx context.Context, c client.Client, namespace string, f workerFlags, logger *slog.Logger) error {
	if err := checkSearchAttributes(ctx, c, namespace, logger); err != nil {
		return err
	}
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
		origins := make([]string, 0, len(creds.Origins))
		for o := range creds.Origins {
			origins = append(origins, o)
		}
		slices.Sort(origins)
		// The origins (never a secret): what a 401 is to be checked against.
		logger.Info("credential store read (read at start: restart the worker after changing it)", "file", f.credentials,
			"origins", origins, "refs", len(creds.Refs))
	} else {
		logger.Info("no credential store: calls to agents carry no credential (set --credentials or DELEGATE_CREDENTIALS)")
	}
	pushTo, err := f.pushSettings()
	if err != nil {
		return err
	}
	if pushTo != nil {
		logger.Info("push notifications on", "webhook", pushTo.PublicURL)
	}
	if f.debugAddr != "" {
		if err := serveDebug(ctx, f.debugAddr); err != nil {
			return usageErr(fmt.Errorf("--debug-addr: %w", err))
		}
	}
	if f.health != nil {
		addr, err := serveHealth(ctx, f.healthAddr, f.health)
		if err != nil {
			return usageErr(fmt.Errorf("--health-addr: %w", err))
		}
		logger.Info("health served", "addr", addr.String(), "path", healthPath)
	}
	if f.cacheSize > 0 {
		worker.SetStickyWorkflowCacheSize(f.cacheSize)
	}
	wopts := workeropts.Options()
	fetcher := &cards.Fetcher{Trust: ts}
	acts := &activities.Activities{PollInitial: f.pollInitial, PollMax: f.pollMax, Logger: logger,
		Fetcher: fetcher, Policy: pf, Credentials: creds, Temporal: c, Push: pushTo}
	if creds != nil {
		// OpenID Connect discovery documents go through the card guard.
		creds.Fetcher = fetcher
	}
	if m := f.metrics; m != nil {
		// Calls to agents, token requests, card verifications; the
		// delegations ended, counted where the Outcome becomes final
		// (metrics.Interceptor says why there); the waiting gauges, read
		// from visibility by this worker, never by workflow code.
		fetcher.Observer, acts.Observer = m, m
		if creds != nil {
			creds.Observer = m
		}
		wopts.Interceptors = append(wopts.Interceptors, m.Interceptor())
		ns := namespace
		if ns == "" {
			ns = client.DefaultNamespace
		}
		m.WatchWaiting(ctx, c, ns, f.waitingInterval, logger)
	}
	w := worker.New(c, contracts.TaskQueue, wopts)
	workflows.RegisterWorkflows(w, workflows.Options{})
	activities.Register(w, acts)
	if f.benchTrivial {
		workeropts.RegisterTrivial(w)
	}
	// Nexus service "delegate" (operation start-delegation): workflows in
	// other namespaces delegate through an endpoint that targets this
	// namespace and task queue (docs/deployment.md).
	if err := nexusop.Register(w); err != nil {
		return fmt.Errorf("registering the Nexus service: %w", err)
	}
	if err := w.Start(); err != nil {
		return temporalErr(fmt.Errorf("starting the worker: %w", err))
	}
	logger.Info("worker started", "task_queue", contracts.TaskQueue, "nexus_service", nexusop.Service)
	if f.health != nil {
		f.health.started.Store(f.health.now().UnixNano())
	}
	<-ctx.Done()
	if f.health != nil {
		f.health.started.Store(-1)
	}
	w.Stop()
	logger.Info("worker stopped")
	return nil
}

// workerConnectWait is how long a starting worker waits for its Temporal
// frontend to answer before it gives up (exit 3).
const workerConnectWait = time.Minute

// dialWaiting dials Temporal (client.DialContext) and, while the frontend
// is unavailable (gRPC Unavailable: nothing listening yet, or a frontend
// still starting, "Frontend is not healthy yet"), dials again, from half a
// second doubling to 5 s, for at most wait, saying so in the log. Workers
// start beside the server they use (a deploy that starts both, a frontend
// restarted): without the wait, a worker that came up first exited. Any
// other error (TLS, credentials, a namespace that does not exist) is
// returned at once.
func dialWaiting(ctx context.Context, opts client.Options, logger *slog.Logger, wait time.Duration) (client.Client, error) {
	deadline := time.Now().Add(wait)
	delay := 500 * time.Millisecond
	for {
		c, err := client.DialContext(ctx, opts)
		if err == nil || !unavailable(err) || ctx.Err() != nil || time.Now().Add(delay).After(deadline) {
			return c, err
		}
		logger.Warn("Temporal is not reachable yet; dialing again", "server", dclient.Describe(opts), "in", delay.String(), "error", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// unavailable reports a Temporal frontend that is not there or not ready:
// gRPC Unavailable, as the SDK reports it (serviceerror.Unavailable,
// wrapped) or as gRPC does.
func unavailable(err error) bool {
	var u *serviceerror.Unavailable
	return errors.As(err, &u) || status.Code(err) == codes.Unavailable
}

// logger returns the logger --log-format asks for, writing to stderr, or
// a usage error for a format that is neither text nor json.
func (f *workerFlags) logger() (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch f.logFormat {
	case "json":
		return slog.New(delegationIDs{slog.NewJSONHandler(os.Stderr, opts)}), nil
	case "text", "":
		return slog.New(delegationIDs{slog.NewTextHandler(os.Stderr, opts)}), nil
	}
	return nil, usageErr(fmt.Errorf("--log-format %q: text or json", f.logFormat))
}

func newWorkerCmd(cf *clientFlags) *cobra.Command {
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
			c, err := dialWaiting(ctx, opts, logger, workerConnectWait)
			if err != nil {
				return temporalErr(fmt.Errorf("connecting to Temporal at %s: %w", dclient.Describe(opts), err))
			}
			logger.Info("connected to Temporal", "server", dclient.Describe(opts))
			defer c.Close()
			return runWorker(ctx, c, opts.Namespace, wf, logger)
		},
	}
	wf.add(cmd)
	return cmd
}

// checkSearchAttributes refuses to start a worker on a namespace that lacks
// one of the Keyword search attributes the Delegation workflow sets
// (contracts.SearchAttributeNames): the server refuses the workflow's
// upsert, and each delegation's workflow task fails until the attribute is
// registered. A server that does not let this worker list them (a Temporal
// Cloud API key without the permission) is only logged.
func checkSearchAttributes(ctx context.Context, c client.Client, namespace string, logger *slog.Logger) error {
	if namespace == "" {
		namespace = client.DefaultNamespace
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.OperatorService().ListSearchAttributes(lctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		logger.Warn("could not list the namespace's search attributes; make sure each is registered as Keyword (docs/deployment.md)",
			"namespace", namespace, "names", contracts.SearchAttributeNames, "err", err)
		return nil
	}
	var missing []string
	for _, name := range contracts.SearchAttributeNames {
		if t, ok := resp.GetCustomAttributes()[name]; !ok || t != enums.INDEXED_VALUE_TYPE_KEYWORD {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var cmds strings.Builder
	for _, name := range missing {
		fmt.Fprintf(&cmds, "\n  temporal operator search-attribute create --namespace %s --name %s --type Keyword", namespace, name)
	}
	return usageErr(fmt.Errorf("namespace %q lacks the Keyword search attribute(s) %s, which the Delegation workflow sets (its workflow tasks would fail until they exist); register them first (docs/deployment.md):%s",
		namespace, strings.Join(missing, ", "), cmds.String()))
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

// delegationIDs is a slog.Handler that gives the Temporal SDK's log lines
// about a workflow or an activity (which carry WorkflowID and RunID) the
// names delegate's own lines use, local_workflow_id and run_id (a
// Delegation's workflow id is its local_workflow_id), so that one filter
// finds every line of a delegation (docs/operations.md, "Watching
// delegate").
type delegationIDs struct{ slog.Handler }

func (h delegationIDs) WithAttrs(as []slog.Attr) slog.Handler {
	return delegationIDs{h.Handler.WithAttrs(withDelegationIDs(as))}
}

func (h delegationIDs) WithGroup(name string) slog.Handler {
	return delegationIDs{h.Handler.WithGroup(name)}
}

func (h delegationIDs) Handle(ctx context.Context, r slog.Record) error {
	var extra []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if n := sdkIDNames[a.Key]; n != "" {
			extra = append(extra, slog.Attr{Key: n, Value: a.Value})
		}
		return true
	})
	if len(extra) > 0 {
		r = r.Clone()
		r.AddAttrs(extra...)
	}
	return h.Handler.Handle(ctx, r)
}

// sdkIDNames maps the SDK's keys to delegate's.
var sdkIDNames = map[string]string{"WorkflowID": "local_workflow_id", "RunID": "run_id"}

func withDelegationIDs(as []slog.Attr) []slog.Attr {
	out := as
	for _, a := range as {
		if n := sdkIDNames[a.Key]; n != "" {
			if len(out) == len(as) {
				out = append([]slog.Attr(nil), as...)
			}
			out = append(out, slog.Attr{Key: n, Value: a.Value})
		}
	}
	return out
}
