package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newAnswerCmd(cf *clientFlags) *cobra.Command {
	var text, data, by, credRef string
	var round int
	cmd := &cobra.Command{
		Use:   "answer ID --text T [--data JSON] [--by NAME] [--round N]",
		Args:  oneID,
		Short: "Answer the remote agent's question (Update \"provide-input\")",
		Long: `Answer the question of a delegation waiting in input-required. The answer goes
through the Update "provide-input", so an empty answer, or an answer when no
question is pending, is refused at once with the reason.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			a := contracts.Answer{Text: text, AnsweredBy: by, CredentialRef: credRef, Round: round}
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
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
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
			})
		},
	}
	cmd.Flags().StringVar(&text, "text", "", "answer text")
	cmd.Flags().StringVar(&data, "data", "", "answer data (JSON)")
	cmd.Flags().StringVar(&by, "by", "", "who answers (default $USER)")
	cmd.Flags().IntVar(&round, "round", 0, "the question round this answers (as status shows it); refused if another question is pending by then (default: whichever is pending)")
	cmd.Flags().StringVar(&credRef, "credential-ref", "", "for AUTH_REQUIRED: the name of a credential in the worker's credential store (never the secret)")
	return cmd
}
