//go:build !worker

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/a2adelegate/delegate/internal/bench"
	"github.com/a2adelegate/delegate/internal/devserver"
)

func newBenchCmd() *cobra.Command {
	var cfg bench.Config
	var asJSON bool
	var dynamicConfigFile string
	cmd := &cobra.Command{
		Use:   "bench [-n N] [--concurrency C] [--latency-ops L] [--waiting W] [--server URL [--only embedded|postgres]] [--dynamic-config FILE] [--cpuprofile DIR] [--json]",
		Short: "Measure delegations against raw A2A calls and a trivial workflow, in one run (docs/performance.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.WorkerCommand = []string{self, "worker"}
			if agent := filepath.Join(filepath.Dir(self), "claims-agent"); fileExists(agent) {
				// make build puts it next to delegate. Without a work delay,
				// like the agent the bench runs in its own process: a
				// delegation parks at the question in one send (the agent's
				// default 500 ms would add a read, a workflow task and a
				// state to every parked delegation).
				cfg.AgentCommand = []string{agent, "-work-delay", "0"}
			}
			// Counts a person typed wrong are refused, not replaced by the
			// defaults (bench.Run takes 0 as "the default").
			for _, c := range []struct {
				flag string
				v    int
				min  int
				max  int
			}{{"-n", cfg.N, 1, 1_000_000}, {"--concurrency", cfg.Concurrency, 1, 10_000}, {"--latency-ops", cfg.Latency, 1, 1_000_000}, {"--waiting", cfg.Waiting, 0, 10_000_000}} {
				if c.v < c.min {
					return usageErr(fmt.Errorf("%s %d: must be at least %d", c.flag, c.v, c.min))
				}
				if c.v > c.max {
					return usageErr(fmt.Errorf("%s %d: must be at most %d", c.flag, c.v, c.max))
				}
			}
			if cfg.Waiting > 0 && cfg.Waiting < 10 {
				return usageErr(fmt.Errorf("--waiting %d: 0 (skip it) or at least 10 (it first times answers with 10 waiting)", cfg.Waiting))
			}
			if cmd.Flags().Changed("only") && cfg.Only == "" {
				return usageErr(errors.New(`--only "": "embedded" or "postgres" (leave the flag out for both)`))
			}
			switch {
			case cfg.Only != "" && cfg.Only != "embedded" && cfg.Only != "postgres":
				return usageErr(fmt.Errorf(`--only %q: "embedded" or "postgres"`, cfg.Only))
			case cfg.Only == "postgres" && cfg.Postgres == "":
				return usageErr(fmt.Errorf("--only postgres: needs --server postgres://USER@HOST:PORT/DB"))
			}
			if cfg.Postgres != "" {
				if err := devserver.CheckPostgresURL(cfg.Postgres); err != nil {
					return usageErr(errors.New(strings.TrimPrefix(err.Error(), "devserver: ")))
				}
			}
			if dynamicConfigFile != "" {
				if cfg.DynamicConfig, err = devserver.LoadDynamicConfig(dynamicConfigFile); err != nil {
					return usageErr(err)
				}
			}
			cfg.Progress = cmd.ErrOrStderr() // JSON goes to stdout
			res, err := bench.Run(cmd.Context(), cfg)
			// An interrupt (SIGINT, SIGTERM) ends the run where it is: what
			// was measured is printed, and the exit code says it is partial.
			interrupted := cmd.Context().Err() != nil
			if err != nil && !interrupted {
				return temporalErr(err)
			}
			if res != nil {
				if asJSON {
					printJSON(cmd.OutOrStdout(), res)
				} else {
					for _, name := range []string{"embedded", "postgres"} {
						if r, ok := res.Servers[name]; ok {
							fmt.Fprintf(cmd.OutOrStdout(), "== %s: %s\n", name, r.Settings["server"])
							printBench(cmd.OutOrStdout(), r)
						}
					}
				}
			}
			if interrupted {
				return &exitError{code: exitNotComplete, err: errors.New("bench interrupted: the figures printed (if any) are partial")}
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&cfg.N, "n", "n", 300, "operations per throughput measurement")
	cmd.Flags().IntVar(&cfg.Concurrency, "concurrency", 50, "concurrency of the throughput measurement")
	cmd.Flags().IntVar(&cfg.Latency, "latency-ops", 50, "operations of the latency measurement (concurrency 1)")
	cmd.Flags().IntVar(&cfg.Waiting, "waiting", 1000, "delegations held in input-required on a worker process (0: skip)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&cfg.Postgres, "server", "", "also measure on a Temporal server on this PostgreSQL database: postgres://USER@HOST:PORT/DB (make bench-postgres starts one)")
	cmd.Flags().StringVar(&cfg.Only, "only", "", `measure on one server only: "embedded" or "postgres"`)
	cmd.Flags().StringVar(&cfg.CPUProfileDir, "cpuprofile", "", "write CPU profiles (pprof) of the trivial and the delegate measurements at --concurrency: DIR/server.pprof (the bench process: server and load) and DIR/worker.pprof (the worker process) of the delegations, DIR/trivial-server.pprof and DIR/trivial-worker.pprof of the trivial workflows")
	cmd.Flags().StringVar(&dynamicConfigFile, "dynamic-config", "", "Temporal dynamic-config YAML file, over the one-host defaults of every server the bench runs (SQLite and PostgreSQL)")
	return cmd
}

func printBench(w io.Writer, r *bench.ServerResult) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tconcurrency\tops\tthroughput/s\tp50 ms\tp95 ms\tp99 ms\terrors\tcore-ms/op: bench\tworker\tagent\t")
	row := func(name, c string, s bench.Stats) {
		cpu := "-\t-\t-"
		if s.CPU != nil {
			cpu = fmt.Sprintf("%.2f\t%.2f\t%.2f", s.CPU.Bench, s.CPU.Worker, s.CPU.Agent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%s\t\n", name, c, s.Ops, s.ThroughputPerS, s.P50ms, s.P95ms, s.P99ms, s.Errors, cpu)
	}
	for _, p := range []struct {
		name string
		pair bench.Pair
	}{{"raw", r.Raw}, {"trivial", r.Trivial}, {"delegate", r.Delegate}} {
		row(p.name, "1", p.pair.C1)
		row(p.name, fmt.Sprint(r.Settings["concurrency"]), p.pair.CN)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\ndelegate/trivial throughput %.2f, p50 at c=1 %.2f, overhead over raw p50 %.1f ms\n",
		r.Ratios.DelegateVsTrivialThroughput, r.Ratios.DelegateVsTrivialP50C1, r.Ratios.DelegateVsRawP50OverheadMs)
	where := func(p string) string {
		if p == "process" {
			return "its own process"
		}
		return "the bench process"
	}
	fmt.Fprintf(w, "core-ms/op: CPU per operation; bench is the bench process (the Temporal server and the load generator); the worker ran in %s, the claims agent in %s\n",
		where(r.Processes["worker"]), where(r.Processes["agent"]))
	fmt.Fprintf(w, "history events: completed %d, one input round %d\n", r.HistoryEvents.Completed, r.HistoryEvents.OneInputRound)
	hb := r.HistoryBytes
	fmt.Fprintf(w, "history bytes: completed %d, one input round %d, trivial %d (%d events)\n", hb.Completed, hb.OneInputRound, hb.Trivial, hb.TrivialEvents)
	if p := r.CPUProfile; p != nil {
		fmt.Fprintf(w, "cpu profiles (%d s of delegate at c=%v) in %s: %s", p.Seconds, r.Settings["concurrency"], p.Dir, strings.Join(p.Files, ", "))
		if p.Error != "" {
			fmt.Fprintf(w, " (%s)", p.Error)
		}
		fmt.Fprintln(w)
	}
	if r.Waiting.Count == 0 {
		fmt.Fprintf(w, "waiting: skipped (%s)\n", r.Waiting.Skipped)
	} else {
		if r.Waiting.Skipped != "" {
			fmt.Fprintf(w, "waiting: %s\n", r.Waiting.Skipped)
		}
		wt := r.Waiting
		fmt.Fprintf(w, "waiting: %d delegations in input-required (parked at %.1f/s): worker RSS %.1f MB, heap %.1f MB; bench process (server) RSS %.1f MB\n",
			wt.Count, wt.ParkedPerS, wt.WorkerRSSMB, wt.WorkerHeapMB, wt.ServerRSSMB)
		if wt.AgentRSSMB > 0 {
			fmt.Fprintf(w, "claims agent process RSS %.1f MB\n", wt.AgentRSSMB)
		}
		fmt.Fprintf(w, "answer p50 over %d: %.1f ms with %d waiting, %.1f ms with 10 waiting\n", wt.AnswerOps, wt.AnswerP50ms, wt.Count, wt.AnswerP50At10ms)
		if wt.DBBytesPerWaiting > 0 {
			fmt.Fprintf(w, "database: %.0f bytes per waiting delegation\n", wt.DBBytesPerWaiting)
		}
	}
	names := make([]string, 0, len(r.Targets))
	for n := range r.Targets {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "targets:")
	for _, n := range names {
		v := r.Targets[n]
		mark := "holds"
		if !v.Holds {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "  %-30s %8.2f  (%s)  %s\n", n, v.Value, v.Target, mark)
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
