package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newListCmd(cf *clientFlags) *cobra.Command {
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--state S]",
		Short: "List delegations (visibility query on search attribute A2AState)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
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
			q := fmt.Sprintf("WorkflowType = %q", contracts.WorkflowType)
			if state != "" {
				q += " AND " + contracts.A2AStateFilter(state)
			}
			rows, err := listDelegations(ctx, c, cf.namespace, q)
			if err != nil {
				return temporalErr(err)
			}
			fillFromState(ctx, c, rows)
			if asJSON {
				b, _ := json.MarshalIndent(rows, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tREMOTE STATE\tWAITING SINCE\tDEADLINE\tWORKFLOW")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", clean(r.ID), clean(r.Agent), clean(r.A2AState), fmtTime(r.WaitingSince), fmtTime(r.Deadline), r.Status)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only delegations whose A2AState is S: "+strings.Join(contracts.A2AStates, ", "))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type listRow struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	A2AState string    `json:"a2a_state"`
	Status   string    `json:"workflow_status"`
	Started  time.Time `json:"started"`
	// WaitingSince is when the open question was asked (running
	// delegations waiting for an operator); Deadline the contract's.
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
	Deadline     *time.Time `json:"deadline,omitempty"`
}

// fillFromState adds, for running delegations, what only the workflow
// knows (Query "state", bounded by a short timeout each).
func fillFromState(ctx context.Context, c client.Client, rows []listRow) {
	for i := range rows {
		if rows[i].Status != "running" {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := dclient.Get(c, rows[i].ID).State(qctx)
		cancel()
		if err != nil {
			continue
		}
		d := s.Deadline
		rows[i].Deadline = &d
		if s.Question != nil {
			since := s.Question.Since
			rows[i].WaitingSince = &since
		} else if s.Unknown != nil {
			since := s.Unknown.Since
			rows[i].WaitingSince = &since
		}
	}
}

func listDelegations(ctx context.Context, c client.Client, ns, query string) ([]listRow, error) {
	rows := []listRow{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query, NextPageToken: token})
		if err != nil {
			var inv *serviceerror.InvalidArgument
			if errors.As(err, &inv) {
				return nil, fmt.Errorf("visibility query %q refused: %w", query, err)
			}
			return nil, err
		}
		for _, ex := range resp.Executions {
			r := listRow{ID: ex.Execution.WorkflowId, Status: statusName(ex.Status), Started: ex.StartTime.AsTime().UTC()}
			if sa := ex.SearchAttributes; sa != nil {
				r.Agent = keyword(sa.IndexedFields["A2AAgent"].GetData())
				r.A2AState = contracts.CurrentA2AState(keyword(sa.IndexedFields[contracts.SearchAttributeA2AState].GetData()))
			}
			rows = append(rows, r)
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.After(rows[j].Started) })
	return rows, nil
}

func keyword(data []byte) string {
	var s string
	if json.Unmarshal(data, &s) == nil {
		return s
	}
	return ""
}
