// Command delegate is the CLI of delegate: it runs the development server
// and the worker, and starts, inspects, answers, cancels and lists
// delegations on a Temporal server.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes, documented in `delegate --help`.
const (
	exitOK          = 0
	exitNotComplete = 1 // the delegation ended with a status other than completed
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

func usageErr(err error) error    { return &exitError{code: exitUsage, err: err} }
func temporalErr(err error) error { return &exitError{code: exitTemporal, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "delegate:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(exitUsage)
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
  1  the delegation ended with a status other than completed
  2  bad flags or input (a contract or an answer that does not validate)
  3  Temporal or network error, or an operation the server refused`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newDevCmd(), newWorkerCmd(), newStartCmd(), newStatusCmd(), newAnswerCmd(), newCancelCmd(), newListCmd(), newCardCmd(),
		newResolveCmd(), newRevokeCmd(), newReconcileCmd(), newRediscoverCmd(), newBenchCmd())
	return root
}
