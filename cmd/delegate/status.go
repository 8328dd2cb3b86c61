package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

func newStatusCmd(cf *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status ID [--json]",
		Short: "Show the local state of a delegation (Query \"state\")",
		Args:  oneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				s, err := queryState(ctx, c, args[0])
				if err != nil {
					return err
				}
				// The run as the server knows it; a describe that fails
				// adds nothing.
				d, derr := dclient.Get(c, args[0]).Describe(ctx)
				if s.Outcome == nil && s.Failure == "" && derr == nil && !d.Running() {
					// A query answers for a workflow that was terminated
					// too (replayed): say it ended without an outcome.
					s.Failure = fmt.Sprintf("the workflow is %s and gave no outcome (ended by an operator or by the server's limits; see its history in the Temporal UI)", d.Status)
					s.Question, s.Unknown = nil, nil
				}
				if asJSON {
					printJSON(cmd.OutOrStdout(), s)
					return nil
				}
				// Who started it, when delegate mcp did (search attribute
				// DelegationStarter); the UI page of its latest run.
				page := ""
				if derr == nil && d.RunID != "" {
					page = uiPage(cf.namespace, args[0], d.RunID)
				}
				printStateAt(cmd.OutOrStdout(), s, cf.given, d.Starter, page)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole state as JSON")
	return cmd
}

// queryTimeout bounds a Query or an Update: both need a worker.
const queryTimeout = 20 * time.Second

// queryState runs Query "state". Without a worker, a delegation that has
// ended is still shown, from its result in the history.
func queryState(ctx context.Context, c client.Client, id string) (contracts.State, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	s, err := dclient.Get(c, id).State(qctx)
	if err == nil {
		return s, nil
	}
	h := dclient.Get(c, id)
	st, derr := h.WorkflowStatus(ctx)
	if derr != nil {
		return contracts.State{}, temporalErr(derr)
	}
	if keysHint(err) != err {
		return contracts.State{}, temporalErr(err) // the keys are missing or wrong
	}
	if st == "running" {
		return contracts.State{}, temporalErr(fmt.Errorf("query %q of %s got no answer within %s: is a worker running on task queue %q? (%v)", contracts.QueryState, id, queryTimeout, contracts.TaskQueue, err))
	}
	s = contracts.State{LocalWorkflowID: id, A2AState: "(no worker to ask; from the history)"}
	out, gerr := h.Outcome(ctx)
	if gerr != nil {
		s.Failure = fmt.Sprintf("workflow %s: %v", st, gerr)
	} else {
		s.Outcome = &out
		s.Agent, s.Protocol, s.RemoteTaskID, s.ContextID, s.InputRounds = out.Agent, out.Protocol, out.RemoteTaskID, out.ContextID, out.InputRounds
	}
	return s, nil
}

// clean makes remote text safe for a terminal: control characters
// (escape sequences, carriage returns, newlines) are shown escaped, one by
// one (`\x1b`, `\r`, `\n`), and everything else as it is: quotes and
// backslashes are text, not JSON.
//
// Format characters (bidi overrides, zero-width spaces: Unicode Cf) are
// escaped too, so remote text cannot reorder or hide what is shown.
func clean(s string) string {
	bad := func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }
	if strings.IndexFunc(s, bad) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case bad(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// cleanLines is clean for a value shown on rows of its own: each line
// cleaned, the lines after the first indented under the value (a tab:
// the next column of a tabwriter), so that no line of it reads as a row.
func cleanLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return strings.Join(lines, "\n\t")
}

// printState is printStateAt without a UI page.
func printState(w io.Writer, s contracts.State, given, starter string) {
	printStateAt(w, s, given, starter, "")
}

// uiTab is the tab of a workflow's page in the Temporal UI that shows its
// user metadata: the static summary and details, and the current details,
// where a waiting delegation shows the agent's question and how to answer
// it. The page a link without a run id opens is Timeline instead.
const uiTab = "user-metadata"

