package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newListCmd(cf *clientFlags) *cobra.Command {
	var state, starter string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--state S] [--starter NAME]",
		Short: "List delegations (visibility query on search attribute A2AState)",
		Long: `List delegations, newest first: ID, AGENT (the agent's name; the card URL
marked "(name unknown)" while the delegation has recorded no Agent Card, e.g. its
first send never succeeded or its deadline had passed; "-" when the card URL is not
known either), A2A STATE (search attribute A2AState: the remote task's state, or a
local phase such as "sending" or "ended"), OUTCOME (how an ended delegation ended:
the Outcome's status, or for a run that failed without one the failure's category,
e.g. invalid_contract; read for the 100 newest), WAITING SINCE and
DEADLINE (of running delegations, from Query "state"), WORKFLOW (the Temporal
workflow status) and STARTED.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if starter != "" && !dclient.ValidStarter(starter) {
				return usageErr(fmt.Errorf("--starter: %s", dclient.StarterRule))
			}
			if state != "" {
				var err error
				if state, err = contracts.ParseA2AState(state); err != nil {
					return usageErr(fmt.Errorf("--state: %w", err))
				}
			}
			c, err := cf.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			rows, err := dclient.List(ctx, c, dclient.ListOptions{Namespace: cf.namespace, A2AState: state, Starter: starter, WithState: true})
			if err != nil {
				return temporalErr(err)
			}
			if asJSON {
				printJSON(cmd.OutOrStdout(), rows)
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			// STARTED tells apart the runs of an id used again.
			// OUTCOME is how an ended delegation ended (A2A STATE is the
			// remote task's last state, or the phase "ended" when there is
			// none to tell).
			fmt.Fprintln(tw, "ID\tAGENT\tA2A STATE\tOUTCOME\tWAITING SINCE\tDEADLINE\tWORKFLOW\tSTARTED")
			for _, r := range rows {
				agent := orDash(clean(r.Agent))
				if r.NameUnknown && r.Agent != "" {
					agent += " (name unknown)" // the card URL: no card recorded
				}
				outcome := string(r.Outcome)
				if outcome == "" {
					outcome = r.Failure // a failed run: why (invalid_contract)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clean(r.ID), agent, orDash(clean(r.A2AState)), orDash(clean(outcome)), fmtTime(r.WaitingSince), fmtTime(r.Deadline), r.Status, fmtTime(&r.Started))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only delegations whose A2AState is S: "+strings.Join(contracts.A2AStates, ", "))
	cmd.Flags().StringVar(&starter, "starter", "", "only delegations whose search attribute DelegationStarter is NAME (the actor that started them through delegate mcp)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
