package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/a2adelegate/delegate/codec"
)

func newCodecServerCmd(cf *clientFlags) *cobra.Command {
	var addr, tokenFile string
	var origins []string
	cmd := &cobra.Command{
		Use:   "codec-server --addr HOST:PORT --ui-origin URL",
		Short: "Serve Temporal's codec protocol (/encode, /decode) so the Temporal UI shows encrypted payloads decoded",
		Long: `Serve Temporal's codec server protocol with the keys of --encryption-key-file (or
DELEGATE_ENCRYPTION_KEYS): the Temporal UI (its codec endpoint setting, or the
browser's "Codec Server" setting) sends the payloads it shows here to have them
decoded. Only the --ui-origin origins may call it from a browser; with
--token-file, every request must carry "Authorization: Bearer <token>" (the UI's
passAccessToken). Put it behind TLS where the UI is not on this host.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := codec.FromFileOrEnv(cf.conn.EncryptionKeyFile)
			if err != nil {
				return usageErr(err)
			}
			if keys == nil {
				return usageErr(errors.New("no keys: give --encryption-key-file or set " + codec.EnvKeys))
			}
			if len(origins) == 0 {
				return usageErr(errors.New("--ui-origin: the Temporal UI's origin, e.g. http://127.0.0.1:8233"))
			}
			for i, o := range origins {
				origins[i] = strings.TrimSuffix(o, "/")
			}
			opts := codec.ServerOptions{Origins: origins}
			if tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return usageErr(fmt.Errorf("--token-file: %w", err))
				}
				if opts.Token = strings.TrimSpace(string(b)); opts.Token == "" {
					return usageErr(fmt.Errorf("--token-file %s is empty", tokenFile))
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErr(fmt.Errorf("--addr: %w", err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "codec server on http://%s for %s (keys %s)\n", ln.Addr(), strings.Join(origins, ", "), strings.Join(keys.IDs(), ", "))
			return serveUntil(cmd.Context(), ln, codec.Handler(keys, opts))
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8234", "listen on host:port")
	cmd.Flags().StringArrayVar(&origins, "ui-origin", nil, "origin of the Temporal UI allowed to call (repeatable)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding a bearer token every request must carry")
	return cmd
}