// uiPage is the path, on the Temporal UI's origin, of the tab uiTab of
// run runID of workflow id in namespace ns (Temporal UI 2.x routes).
func uiPage(ns, id, runID string) string {
	if ns == "" {
		ns = dclient.DefaultNamespace
	}
	return "/namespaces/" + url.PathEscape(ns) + "/workflows/" + url.PathEscape(id) + "/" + url.PathEscape(runID) + "/" + uiTab
}

// printStateAt prints s as rows "name: value" (remote and operator text
// through clean/cleanLines); given is the connection flags to repeat in
// the command lines it suggests, starter the search attribute
// DelegationStarter ("": not set, no row), page the UI page of its run
// (uiPage; "": no row), shown while the delegation waits for an operator.
func printStateAt(w io.Writer, s contracts.State, given, starter, page string) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, cleanLines(v))
		}
	}
	row("delegation", s.LocalWorkflowID)
	row("purpose", s.Purpose)
	row("started by", starter)
	row("agent", strings.TrimSpace(s.Agent.Name+" "+s.Agent.CardURL))
	row("card digest", s.Agent.CardDigest)
	if s.Protocol.Version != "" {
		row("protocol", fmt.Sprintf("A2A %s over %s at %s%s", s.Protocol.Version, s.Protocol.Binding, s.Protocol.URL, declared(s.Protocol.DeclaredVersion)))
	}
	if ls := s.LastSnapshot; ls != nil && len(ls.Warnings) > 0 {
		// Members of the agent's last reply that delegate does not need
		// and could not read: ignored, said so (remote text).
		row("ignored in the reply", strings.Join(ls.Warnings, "; "))
	}
	if s.Interface.Auth != nil {
		// The scheme calls are authenticated with (the card's, as the
		// worker's credential store meets it; never a secret).
		row("authentication", describeScheme(s.Interface.Auth))
	}
	row("extended card", s.Agent.ExtendedCardDigest)
	state := s.A2AState
	if state == "unknown" && s.LastSnapshot != nil {
		state += fmt.Sprintf(" (the agent sent %q)", s.LastSnapshot.RawState)
	}
	row("a2a state", contracts.CurrentA2AState(state))
	if s.Push {
		row("push", fmt.Sprintf("the agent pushes its changes; %d push(es) taken", s.Pushes))
	}
	if rt := s.Retrying; rt != nil {
		// Next is when the next attempt was due; once past, that attempt
		// is running (a send may take its whole timeout).
		next := "next at " + rt.Next.UTC().Format(time.RFC3339)
		if !rt.Next.After(time.Now()) {
			next = "the next attempt started at " + rt.Next.UTC().Format(time.RFC3339)
		}
		row("retrying", fmt.Sprintf("%s, attempt %d since %s, %s; last error: %s", rt.Op, rt.Attempts,
			rt.Since.UTC().Format(time.RFC3339), next, rt.LastError))
	}
	row("remote task", s.RemoteTaskID)
	row("context", s.ContextID)
	if !s.Deadline.IsZero() { // a run that refused its input has none
		row("deadline", s.Deadline.UTC().Format(time.RFC3339))
	}
	row("input rounds", fmt.Sprint(s.InputRounds))
	if s.Agent.Signature != "" {
		row("card signature", s.Agent.Signature+reasonSuffix(s.Signature.Reason))
	}
	row("failure", s.Failure)
	row("cancel reason", s.CancelReason)
	row("cancel refused", s.CancelError)
	if u := s.Unknown; u != nil {
		row("unknown outcome", fmt.Sprintf("round %d, messageId %s, since %s: %s", u.Round, u.MessageID, u.Since.UTC().Format(time.RFC3339), u.Error))
		if s.Outcome == nil {
			row("resolve with", fmt.Sprintf("delegate resolve %s --action resend|adopt|abandon [--task-id T]%s", s.LocalWorkflowID, given))
		}
	}
	if len(s.Answers) > 0 {
		// One line per answer, each cleaned as a whole (a newline in it
		// is shown escaped), so no answer makes a line of its own.
		lines := make([]string, 0, len(s.Answers))
		for _, a := range s.Answers {
			lines = append(lines, clean(answerLine(a)))
		}
		row("answers", strings.Join(lines, "\n"))
	}
	if n := len(s.IgnoredSignals); n > 0 {
		last := s.IgnoredSignals[n-1]
		row("signals ignored", fmt.Sprintf("%d; last: %s at %s: %s", s.IgnoredSignalCount, last.Name, last.Time.UTC().Format(time.RFC3339), last.Reason))
	}
	if len(s.UnknownSignals) > 0 {
		row("unknown signals", strings.Join(s.UnknownSignals, ", ")+" (never applied: the names are "+strings.Join([]string{contracts.ProvideInput, contracts.ResolveUnknown, contracts.SignalRevoke, contracts.SignalCancelReason, contracts.SignalReconcile, contracts.SignalRediscover, contracts.SignalTaskUpdate}, ", ")+")")
	}
	if q := s.Question; q != nil {
		row("question", fmt.Sprintf("%q (since %s)", q.Text, q.Since.UTC().Format(time.RFC3339)))
		if s.Outcome == nil {
			row("answer with", answerHint(s, given))
		}
	}
	if page != "" && s.Outcome == nil && (s.Question != nil || s.Unknown != nil || s.A2AState == string(contracts.PhaseCardChanged)) {
		// The Temporal UI's tab that shows what the operator is asked
		// (the current details), on the UI's own address.
		row("in the ui", page+` (after the Temporal UI's address: its "User Metadata" tab, under Current Details)`)
	}
	if o := s.Outcome; o != nil {
		row("status", string(o.Status))
		for _, out := range o.Outputs {
			row("output", fmt.Sprintf("%s %s %s", out.Kind, out.ArtifactID, compact(out.Data, out.Text)))
		}
		for _, lr := range o.LateResults {
			var data json.RawMessage
			var text string
			for _, p := range lr.Parts {
				if len(p.Data) > 0 && data == nil {
					data = p.Data
				}
				if p.Text != "" && text == "" {
					text = p.Text
				}
			}
			row("late result", fmt.Sprintf("%s %s %s (not an output)", lr.Name, lr.ArtifactID, compact(data, text)))
		}
		for _, r := range o.RejectedArtifacts {
			row("rejected", fmt.Sprintf("%s: %s", r.ArtifactID, r.Reason))
		}
		if o.Error != nil {
			row("error", fmt.Sprintf("[%s] %s", o.Error.Category, o.Error.Message))
		}
	}
	_ = tw.Flush()
}

