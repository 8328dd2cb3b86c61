package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newStartCmd(cf *clientFlags) *cobra.Command {
	var contractPath string
	var wait bool
	var deadlineIn, sendTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "start --contract FILE [--deadline-in DURATION] [--send-timeout DURATION] [--wait]",
		Short: "Start a delegation from a contract file and print its workflow id",
		Long: `Start a delegation. The contract (JSON, see contracts/examples/lost-parcel.json) is
decoded strictly and validated before anything is sent. The workflow id is the
contract's local_workflow_id; starting a second delegation under a running id fails.
The deadline is absolute ("deadline": an RFC 3339 time) or relative ("deadline_in":
a Go duration such as "1h", resolved to now + the duration before the start);
--deadline-in overrides either. The started contract always holds the absolute time.
--send-timeout sets the contract's send_timeout (how long one send may take before its
outcome is unknown: for agents that do their work inside the send; default 30s, at most 1h).
With --wait, print each state change as it happens and the Outcome JSON at the end;
the exit code is 0 only when the status is "completed".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if contractPath == "" {
				return usageErr(errors.New("--contract is required"))
			}
			raw, err := readFileOrStdin(cmd.Context(), contractPath)
			if err != nil {
				return usageErr(fmt.Errorf("--contract: %w", err))
			}
			now := time.Now()
			if cmd.Flags().Changed("deadline-in") {
				var fe *contracts.FieldError
				if _, err := contracts.DeadlineAfter(now, deadlineIn); errors.As(err, &fe) {
					return usageErr(fmt.Errorf("--deadline-in: %s", fe.Rule))
				}
				if raw, err = contracts.ResolveDeadlineIn(raw, now, deadlineIn); err != nil {
					return usageErr(fmt.Errorf("contract %s:\n%w", contractPath, err))
				}
			}
			if cmd.Flags().Changed("send-timeout") {
				if sendTimeout < time.Second || sendTimeout > contracts.MaxSendTimeout {
					return usageErr(fmt.Errorf("--send-timeout: must be 1s to %s, got %s", contracts.MaxSendTimeout, sendTimeout))
				}
				// The flag overrides the file's send_timeout, whatever it says.
				var doc map[string]json.RawMessage
				if json.Unmarshal(raw, &doc) == nil && doc != nil {
					doc["send_timeout"], _ = json.Marshal(sendTimeout.String())
					raw, _ = json.Marshal(doc)
				}
			}
			d, err := contracts.DecodeDelegation(raw, now)
			if err != nil {
				return usageErr(fmt.Errorf("contract %s:\n%w", contractPath, err))
			}
			ctx := cmd.Context()
			c, err := cf.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			h, err := dclient.Start(ctx, c, d)
			if errors.Is(err, contracts.ErrInvalidContract) {
				return usageErr(fmt.Errorf("contract %s:\n%w", contractPath, err))
			}
			if err != nil {
				return temporalErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), h.ID())
			if !wait {
				return nil
			}
			return waitAndPrint(ctx, cmd.OutOrStdout(), h, cf.given)
		},
	}
	cmd.Flags().StringVar(&contractPath, "contract", "", "contract JSON file (- for stdin)")
	cmd.Flags().DurationVar(&deadlineIn, "deadline-in", 0, "deadline this long from now (a Go duration: 30m, 1h, 72h; at most 366 days), overriding the contract's deadline or deadline_in")
	cmd.Flags().DurationVar(&sendTimeout, "send-timeout", 0, "how long one send may take before its outcome is unknown (a Go duration: 90s, 5m; 1s to 1h; default 30s), overriding the contract's send_timeout")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the outcome, printing each state change")
	return cmd
}

// waitAndPrint prints state changes (from Query "state") until the run
// ends, then the Outcome JSON.
func waitAndPrint(ctx context.Context, w io.Writer, h *dclient.Handle, given string) error {
	done := make(chan error, 1)
	var out contracts.Outcome
	go func() {
		var err error
		out, err = h.Outcome(ctx)
		done <- err
	}()
	start := time.Now()
	printed := 0
	var lastRetry contracts.Retrying
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	show := func() {
		s, err := h.State(ctx)
		if err != nil {
			return
		}
		for ; printed < len(s.Transitions); printed++ {
			tr := s.Transitions[printed]
			line := fmt.Sprintf("[%7.1fs] %s", tr.At.Sub(s.StartedAt).Seconds(), tr.State)
			if (tr.State == "input-required" || tr.State == "auth-required") && s.Question != nil {
				line += fmt.Sprintf(" — the agent asks: %q; answer with: %s", s.Question.Text, answerHint(s, given))
			}
			fmt.Fprintln(w, clean(line))
		}
		if line := retryLine(s.Retrying, &lastRetry); line != "" {
			fmt.Fprintln(w, clean(fmt.Sprintf("[%7.1fs] %s", time.Since(start).Seconds(), line)))
		}
	}
	for {
		select {
		case err := <-done:
			show()
			if err != nil {
				return temporalErr(fmt.Errorf("delegation %s: %w", h.ID(), err))
			}
			printJSON(w, out)
			fmt.Fprintf(w, "finished in %.1fs: %s\n", time.Since(start).Seconds(), out.Status)
			if out.Status != contracts.StatusCompleted {
				return &exitError{code: exitNotComplete, err: fmt.Errorf("delegation %s ended %s", h.ID(), out.Status)}
			}
			return nil
		case <-tick.C:
			show()
		case <-ctx.Done():
			return temporalErr(fmt.Errorf("interrupted; the delegation goes on: delegate status %s", h.ID()))
		}
	}
}

// retryLine is what `start --wait` prints of a call that keeps failing
// (State.Retrying), or "" when nothing changed since last: a line per
// attempt, the error in full when it differs from the one before ("the
// same error" otherwise), and once that Temporal took the retries over
// (Retrying.HandedOver: the attempts then show in `delegate status`).
// last is updated.
func retryLine(rt *contracts.Retrying, last *contracts.Retrying) string {
	if rt == nil {
		*last = contracts.Retrying{}
		return ""
	}
	if rt.Op == last.Op && rt.Attempts == last.Attempts && rt.LastError == last.LastError && rt.HandedOver == last.HandedOver {
		return ""
	}
	prev := *last
	*last = *rt
	if rt.HandedOver {
		if prev.HandedOver && prev.Op == rt.Op {
			return ""
		}
		return fmt.Sprintf("retrying %s: Temporal retries it from now on (every 5 minutes at most) until the deadline; delegate status shows each attempt: %s", rt.Op, rt.LastError)
	}
	why := rt.LastError
	if prev.Op == rt.Op && prev.LastError == rt.LastError {
		why = "the same error"
	}
	return fmt.Sprintf("retrying %s (attempt %d, next at %s): %s", rt.Op, rt.Attempts, rt.Next.UTC().Format(time.RFC3339), why)
}

// retryablePoll reports whether a failed long poll may simply be tried
// again.
func retryablePoll(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.Canceled, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// reportEnd waits up to wait (0: not at all) for delegation id to end
// after an operator's stop (what: "cancel" or "revoke"), and says how it
// ended: one of want (the stop took effect), still stopping, or another
// status (it ended first: exit 1). The stop and the delegation's own end
// may race; this says which won.
func reportEnd(ctx context.Context, w io.Writer, c client.Client, id string, wait time.Duration, what string, want ...contracts.Status) error {
	if wait <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h := dclient.Get(c, id)
	out, err := h.Outcome(wctx)
	// A long poll the server ends early (gRPC Canceled or Unavailable
	// while our context is live: seen on the embedded server while the
	// workflow's history grows) is not an answer: poll again.
	for err != nil && wctx.Err() == nil && retryablePoll(err) {
		time.Sleep(200 * time.Millisecond)
		out, err = h.Outcome(wctx)
	}
	switch {
	case err != nil && wctx.Err() != nil:
		// Not what was asked (an end within --wait): exit 1, so that a
		// script does not take a stop that has not landed for one.
		fmt.Fprintf(w, "still stopping after %s; see: delegate status %s\n", wait, id)
		return &exitError{code: exitNotComplete, err: fmt.Errorf("delegation %s had not ended %s after the %s; see: delegate status %s", id, wait, what, id)}
	case err != nil:
		return temporalErr(err)
	case slices.Contains(want, out.Status):
		fmt.Fprintf(w, "ended %s (remote task %s)\n", out.Status, orNone(out.RemoteTaskID))
		return nil
	default:
		return &exitError{code: exitNotComplete, err: fmt.Errorf("delegation %s ended %s before the %s took effect; see: delegate status %s", id, out.Status, what, id)}
	}
}
