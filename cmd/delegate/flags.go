package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	conn dclient.Connection
	tls  bool
	// namespace is the resolved namespace, set by dial.
	namespace string
	// given are the connection flags this command was given, as
	// " --name=value" (never --api-key: a secret is not printed), for the
	// command lines it suggests; set by options.
	given string
}

// add adds the connection flags, named as the Temporal CLI's; each falls
// back to its environment variable and the profile file
// (dclient.Connection, go.temporal.io/sdk/contrib/envconfig).
func (f *clientFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.conn.Address, "address", "", "Temporal frontend host:port (env TEMPORAL_ADDRESS; otherwise "+dclient.DefaultAddress+")")
	fs.StringVar(&f.conn.Namespace, "namespace", "", "Temporal namespace (env TEMPORAL_NAMESPACE; otherwise \""+dclient.DefaultNamespace+"\")")
	fs.StringVar(&f.conn.APIKey, "api-key", "", "API key, sent as a bearer token; turns TLS on (env TEMPORAL_API_KEY, which keeps it out of the process list)")
	fs.BoolVar(&f.tls, "tls", false, "use TLS (env TEMPORAL_TLS); implied by --api-key and the --tls-* flags")
	fs.StringVar(&f.conn.TLSCertPath, "tls-cert-path", "", "client certificate for mutual TLS, PEM (env TEMPORAL_TLS_CLIENT_CERT_PATH)")
	fs.StringVar(&f.conn.TLSKeyPath, "tls-key-path", "", "key of --tls-cert-path, PEM (env TEMPORAL_TLS_CLIENT_KEY_PATH)")
	fs.StringVar(&f.conn.TLSCAPath, "tls-ca-path", "", "CA certificate that signs the server's, PEM; default: the system roots (env TEMPORAL_TLS_SERVER_CA_CERT_PATH)")
	fs.StringVar(&f.conn.TLSServerName, "tls-server-name", "", "name to check the server's certificate against (env TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&f.conn.Profile, "profile", "", "profile of the Temporal config file (env TEMPORAL_PROFILE; default \"default\")")
	fs.StringVar(&f.conn.EncryptionKeyFile, "encryption-key-file", "", "keys that seal every payload (AES-256-GCM, lines of ID:BASE64, the last one encrypts; env "+codec.EnvKeys+" holds the same text); docs/trust.md")
	fs.StringVar(&f.conn.ConfigFile, "config-file", "", "Temporal config file, TOML (env TEMPORAL_CONFIG_FILE; default the user config dir's temporalio/temporal.toml)")
}

// connectionFlags are the names add defines.
var connectionFlags = []string{"address", "namespace", "api-key", "tls", "tls-cert-path", "tls-key-path", "tls-ca-path", "tls-server-name", "profile", "config-file", "encryption-key-file"}

// dialsTemporal is the annotation of the commands that connect to a
// Temporal server and so take the connection flags; usesKeys of those
// that take --encryption-key-file alone (dev, codec-server).
const (
	dialsTemporal = "dials-temporal"
	usesKeys      = "uses-keys"
)

// refuseUnused refuses connection flags given to a command that does not
// connect to a Temporal server (dev runs its own; card and bench do not
// connect), so that a flag is never silently ignored.
func (f *clientFlags) refuseUnused(cmd *cobra.Command) error {
	if cmd.Annotations[dialsTemporal] != "" {
		return nil
	}
	for _, name := range connectionFlags {
		if name == "encryption-key-file" && cmd.Annotations[usesKeys] != "" {
			continue
		}
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return usageErr(fmt.Errorf("--%s: %q does not connect to a Temporal server", name, cmd.CommandPath()))
		}
	}
	return nil
}

// hideConnectionFlags keeps the connection flags a command refuses out of
// its help (and its subcommands').
func hideConnectionFlags(c *cobra.Command) {
	help := c.HelpFunc()
	c.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		for _, name := range connectionFlags {
			if name == "encryption-key-file" && cmd.Annotations[usesKeys] != "" {
				continue
			}
			if f := cmd.InheritedFlags().Lookup(name); f != nil {
				f.Hidden = true
			}
		}
		help(cmd, args)
	})
}

// options resolves the flags, the environment and the profile into client
// options (bad input: exit 2).
func (f *clientFlags) options(cmd *cobra.Command) (client.Options, error) {
	conn := f.conn
	if cmd.Flags().Changed("tls") {
		conn.TLS = &f.tls
	}
	o, err := conn.Options()
	if err != nil {
		return o, usageErr(err)
	}
	f.namespace = o.Namespace
	// The command lines this CLI suggests repeat the connection flags
	// given (never --api-key: a secret is not printed).
	f.given = ""
	for _, name := range connectionFlags {
		if fl := cmd.Flags().Lookup(name); name != "api-key" && fl != nil && fl.Changed {
			f.given += " --" + name + "=" + strconv.Quote(fl.Value.String())
		}
	}
	return o, nil
}

func (f *clientFlags) dial(cmd *cobra.Command) (client.Client, error) {
	o, err := f.options(cmd)
	if err != nil {
		return nil, err
	}
	o.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := addTracing(cmd.Context(), &o, "delegate-cli", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
		return nil, err
	}
	c, err := client.DialContext(cmd.Context(), o)
	if err != nil {
		return nil, temporalErr(fmt.Errorf("connecting to Temporal at %s: %w%s", dclient.Describe(o), err, dialHint(err, o)))
	}
	return c, nil
}

// with dials Temporal, runs fn and closes the client.
func (f *clientFlags) with(cmd *cobra.Command, fn func(ctx context.Context, c client.Client) error) error {
	ctx := cmd.Context()
	c, err := f.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// dialHint explains the usual causes of a failed dial.
func dialHint(err error, o client.Options) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return " (is the server running there? its address comes from --address, TEMPORAL_ADDRESS or the profile)"
	case o.ConnectionOptions.TLS == nil && (strings.Contains(msg, "server preface") || strings.Contains(msg, "EOF")):
		return " (does the server take TLS only? give --tls, or --tls-cert-path and --tls-key-path for mutual TLS)"
	case o.ConnectionOptions.TLS != nil && len(o.ConnectionOptions.TLS.Certificates) == 0 && (strings.Contains(msg, "broken pipe") || strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate")):
		return " (does the server require a client certificate? give --tls-cert-path and --tls-key-path)"
	case strings.Contains(msg, "x509:"):
		return " (the server's certificate: give its CA with --tls-ca-path and the name it is issued for with --tls-server-name)"
	}
	return ""
}

// oneID requires exactly one argument, the delegation's workflow id.
func oneID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return usageErr(fmt.Errorf("%s needs exactly one argument, the delegation's workflow id (its local_workflow_id)", cmd.Name()))
	}
	// Every delegation's id matches the contract's rule: another id (one
	// with a space, or a character a gRPC header cannot carry, which
	// failed with the header's error) names none.
	if !contracts.ValidWorkflowID(args[0]) {
		return usageErr(fmt.Errorf("%s: %+q is no delegation's id: a delegation's id is its local_workflow_id, which matches %s (letters, digits and . _ : -)", cmd.Name(), contracts.Truncate(args[0], 220), contracts.WorkflowIDPattern()))
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// readFileOrStdin reads a file, or standard input for "-" (giving up when
// ctx ends, so that Ctrl-C works while waiting for input).
func readFileOrStdin(ctx context.Context, path string) ([]byte, error) {
	if path != "-" {
		return os.ReadFile(path)
	}
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, contracts.MaxContractBytes+1))
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-ctx.Done():
		return nil, errors.New("interrupted while reading standard input")
	}
}
