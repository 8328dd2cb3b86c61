package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/dynamicconfig"
	"google.golang.org/protobuf/proto"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/internal/workeropts"
	"github.com/a2adelegate/delegate/workflows"
)

// Config of a run.
type Config struct {
	N           int // operations per measurement at concurrency C (default 300)
	Concurrency int // C (default 50)
	Latency     int // operations at concurrency 1 (default 50)
	Waiting     int // delegations held in INPUT_REQUIRED (default 1000)
	// WorkerCommand runs a worker process against an address (argv, the
	// address is appended as "--address ADDR" with --debug-addr and
	// --poll-initial 20ms, and for the measurements the in-process
	// worker's other settings, --poll-max 1s --cache-size 10000, and
	// --bench-trivial). With it every measurement
	// runs its worker in a process of its own, whose CPU is counted apart
	// (Stats.CPU); the waiting measurement needs it. Empty: the worker
	// runs in the bench process and waiting is skipped.
	WorkerCommand []string
	// AgentCommand runs the claims agent as a process (argv, "-addr
	// HOST:PORT" appended), for the measurements (with WorkerCommand) and
	// for the waiting one, so that the bench process's CPU and RSS are the
	// server's without the agent's. Empty: the agent in the bench process
	// serves them.
	AgentCommand []string
	// CPUProfileDir, when set, receives CPU profiles (pprof) of the trivial
	// and the delegate measurements at concurrency C: DIR/server.pprof of
	// the bench process (runtime/pprof) and DIR/worker.pprof of the worker
	// process (its /debug/pprof/profile; with WorkerCommand only) for the
	// delegations, DIR/trivial-server.pprof and DIR/trivial-worker.pprof for
	// the trivial workflows; each pair over the same window, which holds the
	// whole measurement (CPUProfile in the result says how long).
	CPUProfileDir string
	// Progress receives one line per step; nil: none.
	Progress io.Writer
	// DynamicConfig overrides devserver.OneHostDynamicConfig.
	DynamicConfig dynamicconfig.ConfigValueMap
	// Postgres, postgres://USER@HOST:PORT/DB, runs every measurement a
	// second time on a Temporal server on that PostgreSQL database.
	Postgres string
	// Only runs the measurements on one server: "embedded" or "postgres"
	// (empty: both, postgres when Postgres is set).
	Only string
}

