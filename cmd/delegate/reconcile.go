package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newReconcileCmd(cf *clientFlags) *cobra.Command {
	var in contracts.ReconcileInput
	var schedule string
	var wait time.Duration
	var asJSON, noOrphans bool
	cmd := &cobra.Command{
		Use:   "reconcile [--older-than D] [--state S] [--schedule 15m|off]",
		Short: "Make open delegations read their remote task once now (Signal \"reconcile\") and show what changed",
		Long: `Find the open delegations through visibility (optionally only those started more
than --older-than ago, or whose A2AState is --state), send each the Signal
"reconcile" (the workflow calls GetTask once and records what it saw), and print
a table of what changed. Then a worker sweeps the orphans: the delegations killed
from outside (terminated, or replaced by a start with TERMINATE_EXISTING) within the
last day never canceled their remote task; each still working is canceled, and the
table says what was done (--no-orphans skips it). With --schedule, create (or replace)
a Temporal Schedule "delegate-reconcile" that does both every interval; --schedule off
removes it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if in.OlderThan < 0 {
				return usageErr(errors.New("--older-than must not be negative"))
			}
			if in.State != "" {
				var err error
				if in.State, err = contracts.ParseA2AState(in.State); err != nil {
					return usageErr(fmt.Errorf("--state: %w", err))
				}
			}
			var every time.Duration
			if strings.EqualFold(schedule, "off") {
				schedule = "off"
			} else if cmd.Flags().Changed("schedule") {
				var err error
				if every, err = time.ParseDuration(schedule); err != nil || every < time.Minute {
					return usageErr(fmt.Errorf("--schedule %q: an interval of at least 1m (e.g. 15m), or off", schedule))
				}
			}
			c, err := cf.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			in.Namespace = cf.namespace
			if schedule == "off" {
				removed, err := dclient.RemoveReconcileSchedule(ctx, c)
				switch {
				case err != nil:
					return temporalErr(err)
				case asJSON:
					printJSON(cmd.OutOrStdout(), map[string]any{"schedule": contracts.ReconcileScheduleID, "removed": removed})
				case removed:
					fmt.Fprintf(cmd.OutOrStdout(), "schedule %s removed\n", contracts.ReconcileScheduleID)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "schedule %s: there is none\n", contracts.ReconcileScheduleID)
				}
				return nil
			}
			if every > 0 {
				replaced, err := dclient.ScheduleReconcile(ctx, c, every, in)
				if err != nil {
					return temporalErr(err)
				}
				done := "created"
				if replaced {
					done = "replaced" // a second --schedule said the same as the first
				}
				if asJSON {
					printJSON(cmd.OutOrStdout(), map[string]any{"schedule": contracts.ReconcileScheduleID, "replaced": replaced, "every": every.String(), "state": in.State, "older_than": in.OlderThan.String(), "orphan_window": orphanWindow(in).String()})
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "schedule %s %s: %s\n", contracts.ReconcileScheduleID, done, describeSchedule(every, in))
				return nil
			}
			open, err := dclient.List(ctx, c, dclient.ReconcileOptions(in, time.Now()))
			if err != nil {
				return temporalErr(err)
			}
			var ids []string
			for _, r := range open {
				ids = append(ids, r.ID)
			}
			type row struct {
				id, before, seen, changed, note string
			}
			var rows []row
			for _, id := range ids {
				before, err := queryState(ctx, c, id)
				if err != nil {
					rows = append(rows, row{id: id, note: err.Error()})
					continue
				}
				n := len(before.Reconciliations)
				if err := dclient.Get(c, id).Reconcile(ctx); err != nil {
					rows = append(rows, row{id: id, before: before.A2AState, note: err.Error()})
					continue
				}
				r := row{id: id, before: before.A2AState, note: "no answer yet"}
				deadline := time.Now().Add(wait)
				for time.Now().Before(deadline) {
					after, err := queryState(ctx, c, id)
					if err == nil && len(after.Reconciliations) > n {
						rec := after.Reconciliations[len(after.Reconciliations)-1]
						r.seen, r.changed, r.note = rec.Seen, fmt.Sprint(rec.Changed), rec.Error
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				rows = append(rows, r)
			}
			if asJSON {
				out := []map[string]any{}
				for _, r := range rows {
					out = append(out, map[string]any{"id": r.id, "recorded_state": r.before, "remote_state": r.seen, "changed": r.changed == "true", "note": r.note})
				}
				if noOrphans {
					printJSON(cmd.OutOrStdout(), out)
					return nil
				}
				id, report, err := runSweep(ctx, c, in, wait)
				res := map[string]any{"reconciled": out, "orphan_sweep": id, "orphans": report.Orphans}
				if err != nil {
					res["orphan_sweep_error"] = err.Error()
				}
				printJSON(cmd.OutOrStdout(), res)
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tA2A STATE\tREMOTE STATE NOW\tCHANGED\tNOTE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clean(r.id), clean(r.before), clean(r.seen), r.changed, clean(r.note))
			}
			_ = tw.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "%d open delegation(s) reconciled\n", len(rows))
			if noOrphans {
				return nil
			}
			return sweepOrphans(cmd, c, in, wait)
		},
	}
	cmd.Flags().DurationVar(&in.OlderThan, "older-than", 0, "only delegations started more than this long ago")
	cmd.Flags().StringVar(&in.State, "state", "", "only delegations whose A2AState is S: "+strings.Join(contracts.A2AStates, ", "))
	cmd.Flags().StringVar(&schedule, "schedule", "", `create a Temporal Schedule that reconciles every interval (e.g. 15m); "off" removes it`)
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for each delegation's answer")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noOrphans, "no-orphans", false, "skip the orphan sweep (the remote tasks of terminated delegations, canceled by a worker)")
	return cmd
}

// runSweep runs the orphan sweep on a worker (client.SweepOrphans),
// waiting at most wait and 30 s for its report.
func runSweep(ctx context.Context, c client.Client, in contracts.ReconcileInput, wait time.Duration) (string, contracts.ReconcileReport, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+30*time.Second)
	defer cancel()
	return dclient.SweepOrphans(ctx, c, in)
}

// sweepOrphans runs the orphan sweep on a worker and prints what it did.
func sweepOrphans(cmd *cobra.Command, c client.Client, in contracts.ReconcileInput, wait time.Duration) error {
	id, report, err := runSweep(cmd.Context(), c, in, wait)
	w := cmd.OutOrStdout()
	if err != nil {
		fmt.Fprintf(w, "orphan sweep %s: %v (is a worker running? the Schedule runs it too)\n", id, err)
		return nil
	}
	if len(report.Orphans) == 0 {
		fmt.Fprintf(w, "orphan sweep %s: no terminated delegation left a remote task working\n", id)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TERMINATED ID\tRUN\tCLOSED BY\tREMOTE TASK\tACTION\tREMOTE STATE NOW\tNOTE")
	for _, o := range report.Orphans {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clean(o.WorkflowID), o.RunID, o.ClosedBy, clean(o.RemoteTaskID), o.Action, clean(o.Seen), clean(o.Error))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "orphan sweep %s: %d terminated delegation(s) with a remote task\n", id, len(report.Orphans))
	return nil
}

// describeSchedule says what the reconcile Schedule made with every and in
// does at each tick (workflows.ReconcileDelegations): which open
// delegations it signals, and the orphan sweep's window.
func describeSchedule(every time.Duration, in contracts.ReconcileInput) string {
	which := "every open delegation"
	var filters []string
	if in.State != "" {
		filters = append(filters, "whose A2AState is "+in.State)
	}
	if in.OlderThan > 0 {
		filters = append(filters, "started more than "+shortDuration(in.OlderThan)+" ago")
	}
	if len(filters) == 0 {
		which += " (any A2AState, any age)"
	} else {
		which += " " + strings.Join(filters, ", ")
	}
	return fmt.Sprintf(`every %s, Signal "reconcile" to %s, then the orphan sweep (delegations terminated within the last %s whose remote task still works are canceled); remove it with: delegate reconcile --schedule off`,
		shortDuration(every), which, shortDuration(orphanWindow(in)))
}

// orphanWindow is how far back the orphan sweep of in looks.
func orphanWindow(in contracts.ReconcileInput) time.Duration {
	if in.OrphanWindow > 0 {
		return in.OrphanWindow
	}
	return contracts.DefaultOrphanWindow
}

// shortDuration is d as time.Duration.String writes it, without the zero
// units at its end ("15m", "1h30m", "24h"; not "15m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
