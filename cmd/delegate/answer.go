package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newAnswerCmd(cf *clientFlags) *cobra.Command {
	var text, data, by, credRef string
	cmd := &cobra.Command{
		Use:   "answer ID --text T [--data JSON] [--by NAME]",
		Args:  oneID,
		Short: "Answer the remote agent's question (Update \"provide-input\")",
		Long: `Answer the question of a delegation waiting in input-required. The answer goes
through the Update "provide-input", so an empty answer, or an answer when no
question is pending, is refused at once with the reason.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			a := contracts.Answer{Text: text, AnsweredBy: by, CredentialRef: credRef}
			if data != "" {
				var v any
				if err := json.Unmarshal([]byte(data), &v); err != nil {
					return usageErr(fmt.Errorf("--data: not valid JSON%s: %v", contracts.JSONErrorAt([]byte(data), err), err))
				}
				a.Data = json.RawMessage(data)
			}
			if by == "" {
				a.AnsweredBy = envOr("USER", "")
			}
			if err := a.Validate(); err != nil {
				return usageErr(err)
			}
			ctx := cmd.Context()
			c, err := cf.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			actx, cancel := context.WithTimeout(ctx, queryTimeout)
			defer cancel()
			round, err := dclient.Get(c, args[0]).Answer(actx, a)
			if err != nil {
				if actx.Err() != nil && ctx.Err() == nil {
					return temporalErr(fmt.Errorf("the answer was not taken within %s: is a worker running on task queue %q?", queryTimeout, contracts.TaskQueue))
				}
				return temporalErr(fmt.Errorf("answer refused: %w", err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "answer accepted for round %d of %s\n", round, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&text, "text", "", "answer text")
	cmd.Flags().StringVar(&data, "data", "", "answer data (JSON)")
	cmd.Flags().StringVar(&by, "by", "", "who answers (default $USER)")
	cmd.Flags().StringVar(&credRef, "credential-ref", "", "for AUTH_REQUIRED: the name of a credential in the worker's credential store (never the secret)")
	return cmd
}

func newCancelCmd(cf *clientFlags) *cobra.Command {
	var reason string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel ID [--reason R]",
		Short: "Cancel a delegation; the workflow cancels the remote task",
		Args:  oneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				h := dclient.Get(c, args[0]).WithNamespace(cf.namespace)
				st, err := h.WorkflowStatus(ctx)
				if err != nil {
					return temporalErr(err)
				}
				if st != "running" {
					return temporalErr(fmt.Errorf("delegation %s has already ended (workflow %s); see: delegate status %s", args[0], st, args[0]))
				}
				if err := h.Cancel(ctx, reason); err != nil {
					if errors.Is(err, contracts.ErrInvalidContract) {
						return usageErr(fmt.Errorf("--%w", err))
					}
					return temporalErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cancel requested for %s\n", args[0])
				return reportEnd(ctx, cmd.OutOrStdout(), c, args[0], wait, "cancel", contracts.StatusCanceled, contracts.StatusCancelUnconfirmed)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "reason, recorded in the workflow history")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "wait this long for the delegation to end and say how it ended (0: do not wait)")
	return cmd
}
