package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

// envHealthAddr is the environment variable --health-addr (worker) and
// --addr (health) fall back to; the worker image sets it.
const envHealthAddr = "DELEGATE_HEALTH_ADDR"

// healthPath is where --health-addr answers.
const healthPath = "/healthz"

// pollMaxAge is how long a worker stays healthy without a completed
// workflow-task poll. An idle worker's long poll returns empty after
// about a minute (Temporal's long-poll timeout), so a worker that polls
// completes one at least that often.
const pollMaxAge = 2 * time.Minute

// pollHealth is the worker's liveness for --health-addr: it watches the
// Temporal SDK's own poll counters (temporal_workflow_task_queue_poll_empty
// and temporal_workflow_task_queue_poll_succeed, go.temporal.io/sdk's
// metric names) through the client's metrics handler, so it reports what
// the worker's pollers did, not whether a port is open.
type pollHealth struct {
	started atomic.Int64 // unix nanoseconds when the worker started; 0 before, -1 after it stopped
	lastOK  atomic.Int64 // unix nanoseconds of the last workflow-task poll that completed without error
	now     func() time.Time
}

func newPollHealth() *pollHealth { return &pollHealth{now: time.Now} }

// status says whether the worker polls: healthy when a workflow-task poll
// of task queue "delegate" completed within pollMaxAge, or, in the
// first pollMaxAge after the worker started, while no poll has completed
// yet (the first long poll is in flight).
func (h *pollHealth) status() (healthy bool, msg string) {
	now := h.now()
	started, last := h.started.Load(), h.lastOK.Load()
	switch {
	case started == 0:
		return false, "worker not started"
	case started < 0:
		return false, "worker stopped"
	case last != 0 && now.Sub(time.Unix(0, last)) <= pollMaxAge:
		return true, fmt.Sprintf("polling task queue %q: last poll completed %s ago", contracts.TaskQueue, now.Sub(time.Unix(0, last)).Round(time.Second))
	case last == 0 && now.Sub(time.Unix(0, started)) <= pollMaxAge:
		return true, fmt.Sprintf("polling task queue %q: worker started %s ago, first poll in flight", contracts.TaskQueue, now.Sub(time.Unix(0, started)).Round(time.Second))
	case last == 0:
		return false, fmt.Sprintf("not polling: no poll of task queue %q completed since the worker started %s ago (is Temporal reachable?)", contracts.TaskQueue, now.Sub(time.Unix(0, started)).Round(time.Second))
	}
	return false, fmt.Sprintf("not polling: the last poll of task queue %q completed %s ago (more than %s; is Temporal reachable?)", contracts.TaskQueue, now.Sub(time.Unix(0, last)).Round(time.Second), pollMaxAge)
}

func (h *pollHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != healthPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	healthy, msg := h.status()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, msg)
}

// wrap returns next (the SDK's no-op handler when nil) with the poll
// counters watched.
func (h *pollHealth) wrap(next client.MetricsHandler) client.MetricsHandler {
	if next == nil {
		next = client.MetricsNopHandler
	}
	return pollWatch{next: next, h: h}
}

// pollWatch is a client.MetricsHandler that passes everything to next and
// notes the completed workflow-task polls in h.
type pollWatch struct {
	next client.MetricsHandler
	h    *pollHealth
}

func (p pollWatch) WithTags(tags map[string]string) client.MetricsHandler {
	return pollWatch{next: p.next.WithTags(tags), h: p.h}
}

func (p pollWatch) Counter(name string) client.MetricsCounter {
	c := p.next.Counter(name)
	switch name {
	case "temporal_workflow_task_queue_poll_empty", "temporal_workflow_task_queue_poll_succeed":
		return pollCounter{next: c, h: p.h}
	}
	return c
}

func (p pollWatch) Gauge(name string) client.MetricsGauge { return p.next.Gauge(name) }
func (p pollWatch) Timer(name string) client.MetricsTimer { return p.next.Timer(name) }

// Unwrap gives the handler wrapped (the SDK's convention for wrappers).
func (p pollWatch) Unwrap() client.MetricsHandler { return p.next }

type pollCounter struct {
	next client.MetricsCounter
	h    *pollHealth
}

func (c pollCounter) Inc(n int64) {
	c.h.lastOK.Store(c.h.now().UnixNano())
	c.next.Inc(n)
}

// serveHealth serves h on addr until ctx is done. Errors: addr cannot be
// listened on.
func serveHealth(ctx context.Context, addr string, h *pollHealth) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr(), nil
}

// healthURL is the URL of the health endpoint a worker serves on addr
// (its --health-addr): a wildcard or empty host is reached on loopback.
func healthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: %w (host:port, as the worker's --health-addr)", addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + healthPath, nil
}

func newHealthCmd() *cobra.Command {
	var addr string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health [--addr HOST:PORT]",
		Short: "Check that a worker started with --health-addr is polling (exit 0), or not (exit 1)",
		Long: `Ask the health endpoint of a worker started with --health-addr (GET /healthz) and
print its answer. Exit 0: the worker polls task queue "delegate" (a workflow-task poll
completed within the last 2m, or it started less than 2m ago and its first poll is in
flight). Exit 1: it does not, or the endpoint cannot be reached. The worker image's
HEALTHCHECK runs it; both read --addr from DELEGATE_HEALTH_ADDR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addr == "" {
				return usageErr(errors.New("--addr: the worker's --health-addr (or set " + envHealthAddr + ")"))
			}
			u, err := healthURL(addr)
			if err != nil {
				return usageErr(fmt.Errorf("--addr %w", err))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return usageErr(fmt.Errorf("--addr: %w", err))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return &exitError{code: exitNotComplete, err: fmt.Errorf("unhealthy: %w", err)}
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			msg := strings.TrimSpace(string(body))
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: exitNotComplete, err: fmt.Errorf("unhealthy: %s: %s", resp.Status, msg)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "healthy:", msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", os.Getenv(envHealthAddr), "the worker's --health-addr (env "+envHealthAddr+")")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long (exit 1)")
	return cmd
}
