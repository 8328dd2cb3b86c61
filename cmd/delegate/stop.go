package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// stopCmd is a command that stops a delegation (cancel, revoke): stop
// sends what stops it, then the command says so ("<what> <sent> ID") and
// waits up to --wait for the delegation to end in one of want (reportEnd).
func stopCmd(cf *clientFlags, use, short, reasonHelp, what, sent string, stop func(ctx context.Context, warn io.Writer, h *dclient.Handle, reason string) error, want ...contracts.Status) *cobra.Command {
	var reason string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  oneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				if err := stop(ctx, cmd.ErrOrStderr(), dclient.Get(c, args[0]).WithNamespace(cf.namespace), reason); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", what, sent, args[0])
				return reportEnd(ctx, cmd.OutOrStdout(), c, args[0], wait, what, want...)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", reasonHelp)
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "wait this long for the delegation to end and say how it ended (0: do not wait)")
	return cmd
}

func newCancelCmd(cf *clientFlags) *cobra.Command {
	return stopCmd(cf, "cancel ID [--reason R]", "Cancel a delegation; the workflow cancels the remote task",
		"reason, recorded in the workflow history", "cancel", "requested for",
		func(ctx context.Context, warn io.Writer, h *dclient.Handle, reason string) error {
			st, err := h.WorkflowStatus(ctx)
			if err != nil {
				return temporalErr(err)
			}
			if st != "running" {
				return temporalErr(fmt.Errorf("delegation %s has already ended%s; see: delegate status %s", h.ID(), endedAs(ctx, h, st), h.ID()))
			}
			if err := h.Cancel(ctx, reason); errors.Is(err, dclient.ErrReasonNotRecorded) {
				fmt.Fprintf(warn, "warning: %v\n", err)
			} else if err != nil {
				if errors.Is(err, contracts.ErrInvalidContract) {
					return usageErr(fmt.Errorf("--%w", err))
				}
				return temporalErr(err)
			}
			return nil
		}, contracts.StatusCanceled, contracts.StatusCancelUnconfirmed)
}

// endedAs says how an ended delegation ended, for a refusal: ": canceled
// (workflow completed)", or " (workflow terminated)" when it has no
// Outcome (the workflow failed, was terminated or timed out).
func endedAs(ctx context.Context, h *dclient.Handle, workflowStatus string) string {
	if workflowStatus == "completed" {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if out, err := h.Outcome(octx); err == nil && out.Status != "" {
			return fmt.Sprintf(": %s (workflow completed)", out.Status)
		}
	}
	return fmt.Sprintf(" (workflow %s)", workflowStatus)
}

func newRevokeCmd(cf *clientFlags) *cobra.Command {
	return stopCmd(cf, "revoke ID [--reason R]", "Withdraw a delegation's authorization (Signal \"revoke\"): nothing more is sent, the remote task is canceled",
		"why (recorded in the outcome)", "revoke", "sent to",
		func(ctx context.Context, warn io.Writer, h *dclient.Handle, reason string) error {
			if err := h.Revoke(ctx, reason); err != nil {
				return temporalErr(err)
			}
			return nil
		}, contracts.StatusAuthorizationDenied)
}
