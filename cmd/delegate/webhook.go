package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/cards"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/push"
)

func newWebhookCmd(cf *clientFlags) *cobra.Command {
	var addr, publicURL, keyFile, trustFile string
	cmd := &cobra.Command{
		Use:   "webhook --addr HOST:PORT --public-url URL",
		Short: "Receive A2A push notifications and signal the delegations (Signal \"task-update\")",
		Long: `Serve the webhook agents push their tasks' changes to (A2A 1.0 §4.3). Workers
started with the same --push-url and key register it for every task of an agent
whose card declares pushNotifications. Each notification is authenticated (its
token, derived from the key for one delegation and task), bounded (1 MiB), checked
against replays and older ones, and relayed as Signal "task-update"; the workflow
reads the task before it acts. With --trust, a notification an agent signs (a JWT in
Authorization, as the a2a-python SDK does) must verify against the keys the trust
store lists for the agent's origin, and an agent whose entry has require_signature
must sign. It needs only Temporal access and the key: run it behind your ingress at
--public-url.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := push.LoadKey(keyFile)
			if err != nil {
				return usageErr(err)
			}
			if key == nil {
				return usageErr(errors.New("a push key is needed: give --push-key-file FILE (or set " + push.EnvKey + " to the key itself), the same the workers use"))
			}
			if _, err := push.NewSettings(publicURL, key); err != nil {
				return usageErr(fmt.Errorf("--public-url: %w", err))
			}
			logger, err := (&workerFlags{logFormat: "text"}).logger()
			if err != nil {
				return err
			}
			ts, err := loadTrust(trustFile)
			if err != nil {
				return err
			}
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				h := push.NewHandler(key, func(ctx context.Context, wid string, u contracts.TaskUpdate) error {
					return dclient.Get(c, wid).TaskUpdate(ctx, u)
				}, logger)
				if ts != nil {
					f := &cards.Fetcher{Trust: ts}
					h.WithSignatures(push.Signatures{Verify: f.VerifyJWT, Required: func(o string) bool { return ts.For(o).RequireSignature }})
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return usageErr(fmt.Errorf("--addr: %w", err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "webhook on http://%s, public at %s\n", ln.Addr(), publicURL)
				if err := serveUntil(ctx, ln, h); err != nil {
					return err
				}
				logger.Info("webhook stopped", "counts", h.Counts())
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8235", "listen on host:port")
	cmd.Flags().StringVar(&publicURL, "public-url", "", "the URL agents reach this webhook at (the workers' --push-url)")
	cmd.Flags().StringVar(&keyFile, "push-key-file", "", "file holding the base64 push key (or env "+push.EnvKey+" holding the key itself)")
	cmd.Flags().StringVar(&trustFile, "trust", os.Getenv("DELEGATE_TRUST"), "trust store file: the keys agents sign their notifications with (env DELEGATE_TRUST)")
	return cmd
}