// answerLine describes one answer of State.Answers: its round, who
// answered (answered_by, the authenticated actor), how it came (Signal or
// Update "provide-input"), when, and whether it was refused ("answer not
// taken") or its delivery is unknown ("answer unconfirmed").
func answerLine(a contracts.AnswerRecord) string {
	by := a.AnsweredBy
	if by == "" {
		by = "(no name)"
	}
	l := fmt.Sprintf("round %d: by %s via %s at %s", a.Round, by, a.Via, a.At.UTC().Format(time.RFC3339))
	if a.Refused != "" {
		l += "; answer not taken: " + a.Refused
	}
	if a.Unconfirmed != "" {
		l += "; answer unconfirmed: " + a.Unconfirmed
	}
	return l
}

// answerHint is the command line that answers s's question: a credential
// reference for AUTH_REQUIRED, text otherwise; with the connection flags
// given to this command.
func answerHint(s contracts.State, given string) string {
	how := `--text "..." --by NAME`
	if s.A2AState == "auth-required" {
		how = "--credential-ref NAME --by NAME"
	}
	return fmt.Sprintf("delegate answer %s %s%s", s.LocalWorkflowID, how, given)
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

func compact(data json.RawMessage, text string) string {
	if len(data) > 0 {
		return string(data)
	}
	return fmt.Sprintf("%q", text)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// printJSON writes v as indented JSON and a newline (the --json output of
// every command).
func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(w, string(b))
}

// declared names the card's own protocolVersion when the wire spoken is
// another (an interface at 0.2.x is spoken as 0.3).
func declared(v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf(" (the card declares %s)", clean(v))
}