// Stats of one measurement.
type Stats struct {
	Ops            int     `json:"ops"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	P50ms          float64 `json:"p50_ms"`
	P95ms          float64 `json:"p95_ms"`
	P99ms          float64 `json:"p99_ms"`
	Errors         int     `json:"errors"`
	// CPU is the CPU each process spent per operation over the
	// measurement; nil where /proc is not there.
	CPU *CPU `json:"cpu_ms_per_op,omitempty"`
	// Slowest are the slowest operations (at most 5), with their
	// workflows' events.
	Slowest []SlowOp `json:"slowest,omitempty"`
}

// CPU is core-milliseconds per operation (user + system time, from
// /proc/PID/stat utime + stime, in clock ticks of 10 ms, read before and
// after the measurement, divided by its operations), per process. For
// trivial and delegate the window ends once the server's visibility store
// has recorded every workflow of the measurement (the server's work for
// them goes on after the last result), so it also holds the bench's
// CountWorkflowExecutions reads every 20 ms until then; with
// --cpuprofile the trivial and delegate measurements at C also hold the
// profiling.
type CPU struct {
	// Bench is the bench process: the embedded Temporal server and the
	// load generator (the Temporal client starting and awaiting the
	// workflows, or the raw A2A client), and the worker and the claims
	// agent too when they run in it (Worker, Agent 0 and left out).
	Bench float64 `json:"bench"`
	// Worker is the `delegate worker` process (Config.WorkerCommand).
	Worker float64 `json:"worker,omitempty"`
	// Agent is the claims agent process (Config.AgentCommand).
	Agent float64 `json:"agent,omitempty"`
	// Total is their sum.
	Total float64 `json:"total"`
}

// Pair is a measurement at concurrency 1 and at C.
type Pair struct {
	C1 Stats `json:"c1"`
	CN Stats `json:"cN"`
}

// Result is what `delegate bench --json` prints: the embedded server's
// figures at the top level (the PostgreSQL one's with Only "postgres"),
// and every server's under Servers.
type Result struct {
	ServerResult
	Servers map[string]*ServerResult `json:"servers"`
}

// ServerResult is the figures of one Temporal server.
type ServerResult struct {
	Raw           Pair          `json:"raw"`
	Trivial       Pair          `json:"trivial"`
	Delegate      Pair          `json:"delegate"`
	Ratios        Ratios        `json:"ratios"`
	HistoryEvents HistoryEvents `json:"history_events"`
	HistoryBytes  HistoryBytes  `json:"history_bytes"`
	// Processes says where the worker and the claims agent ran during the
	// measurements: "process" (their own, Config.WorkerCommand and
	// AgentCommand) or "bench" (in the bench process).
	Processes map[string]string `json:"processes"`
	// CPUProfile is set with Config.CPUProfileDir.
	CPUProfile *CPUProfile        `json:"cpu_profile,omitempty"`
	Waiting    Waiting            `json:"waiting"`
	Settings   map[string]any     `json:"settings"`
	Targets    map[string]Verdict `json:"targets"`
}

// Ratios compares delegate with trivial and raw.
type Ratios struct {
	DelegateVsTrivialThroughput float64 `json:"delegate_vs_trivial_throughput"`
	DelegateVsTrivialP50C1      float64 `json:"delegate_vs_trivial_p50_c1"`
	DelegateVsRawP50OverheadMs  float64 `json:"delegate_vs_raw_p50_overhead_ms"`
}

// HistoryEvents per delegation.
type HistoryEvents struct {
	Completed     int `json:"completed"`
	OneInputRound int `json:"one_input_round"`
}

// HistoryBytes is the size of one workflow's history: the sum over its
// events of proto.Size(HistoryEvent), the events as the server returns
// them (GetWorkflowExecutionHistory, payloads unencrypted: the bench has
// no codec), without the server's own framing, indexes or visibility
// records.
type HistoryBytes struct {
	// Completed is a plain delegation (HistoryEvents.Completed's).
	Completed int `json:"completed"`
	// OneInputRound is a delegation with one question answered
	// (HistoryEvents.OneInputRound's).
	OneInputRound int `json:"one_input_round"`
	// Trivial is one trivial workflow (one no-op activity).
	Trivial int `json:"trivial"`
	// TrivialEvents is the trivial workflow's event count.
	TrivialEvents int `json:"trivial_events"`
}

// CPUProfile says what Config.CPUProfileDir received.
type CPUProfile struct {
	Dir string `json:"dir"`
	// Files written: "server.pprof" (the bench process), "worker.pprof"
	// of the delegate measurement at C; "trivial-server.pprof",
	// "trivial-worker.pprof" of the trivial one.
	Files []string `json:"files"`
	// Seconds is the window of the delegate measurement's two, from its
	// start: N over the delegation's throughput at concurrency 1, rounded
	// up (at least 1 s), so that the window holds the whole measurement;
	// the bench waits for it to end before going on. TrivialSeconds is the
	// same for the trivial measurement.
	Seconds        int `json:"seconds"`
	TrivialSeconds int `json:"trivial_seconds"`
	// Error is why a profile is missing.
	Error string `json:"error,omitempty"`
}

// Waiting is the worker process with W delegations in INPUT_REQUIRED.
type Waiting struct {
	Count        int     `json:"count"`
	WorkerRSSMB  float64 `json:"worker_rss_mb"`
	WorkerHeapMB float64 `json:"worker_heap_mb"`
	// ServerRSSMB is the bench process's RSS: the Temporal server runs in
	// it (with the load generator, and the claims agent unless
	// AgentRSSMB is set: the agent's process).
	ServerRSSMB float64 `json:"server_rss_mb"`
	AgentRSSMB  float64 `json:"agent_rss_mb,omitempty"`
	// ParkedPerS is how fast the delegations reached input-required.
	ParkedPerS float64 `json:"parked_per_s"`
	// AnswerP50ms is the time to answer one waiting delegation (Update
	// "provide-input" until completed), p50 over AnswerOps answers with
	// Count waiting (at most 50, one per delegation parked after the first
	// 10), and AnswerP50At10ms the same over 50 with 10 waiting.
	AnswerOps       int     `json:"answer_ops,omitempty"`
	AnswerP50ms     float64 `json:"answer_p50_ms,omitempty"`
	AnswerP50At10ms float64 `json:"answer_p50_ms_10_waiting,omitempty"`
	// DBBytesPerWaiting is the growth of the server's databases divided
	// by Count (PostgreSQL only).
	DBBytesPerWaiting float64 `json:"db_bytes_per_waiting,omitempty"`
	Skipped           string  `json:"skipped,omitempty"`
}

// Verdict of one target.
type Verdict struct {
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Holds  bool    `json:"holds"`
}

// WorkerOptions are the worker settings used for trivial and delegate
// alike: those of `delegate worker` (package workeropts).
func WorkerOptions() worker.Options { return workeropts.Options() }

// Run runs the bench.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.N <= 0 {
		cfg.N = 300
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 50
	}
	if cfg.Latency <= 0 {
		cfg.Latency = 50
	}
	if cfg.Waiting < 0 {
		cfg.Waiting = 0
	}
	say := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", a...)
		}
	}
	switch {
	case cfg.Only != "" && cfg.Only != "embedded" && cfg.Only != "postgres":
		return nil, fmt.Errorf(`--only %q: "embedded" or "postgres"`, cfg.Only)
	case cfg.Only == "postgres" && cfg.Postgres == "":
		return nil, errors.New("--only postgres: needs --server postgres://USER@HOST:PORT/DB")
	}
	out := &Result{Servers: map[string]*ServerResult{}}
	servers := []struct{ name, postgres, desc string }{{"embedded", "", "embedded go.temporal.io/server, in-memory SQLite"}}
	if cfg.Postgres != "" {
		servers = append(servers, struct{ name, postgres, desc string }{"postgres", cfg.Postgres, "embedded go.temporal.io/server on PostgreSQL"})
	}
	for _, sv := range servers {
		if cfg.Only != "" && cfg.Only != sv.name {
			continue
		}
		say("measuring on the %s server (%s)", sv.name, sv.desc)
		srv, err := devserver.Start(ctx, devserver.Config{Memory: sv.postgres == "", Postgres: sv.postgres, UIPort: -1,
			SearchAttributes: contracts.SearchAttributeNames, LogLevel: "fatal", DynamicConfig: cfg.DynamicConfig})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sv.name, err)
		}
		res, err := runOn(ctx, cfg, srv, say)
		srv.Stop()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sv.name, err)
		}
		res.Settings["server"] = sv.desc
		out.Servers[sv.name] = res
	}
	// The top level is the embedded server's, or with --only postgres the
	// PostgreSQL one's (settings.server says which).
	if r, ok := out.Servers["embedded"]; ok {
		out.ServerResult = *r
	} else if r, ok := out.Servers["postgres"]; ok {
		out.ServerResult = *r
	}
	return out, nil
}

// runOn runs every measurement on one server.
func runOn(ctx context.Context, cfg Config, srv *devserver.Server, say func(string, ...any)) (*ServerResult, error) {
	quiet := slog.New(slog.DiscardHandler)
	res := &ServerResult{Settings: map[string]any{
		"n": cfg.N, "concurrency": cfg.Concurrency, "latency_ops": cfg.Latency, "waiting": cfg.Waiting, "poll_initial_ms": 20,
	}, Processes: map[string]string{"worker": "bench", "agent": "bench"}}
	// The claims agent: its own process with AgentCommand and
	// WorkerCommand (so its CPU is counted apart), else in this one.
	var base string
	var pids procs
	pids.bench = os.Getpid()
	var stopAgent func()
	if len(cfg.WorkerCommand) > 0 && len(cfg.AgentCommand) > 0 {
		agent, addr, err := startAgent(ctx, cfg)
		if err != nil {
			return nil, err
		}
		stopAgent = func() { _ = agent.Process.Kill(); _, _ = agent.Process.Wait() }
		defer func() { stopAgent() }()
		base, pids.agent, res.Processes["agent"] = "http://"+addr, agent.Process.Pid, "process"
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		base = "http://" + ln.Addr().String()
		agent := claimsagent.New(claimsagent.Config{BaseURL: base})
		actx, cancelAgent := context.WithCancel(ctx)
		stopAgent = cancelAgent
		defer func() { stopAgent() }()
		go func() { _ = agent.Serve(actx, ln) }()
	}

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(quiet),
		ConnectionOptions: devserver.LoopbackConnection()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// The worker: its own process with WorkerCommand, with the settings of
	// the in-process one (workeropts.Options, PollInitial 20 ms, PollMax
	// 1 s, the SDK's sticky cache of 10,000), else in this one.
	var stopWorker func()
	var workerDebug string
	if len(cfg.WorkerCommand) > 0 {
		cmd, debugAddr, err := startWorker(ctx, cfg, srv, "--poll-max", "1s", "--cache-size", "10000", "--bench-trivial")
		if err != nil {
			return nil, err
		}
		stopWorker = func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }
		pids.worker, workerDebug, res.Processes["worker"] = cmd.Process.Pid, debugAddr, "process"
	} else {
		w := worker.New(c, contracts.TaskQueue, WorkerOptions())
		workflows.RegisterWorkflows(w, workflows.Options{})
		activities.Register(w, &activities.Activities{PollInitial: 20 * time.Millisecond, PollMax: time.Second, Logger: quiet, Temporal: c})
		workeropts.RegisterTrivial(w)
		if err := w.Start(); err != nil {
			return nil, err
		}
		stopWorker = w.Stop
	}
	defer func() { stopWorker() }()
	card, err := (&cards.Fetcher{}).Fetch(ctx, base)
	if err != nil {
		return nil, err
	}
	iface, err := cards.SelectInterface(card.Parsed, nil)
	if err != nil {
		return nil, err
	}

	var seq atomic.Int64
	rc, err := a2aclient.Dial(ctx, iface, a2aclient.Options{})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw := func(ctx context.Context) (string, error) { return "", rawExchange(ctx, rc) }
	var ended atomic.Int64 // workflows of this run seen to end
	trivial := func(ctx context.Context) (string, error) {
		id := fmt.Sprintf("bench-trivial-%d", seq.Add(1))
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: contracts.TaskQueue, ID: id}, workeropts.TrivialWorkflow)
		if err != nil {
			return id, err
		}
		// Both kinds wait for their result as package client does
		// (dclient.Await: the server can miss a close notification).
		err = dclient.Await(ctx, c, run, nil)
		if ctx.Err() == nil {
			ended.Add(1)
		}
		return id, err
	}
	delegate := func(ctx context.Context) (string, error) {
		d := contract(fmt.Sprintf("bench-delegate-%d", seq.Add(1)), base, "instant")
		run, err := startRun(ctx, c, d)
		if err != nil {
			return d.LocalWorkflowID, err
		}
		var out contracts.Outcome
		err = dclient.Await(ctx, c, run, &out)
		if ctx.Err() == nil {
			ended.Add(1)
		}
		if err != nil {
			return d.LocalWorkflowID, err
		}
		if out.Status != contracts.StatusCompleted {
			return d.LocalWorkflowID, fmt.Errorf("status %s", out.Status)
		}
		return d.LocalWorkflowID, nil
	}
	// Warm up each path once (the first also waits for a worker process
	// to poll).
	for _, f := range []func(context.Context) (string, error){raw, trivial, delegate} {
		if _, err := f(ctx); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.CPUProfileDir != "" {
		res.CPUProfile = &CPUProfile{Dir: cfg.CPUProfileDir}
	}
	for _, m := range []struct {
		name string
		f    func(context.Context) (string, error)
		out  *Pair
	}{{"raw", raw, &res.Raw}, {"trivial", trivial, &res.Trivial}, {"delegate", delegate, &res.Delegate}} {
		if m.name != "raw" {
			quiesce(ctx, c, ended.Load(), say)
		}
		say("%s, latency: %d at concurrency 1", m.name, cfg.Latency)
		before := pids.cpu()
		m.out.C1 = measure(ctx, m.f, cfg.Latency, 1)
		if m.name != "raw" {
			// The server's work for these workflows ends when visibility
			// has recorded them: counted with them.
			quiesce(ctx, c, ended.Load(), say)
		}
		m.out.C1.CPU = pids.perOp(before, m.out.C1.Ops)
		slowEvents(ctx, c, m.out.C1.Slowest)
		if m.name != "raw" {
			quiesce(ctx, c, ended.Load(), say)
		}
		say("%s, throughput: %d at concurrency %d", m.name, cfg.N, cfg.Concurrency)
		var profiled func()
		if m.name != "raw" && res.CPUProfile != nil {
			// The window holds the whole measurement: N operations take
			// at most N over the rate at concurrency 1 (a rate at C is
			// higher), so each profile's samples over N are its CPU per
			// operation, comparable between the two kinds.
			secs := 1
			if t := m.out.C1.ThroughputPerS; t > 0 {
				secs = max(1, int(math.Ceil(float64(cfg.N)/t)))
			}
			prefix := ""
			if m.name == "trivial" {
				prefix = "trivial-"
			}
			profiled = cpuProfile(ctx, res.CPUProfile, prefix, workerDebug, secs)
		}
		before = pids.cpu()
		m.out.CN = measure(ctx, m.f, cfg.N, cfg.Concurrency)
		if profiled != nil {
			profiled()
		}
		if m.name != "raw" {
			quiesce(ctx, c, ended.Load(), say)
		}
		m.out.CN.CPU = pids.perOp(before, m.out.CN.Ops)
		slowEvents(ctx, c, m.out.CN.Slowest)
		if err := ctx.Err(); err != nil {
			return nil, err // interrupted: every operation from here would fail
		}
	}
	if res.Trivial.CN.ThroughputPerS > 0 {
		res.Ratios.DelegateVsTrivialThroughput = round2(res.Delegate.CN.ThroughputPerS / res.Trivial.CN.ThroughputPerS)
	}
	if res.Trivial.C1.P50ms > 0 {
		res.Ratios.DelegateVsTrivialP50C1 = round2(res.Delegate.C1.P50ms / res.Trivial.C1.P50ms)
	}
	res.Ratios.DelegateVsRawP50OverheadMs = round2(res.Delegate.C1.P50ms - res.Raw.C1.P50ms)

	say("history events")
	if res.HistoryEvents, res.HistoryBytes, err = historyEvents(ctx, c, base); err != nil {
		return nil, err
	}
	if len(cfg.WorkerCommand) > 0 && cfg.Waiting > 0 {
		// The waiting delegations belong to the waiting measurement's
		// worker process alone, and its agent process's RSS to its own
		// tasks (an agent in this process serves the waiting one too).
		stopWorker()
		stopWorker = func() {}
		if len(cfg.AgentCommand) > 0 {
			stopAgent()
			stopAgent = func() {}
		}
		say("waiting: %d delegations in input-required on a worker process", cfg.Waiting)
		res.Waiting, err = waiting(ctx, c, srv, base, cfg, say)
		switch {
		case err != nil && ctx.Err() != nil:
			res.Waiting.Skipped = "interrupted"
		case err != nil:
			res.Waiting.Skipped = err.Error()
		}
	} else {
		res.Waiting.Skipped = "--waiting 0"
	}
	res.Targets = targets(res)
	return res, nil
}

func contract(id, base, scenario string) contracts.Delegation {
	return contracts.Delegation{
		LocalWorkflowID: id, AgentCardURL: base, Skill: claimsagent.SkillID, Purpose: "bench",
		Message:        contracts.MessageSpec{Text: "order A-1 lost", Data: json.RawMessage(`{"order_id":"A-1","scenario":"` + scenario + `"}`)},
		AllowedOutputs: []string{claimsagent.ArtifactKind}, Deadline: time.Now().Add(time.Hour), WriteAuthority: "none",
	}
}

// rawExchange is the same exchange with the a2a-go client and no
// durability: send, then GetTask until the task is done, first after
// activities.SettleFirstRead as SendMessage does, then doubling.
func rawExchange(ctx context.Context, c *a2aclient.Client) error {
	snap, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: fmt.Sprintf("raw-%d", time.Now().UnixNano()), Text: "order A-1 lost", Data: json.RawMessage(`{"order_id":"A-1","scenario":"instant"}`)})
	if err != nil {
		return err
	}
	wait := activities.SettleFirstRead
	for !snap.State.Terminal() {
		time.Sleep(wait)
		wait = min(wait*2, time.Second)
		if snap, err = c.GetTask(ctx, snap.TaskID, snap.ContextID); err != nil {
			return err
		}
	}
	if snap.State != contracts.TaskStateCompleted {
		return fmt.Errorf("state %s", snap.State)
	}
	return nil
}

// quiesce waits (at most 2 minutes) until the server's visibility store
// has recorded every workflow that ended before it (CountWorkflowExecutions,
// ExecutionStatus != "Running"): the visibility queue of a step at
// concurrency 50 runs on after it (about 9 core-ms a record on SQLite), and
// left alone it ran during the next step, slowing whichever kind was
// measured next (the delegation at concurrency 1 came after the trivial
// workflows at 50). So each Temporal measurement starts on a server with
// no work left over from another.
func quiesce(ctx context.Context, c client.Client, ended int64, say func(string, ...any)) {
	deadline := time.Now().Add(2 * time.Minute)
	for ctx.Err() == nil {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: `ExecutionStatus != "Running"`})
		if err == nil && resp.GetCount() >= ended {
			return
		}
		if time.Now().After(deadline) {
			say("the server still had visibility records to write after 2 minutes (%d of %d; %v); measuring on", resp.GetCount(), ended, err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// measure runs n operations with the given concurrency; f returns the
// workflow id of its operation ("" for none).
func measure(ctx context.Context, f func(context.Context) (string, error), n, concurrency int) Stats {
	ops := make([]SlowOp, n)
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				id, err := f(ctx)
				if err != nil {
					errs.Add(1)
				}
				lat[i] = time.Since(t0)
				ops[i] = SlowOp{ID: id, Ms: round2(float64(lat[i].Microseconds()) / 1000), Started: t0, Ended: t0.Add(lat[i])}
			}
		})
	}
	wg.Wait()
	total := time.Since(start)
	slices.SortFunc(ops, func(a, b SlowOp) int { return cmp.Compare(b.Ms, a.Ms) })
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p*float64(n)+0.5) - 1
		i = max(0, min(i, n-1))
		return round2(float64(lat[i].Microseconds()) / 1000)
	}
	return Stats{Ops: n, ThroughputPerS: round2(float64(n) / total.Seconds()), P50ms: pct(0.50), P95ms: pct(0.95), P99ms: pct(0.99), Errors: int(errs.Load()),
		Slowest: ops[:min(slowestKept, n)]}
}

// slowestKept is how many of a measurement's slowest operations its Stats
// keep (Stats.Slowest).
const slowestKept = 5

// SlowOp is one of a measurement's slowest operations: its workflow ("":
// the raw exchange), how long it took, and where its time went.
type SlowOp struct {
	ID string  `json:"workflow_id,omitempty"`
	Ms float64 `json:"ms"`
	// Events are its workflow's history events, each at its time after
	// the operation started (ms); ResultAfterMs is when the caller had the
	// result, after the last event.
	Events        []SlowEvent `json:"events,omitempty"`
	ResultAfterMs float64     `json:"result_after_last_event_ms,omitempty"`

	Started, Ended time.Time `json:"-"`
}

// SlowEvent is one history event of a SlowOp.
type SlowEvent struct {
	Type    string  `json:"type"`
	AfterMs float64 `json:"after_ms"`
}

// slowEvents fills each slow operation's Events from its workflow's
// history (a read failure leaves them empty).
func slowEvents(ctx context.Context, c client.Client, ops []SlowOp) {
	for i := range ops {
		op := &ops[i]
		if op.ID == "" {
			continue
		}
		it := c.GetWorkflowHistory(ctx, op.ID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var last time.Time
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				break
			}
			at := ev.GetEventTime().AsTime()
			last = at
			op.Events = append(op.Events, SlowEvent{Type: strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"), AfterMs: round2(float64(at.Sub(op.Started).Microseconds()) / 1000)})
		}
		if !last.IsZero() {
			op.ResultAfterMs = round2(float64(op.Ended.Sub(last).Microseconds()) / 1000)
		}
	}
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// historyEvents runs one plain delegation and one with an input round and
// counts their history events.
func historyEvents(ctx context.Context, c client.Client, base string) (HistoryEvents, HistoryBytes, error) {
	// count returns a workflow's history events and the sum of their
	// proto sizes.
	count := func(id string) (int, int, error) {
		it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		n, size := 0, 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return 0, 0, err
			}
			n++
			size += proto.Size(ev)
		}
		return n, size, nil
	}
	var h HistoryEvents
	var b HistoryBytes
	d := contract("bench-history-plain", base, "instant")
	run, err := startRun(ctx, c, d)
	if err != nil {
		return h, b, err
	}
	if err := run.Get(ctx, nil); err != nil {
		return h, b, err
	}
	if h.Completed, b.Completed, err = count(d.LocalWorkflowID); err != nil {
		return h, b, err
	}
	d = contract("bench-history-round", base, "lost-parcel")
	run, err = startRun(ctx, c, d)
	if err != nil {
		return h, b, err
	}
	if err := answerWhenAsked(ctx, c, d.LocalWorkflowID); err != nil {
		return h, b, err
	}
	if err := run.Get(ctx, nil); err != nil {
		return h, b, err
	}
	if h.OneInputRound, b.OneInputRound, err = count(d.LocalWorkflowID); err != nil {
		return h, b, err
	}
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: contracts.TaskQueue, ID: "bench-history-trivial"}, workeropts.TrivialWorkflow)
	if err != nil {
		return h, b, err
	}
	if err := run.Get(ctx, nil); err != nil {
		return h, b, err
	}
	b.TrivialEvents, b.Trivial, err = count("bench-history-trivial")
	return h, b, err
}

// answerWhenAsked answers once the question shows (Query "state", which
// adds nothing to history), as an operator would: an answer sent before
// the question is refused, and its workflow task is in history.
func answerWhenAsked(ctx context.Context, c client.Client, id string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st, err := dclient.Get(c, id).State(ctx); err == nil && st.Question != nil {
			_, err := dclient.Get(c, id).Answer(ctx, contracts.Answer{Text: "photo", AnsweredBy: "bench"})
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s never asked for input", id)
}

// waiting starts a worker process and parks cfg.Waiting delegations in
// INPUT_REQUIRED on it. First, with 10 waiting, it times AnswerOps answers
// (each answered delegation replaced, so that 10 stay waiting); then it
// parks the rest, reads the worker's RSS (/proc) and heap (expvar), the
// bench process's RSS (the server's) and the database's growth, and times
// AnswerOps answers again.
func waiting(ctx context.Context, c client.Client, srv *devserver.Server, base string, cfg Config, say func(string, ...any)) (Waiting, error) {
	out := Waiting{AnswerOps: answerOps}
	cmd, debugAddr, err := startWorker(ctx, cfg, srv)
	if err != nil {
		return out, err
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	var agent *exec.Cmd
	if len(cfg.AgentCommand) > 0 {
		var addr string
		if agent, addr, err = startAgent(ctx, cfg); err != nil {
			return out, err
		}
		defer func() { _ = agent.Process.Kill(); _, _ = agent.Process.Wait() }()
		base = "http://" + addr
	}
	dbBefore, dbErr := srv.DatabaseBytes(ctx)

	var seq atomic.Int64
	park := func(n int) error {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 50)
		var failed atomic.Int64
		var firstErr atomic.Value
		for range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				d := waitingContract(fmt.Sprintf("bench-waiting-%d", seq.Add(1)), base)
				// A start refused under load (a timeout, a rate limit) is
				// tried again; one that did start the first time is running.
				var err error
				for try := 0; try < 5 && ctx.Err() == nil; try++ {
					if _, err = startRun(ctx, c, d); err == nil || errors.Is(err, dclient.ErrAlreadyRunning) {
						return
					}
					sleep(ctx, time.Second)
				}
				if err == nil {
					err = ctx.Err()
				}
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err // interrupted (SIGTERM, SIGINT): no more retries
		}
		if n := failed.Load(); n > 0 {
			return fmt.Errorf("%d delegations did not start (%v)", n, firstErr.Load())
		}
		return nil
	}
	waitingNow := func() int {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: srv.Namespace(),
			Query: `WorkflowType = "Delegation" AND ExecutionStatus = "Running" AND A2AState = "input-required"`})
		if err != nil {
			return -1
		}
		return int(resp.GetCount())
	}
	// waitUntil waits until n delegations wait (visibility), at most
	// within; it returns how many do. A count is a scan of the visibility
	// rows that match (on PostgreSQL a sequential scan of the table: 60 ms
	// at 28,000 waiting here), so past 1,000 it is read every 2 s, not
	// every 200 ms: the count must not take the CPU the parking needs.
	waitUntil := func(n int, within time.Duration) int {
		deadline := time.Now().Add(within)
		every := 200 * time.Millisecond
		if n > 1000 {
			every = 2 * time.Second
		}
		for {
			got := waitingNow()
			if got >= n || time.Now().After(deadline) || ctx.Err() != nil {
				return got
			}
			sleep(ctx, every)
		}
	}
	// answer answers bench-waiting-<id>, timed.
	answer := func(id int64) (time.Duration, error) {
		wid := fmt.Sprintf("bench-waiting-%d", id)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if st, err := dclient.Get(c, wid).State(ctx); err == nil && st.Question != nil {
				break
			}
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%s never asked for input", wid)
			}
		}
		t0 := time.Now()
		_, err := dclient.Get(c, wid).Answer(ctx, contracts.Answer{Text: "photo", AnsweredBy: "bench"})
		return time.Since(t0), err
	}

	// With 10 waiting.
	if err := park(10); err != nil {
		return out, err
	}
	if got := waitUntil(10, time.Minute); got < 10 {
		return out, fmt.Errorf("only %d of 10 delegations reached input-required", got)
	}
	say("waiting: %d answers with 10 waiting", answerOps)
	var at10 []time.Duration
	for i := range answerOps {
		d, err := answer(int64(i + 1))
		if err != nil {
			return out, fmt.Errorf("answer with 10 waiting: %w", err)
		}
		at10 = append(at10, d)
		if err := park(1); err != nil {
			return out, err
		}
		waitUntil(10, 30*time.Second)
	}
	out.AnswerP50At10ms = p50(at10)
	first := seq.Load() // the delegations parked from here on are counted

	t0 := time.Now()
	rest := cfg.Waiting - 10
	say("waiting: parking %d more", rest)
	// In batches, each let reach input-required (within 1,000) before the
	// next: starting faster than the server processes only queues tasks.
	const batch = 2000
	for done := 0; done < rest; {
		n := min(batch, rest-done)
		if err := park(n); err != nil {
			return out, err
		}
		done += n
		got := waitUntil(max(10+done-1000, 10), 10*time.Minute)
		if err := ctx.Err(); err != nil {
			return out, err
		}
		say("waiting: %d started, %d waiting, %.1f/s", done, got, float64(got-10)/time.Since(t0).Seconds())
	}
	out.Count = waitUntil(cfg.Waiting, 3*time.Minute+time.Duration(cfg.Waiting)*10*time.Millisecond)
	out.ParkedPerS = round2(float64(out.Count-10) / time.Since(t0).Seconds())
	if out.Count < cfg.Waiting {
		out.Skipped = fmt.Sprintf("only %d of %d delegations reached input-required in time; measured with %d", out.Count, cfg.Waiting, out.Count)
	}
	say("waiting: %d waiting; reading memory and the database", out.Count)
	rss, err := rssMB(cmd.Process.Pid)
	if err != nil {
		return out, err
	}
	heap, err := heapMB(ctx, debugAddr)
	if err != nil {
		return out, err
	}
	out.WorkerRSSMB, out.WorkerHeapMB = round2(rss), round2(heap)
	if self, err := rssMB(os.Getpid()); err == nil {
		out.ServerRSSMB = round2(self)
	}
	if agent != nil {
		if a, err := rssMB(agent.Process.Pid); err == nil {
			out.AgentRSSMB = round2(a)
		}
	}
	if dbErr == nil {
		if after, err := srv.DatabaseBytes(ctx); err == nil && out.Count > 0 {
			out.DBBytesPerWaiting = round2(float64(after-dbBefore) / float64(out.Count))
		}
	}
	parked := int64(out.Count - 10)
	ops := int(min(int64(answerOps), parked))
	out.AnswerOps = ops
	say("waiting: %d answers with %d waiting", ops, out.Count)
	var atN []time.Duration
	for i := range ops {
		// Spread evenly over those parked after the first 10 (at
		// 100,000, 2,000 apart: none is in the worker's cache).
		id := first + 1 + int64(i)*(parked/int64(ops))
		d, err := answer(id)
		if err != nil {
			return out, fmt.Errorf("answer with %d waiting: %w", out.Count, err)
		}
		atN = append(atN, d)
	}
	if len(atN) > 0 {
		out.AnswerP50ms = p50(atN)
	}
	return out, nil
}

// freeAddr is a loopback host:port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startWorker starts cfg.WorkerCommand against srv with the bench's
// settings (and extra flags), serving /debug on the address it returns.
// The caller kills it.
func startWorker(ctx context.Context, cfg Config, srv *devserver.Server, extra ...string) (*exec.Cmd, string, error) {
	debugAddr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := append(slices.Clone(cfg.WorkerCommand), "--address", srv.FrontendAddr(), "--debug-addr", debugAddr, "--poll-initial", "20ms")
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = nil, nil // /dev/null: no pipe for the bench to copy
	child(cmd)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	return cmd, debugAddr, nil
}

// startAgent starts cfg.AgentCommand on a free loopback port and waits
// (at most 30 s) until it serves its card. The caller kills it.
func startAgent(ctx context.Context, cfg Config) (*exec.Cmd, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	aargs := append(slices.Clone(cfg.AgentCommand), "-addr", addr)
	agent := exec.CommandContext(ctx, aargs[0], aargs[1:]...)
	agent.Stdout, agent.Stderr = nil, nil
	child(agent)
	if err := agent.Start(); err != nil {
		return nil, "", err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := (&cards.Fetcher{}).Fetch(ctx, "http://"+addr); err == nil {
			return agent, addr, nil
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			_ = agent.Process.Kill()
			_, _ = agent.Process.Wait()
			return nil, "", fmt.Errorf("the claims agent process at %s: %w", addr, err)
		}
	}
}

// child prepares a process the waiting measurement starts: it gets the
// environment without the variables of delegate and Temporal
// (TEMPORAL_NAMESPACE, TEMPORAL_TLS, DELEGATE_ENCRYPTION_KEYS,
// DELEGATE_POLICY, CLAIMS_AGENT_AUTH_TOKEN ...), which would change what is
// measured (the bench refuses the flags they stand for), and it ends with
// the bench, even a killed one (parentDeath).
func child(cmd *exec.Cmd) {
	env := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "DELEGATE_") || strings.HasPrefix(name, "CLAIMS_AGENT_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	parentDeath(cmd)
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// answerOps is how many answers each answer measurement times.
const answerOps = 50

func p50(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return round2(float64(s[len(s)/2].Microseconds()) / 1000)
}

// waitingContract parks at the claims agent's question with a deadline
// (12 hours) nearer than one read (the cadence is a day), so the
// delegation sets only its deadline timer and is not read during a scale
// run: the run measures what waiting costs, not reads of the agent. With a
// read an hour, the first reads of the delegations parked in the first
// hour took more than half of this machine from the parking
// (docs/scaling.md gives what reads cost).
func waitingContract(id, base string) contracts.Delegation {
	d := contract(id, base, "lost-parcel")
	d.Deadline = time.Now().Add(12 * time.Hour)
	d.WaitingPollSeconds = contracts.MaxWaitingPollSeconds
	return d
}

func rssMB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

func heapMB(ctx context.Context, addr string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/vars", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct {
		Memstats struct {
			HeapInuse uint64 `json:"HeapInuse"`
		} `json:"memstats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return 0, err
	}
	return float64(v.Memstats.HeapInuse) / (1 << 20), nil
}

