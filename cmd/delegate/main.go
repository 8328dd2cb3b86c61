package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"

	"github.com/a2adelegate/delegate/codec"
)

// Exit codes, documented in `delegate --help`.
const (
	exitOK          = 0
	exitNotComplete = 1 // start --wait: not completed; cancel/revoke: ended otherwise first, or not within --wait; card fetch: card unusable; bench: interrupted; health: unhealthy
	exitUsage       = 2 // bad flags or input (a contract or an answer that does not validate)
	exitTemporal    = 3 // Temporal or network error, or a refused operation
)

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }
func temporalErr(err error) error {
	return &exitError{code: exitTemporal, err: notFoundHint(keysHint(err))}
}

// notFoundHint says what Temporal's NotFound means for a delegation: no
// workflow with that id (a typo, another server or namespace), or one that
// has ended and takes no more answers or signals.
func notFoundHint(err error) error {
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return err
	}
	if strings.Contains(nf.Error(), "already completed") {
		return fmt.Errorf("%w: the delegation has ended (delegate status ID says how)", err)
	}
	return fmt.Errorf("%w: no delegation with this id on this server (delegate list shows them; --address and --namespace say which server)", err)
}

// keysHint explains an error that comes from reading a sealed payload
// without its key (package codec): this process has no keys, or not the
// one that sealed it. What was sent may have been taken all the same: the
// worker reads an unsealed payload as it is.
func keysHint(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, codec.MetadataEncoding) || strings.Contains(msg, "which is not among the keys given") {
		return fmt.Errorf("%w\nthe delegation's payloads are encrypted and this command cannot read them: give the keys with --encryption-key-file or %s (docs/trust.md); a request it sent may have been taken all the same: check with the keys", err, codec.EnvKeys)
	}
	return err
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one command line (without the program name) and returns its
// exit code; errors go to stderr prefixed "delegate: ". The tests run the
// CLI through it, in process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if flushTraces != nil {
		// A collector that is down must not hold the command long.
		fctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if ferr := flushTraces(fctx); ferr != nil {
			fmt.Fprintln(stderr, "delegate: traces not exported:", ferr)
		}
		cancel()
		flushTraces = nil
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "delegate:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// version is "delegate VERSION (temporal server V, temporal sdk V, a2a-go
// V, go V)", from the module versions built in (runtime/debug).
func version() string {
	mod := func(path string) string {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return "unknown"
		}
		if path == "" {
			v := bi.Main.Version
			for _, st := range bi.Settings {
				switch {
				case st.Key == "vcs.revision" && len(st.Value) >= 12:
					v += " commit " + st.Value[:12]
				case st.Key == "vcs.modified" && st.Value == "true":
					v += " (modified)"
				}
			}
			return v
		}
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
		return "not built in"
	}
	return fmt.Sprintf("%s (Temporal server %s, Temporal Go SDK %s, Temporal UI server %s, a2a-go %s, %s)", mod(""),
		mod("go.temporal.io/server"), mod("go.temporal.io/sdk"), mod("github.com/temporalio/ui-server/v2"),
		mod("github.com/a2aproject/a2a-go/v2"), runtime.Version())
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "delegate",
		Short: "Delegate work to remote A2A agents, durably, with Temporal",
		Long: `delegate hands work to remote agents over the Agent2Agent protocol (A2A) under a
narrow local contract. A Temporal workflow owns each delegation from start to finish;
operators answer the remote agent's questions from the Temporal UI or this CLI.

Exit codes:
  0  success (for "start --wait": the delegation completed)
  1  "start --wait": the delegation ended with a status other than completed;
     "cancel", "revoke": it ended otherwise before the stop took effect;
     "card fetch": the card was fetched but cannot be used (no usable interface,
     or a verified signature is required and missing);
     "bench": interrupted (SIGINT, SIGTERM), what was measured is printed
     "health": the worker is not polling, or its health endpoint does not answer
  2  bad flags or input (a contract or an answer that does not validate)
  3  Temporal or network error, or an operation the server refused`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("delegate {{.Version}}\n")
	// The connection flags are defined once, on the root; the commands
	// that do not dial Temporal refuse them.
	cf := &clientFlags{}
	cf.add(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return cf.refuseUnused(cmd) }
	for _, c := range []*cobra.Command{newWorkerCmd(cf), newStartCmd(cf), newStatusCmd(cf), newAnswerCmd(cf), newCancelCmd(cf), newListCmd(cf),
		newResolveCmd(cf), newRevokeCmd(cf), newReconcileCmd(cf), newRediscoverCmd(cf), newWebhookCmd(cf), newMCPCmd(cf)} {
		c.Annotations = map[string]string{dialsTemporal: "true"}
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newDevCmd(cf), newCodecServerCmd(cf)} {
		c.Annotations = map[string]string{usesKeys: "true"}
		hideConnectionFlags(c)
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newCardCmd(), newBenchCmd(), newHealthCmd(), newClusterServiceCmd()} {
		hideConnectionFlags(c)
		root.AddCommand(c)
	}
	return root
}
