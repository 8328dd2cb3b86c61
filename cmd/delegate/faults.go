package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newResolveCmd(cf *clientFlags) *cobra.Command {
	var res contracts.Resolution
	cmd := &cobra.Command{
		Use:   "resolve ID --action resend|adopt|abandon [--task-id T] [--by NAME]",
		Short: "Resolve a send whose outcome is unknown (Update \"resolve-unknown\")",
		Long: `A send whose request was written but got no answer has an unknown outcome: the
agent may or may not have processed it. The delegation waits in state
unknown_outcome until an operator chooses: resend (same messageId), adopt a task
the agent created (checked with GetTask first), or abandon (status unknown_outcome).`,
		Args: oneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := res.Validate(); err != nil {
				return usageErr(err)
			}
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				uctx, cancel := context.WithTimeout(ctx, queryTimeout)
				defer cancel()
				if _, err := dclient.Get(c, args[0]).Resolve(uctx, res); err != nil {
					return temporalErr(fmt.Errorf("resolve refused: %w", err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s accepted for %s\n", res.Action, args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&res.Action, "action", "", "resend, adopt or abandon")
	cmd.Flags().StringVar(&res.TaskID, "task-id", "", "the task to adopt")
	cmd.Flags().StringVar(&res.ResolvedBy, "by", envOr("USER", ""), "who resolves")
	return cmd
}

func newRediscoverCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rediscover ID",
		Short: "Accept a changed agent card (Signal \"rediscover\"): the delegation negotiates it again and carries on",
		Args:  oneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				qctx, cancel := context.WithTimeout(ctx, queryTimeout)
				defer cancel()
				if err := dclient.Get(c, args[0]).Rediscover(qctx); err != nil {
					if !errors.Is(err, dclient.ErrNotCardChanged) {
						if _, qerr := queryState(ctx, c, args[0]); qerr != nil {
							return qerr // says why the state could not be read (no worker?)
						}
					}
					return temporalErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "rediscover sent to %s\n", args[0])
				return nil
			})
		},
	}
	return cmd
}