// targets are issue 39's (docs/performance.md): a delegation costs the
// server's floor (the trivial workflow) plus its A2A exchange (raw) plus at
// most 10 %, carries 0.8 of the trivial workflow's throughput, has no tail
// of its own, and keeps its history at 12 events (26 with one input
// round); and issue 13's spread at concurrency C.
func targets(r *ServerResult) map[string]Verdict {
	spread := func(st Stats) float64 {
		if st.P50ms == 0 {
			return 0
		}
		return round2(st.P95ms / st.P50ms)
	}
	over := 0.0 // (delegate p50 - raw p50) / trivial p50, at concurrency 1
	if r.Trivial.C1.P50ms > 0 {
		over = round2((r.Delegate.C1.P50ms - r.Raw.C1.P50ms) / r.Trivial.C1.P50ms)
	}
	tail := round2(max(3*r.Delegate.C1.P50ms, 1.5*r.Trivial.C1.P99ms))
	t := map[string]Verdict{
		"history_completed_le_12":                     {Value: float64(r.HistoryEvents.Completed), Target: "<= 12", Holds: r.HistoryEvents.Completed <= 12},
		"history_one_round_le_26":                     {Value: float64(r.HistoryEvents.OneInputRound), Target: "<= 26", Holds: r.HistoryEvents.OneInputRound <= 26},
		"throughput_vs_trivial_ge_0.8":                {Value: r.Ratios.DelegateVsTrivialThroughput, Target: ">= 0.8", Holds: r.Ratios.DelegateVsTrivialThroughput >= 0.8},
		"delegate_minus_raw_vs_trivial_p50_c1_le_1.1": {Value: over, Target: "<= 1.1 ((delegate p50 - raw p50) / trivial p50, concurrency 1)", Holds: over > 0 && over <= 1.1},
		"delegate_p99_c1_le_tail":                     {Value: r.Delegate.C1.P99ms, Target: fmt.Sprintf("<= %g ms (max(3 x delegate p50, 1.5 x trivial p99), concurrency 1)", tail), Holds: r.Delegate.C1.P99ms > 0 && r.Delegate.C1.P99ms <= tail},
		"trivial_p95_vs_p50_cN_le_2":                  {Value: spread(r.Trivial.CN), Target: "<= 2", Holds: spread(r.Trivial.CN) <= 2},
		"delegate_p95_vs_p50_cN_le_2":                 {Value: spread(r.Delegate.CN), Target: "<= 2", Holds: spread(r.Delegate.CN) <= 2},
	}
	if w := r.Waiting; w.AnswerP50At10ms > 0 && w.AnswerP50ms > 0 {
		ratio := round2(w.AnswerP50ms / w.AnswerP50At10ms)
		t[fmt.Sprintf("answer_p50_%d_waiting_vs_10_le_2", w.Count)] = Verdict{Value: ratio, Target: "<= 2", Holds: ratio <= 2}
	}
	if r.Waiting.Count >= 100000 {
		t["worker_rss_mb_100000_waiting_le_300"] = Verdict{Value: r.Waiting.WorkerRSSMB, Target: "<= 300", Holds: r.Waiting.WorkerRSSMB <= 300}
	} else if r.Waiting.Count >= 10000 {
		t["worker_rss_mb_10000_waiting_le_300"] = Verdict{Value: r.Waiting.WorkerRSSMB, Target: "<= 300", Holds: r.Waiting.WorkerRSSMB <= 300}
	}
	return t
}

// startRun starts d through package client and returns its workflow run.
func startRun(ctx context.Context, c client.Client, d contracts.Delegation) (client.WorkflowRun, error) {
	h, err := dclient.Start(ctx, c, d)
	if err != nil {
		return nil, err
	}
	return h.Run(), nil
}
