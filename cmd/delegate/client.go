package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"

	dclient "github.com/a2adelegate/delegate/client"
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
func (f *clientFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.conn.Address, "address", "", "Temporal frontend host:port (env TEMPORAL_ADDRESS; otherwise "+dclient.DefaultAddress+")")
	fs.StringVar(&f.conn.Namespace, "namespace", "", "Temporal namespace (env TEMPORAL_NAMESPACE; otherwise \""+dclient.DefaultNamespace+"\")")
	fs.StringVar(&f.conn.APIKey, "api-key", "", "API key, sent as a bearer token; turns TLS on (env TEMPORAL_API_KEY, which keeps it out of the process list)")
	fs.BoolVar(&f.tls, "tls", false, "use TLS (env TEMPORAL_TLS); implied by --api-key and the --tls-* flags")
	fs.StringVar(&f.conn.TLSCertPath, "tls-cert-path", "", "client certificate for mutual TLS, PEM (env TEMPORAL_TLS_CLIENT_CERT_PATH)")
	fs.StringVar(&f.conn.TLSKeyPath, "tls-key-path", "", "key of --tls-cert-path, PEM (env TEMPORAL_TLS_CLIENT_KEY_PATH)")
	fs.StringVar(&f.conn.TLSCAPath, "tls-ca-path", "", "CA certificate that signs the server's, PEM; default: the system roots (env TEMPORAL_TLS_SERVER_CA_CERT_PATH)")
	fs.StringVar(&f.conn.TLSServerName, "tls-server-name", "", "name to check the server's certificate against (env TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&f.conn.Profile, "profile", "", "profile of the Temporal config file (env TEMPORAL_PROFILE; default \"default\")")
	fs.StringVar(&f.conn.ConfigFile, "config-file", "", "Temporal config file, TOML (env TEMPORAL_CONFIG_FILE; default the user config dir's temporalio/temporal.toml)")
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
	for _, name := range []string{"address", "namespace", "profile", "config-file", "tls", "tls-cert-path", "tls-key-path", "tls-ca-path", "tls-server-name"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
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

// oneID requires exactly one argument, the delegation's workflow id.
func oneID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return usageErr(fmt.Errorf("%s needs exactly one argument, the delegation's workflow id (its local_workflow_id)", cmd.Name()))
	}
	return nil
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

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func newStartCmd() *cobra.Command {
	var cf clientFlags
	var contractPath string
	var wait bool
	cmd := &cobra.Command{
		Use:   "start --contract FILE [--wait]",
		Short: "Start a delegation from a contract file and print its workflow id",
		Long: `Start a delegation. The contract (JSON, see contracts/examples/lost-parcel.json) is
decoded strictly and validated before anything is sent. The workflow id is the
contract's local_workflow_id; starting a second delegation under a running id fails.
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
			d, err := contracts.DecodeDelegation(raw, time.Now())
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
	cf.add(cmd)
	cmd.Flags().StringVar(&contractPath, "contract", "", "contract JSON file (- for stdin)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the outcome, printing each state change")
	return cmd
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
	lastRetry := ""
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
		// A send or read that keeps failing says why, once per error.
		if rt := s.Retrying; rt != nil && rt.LastError != lastRetry {
			lastRetry = rt.LastError
			fmt.Fprintln(w, clean(fmt.Sprintf("[%7.1fs] retrying %s (attempt %d, next at %s): %s", time.Since(start).Seconds(), rt.Op, rt.Attempts, rt.Next.UTC().Format(time.RFC3339), rt.LastError)))
		}
	}
	for {
		select {
		case err := <-done:
			show()
			if err != nil {
				return temporalErr(fmt.Errorf("delegation %s: %w", h.ID(), err))
			}
			b, _ := json.MarshalIndent(out, "", "  ")
			fmt.Fprintln(w, string(b))
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

func newStatusCmd() *cobra.Command {
	var cf clientFlags
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
				if asJSON {
					b, _ := json.MarshalIndent(s, "", "  ")
					fmt.Fprintln(cmd.OutOrStdout(), string(b))
					return nil
				}
				printState(cmd.OutOrStdout(), s, cf.given)
				return nil
			})
		},
	}
	cf.add(cmd)
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
	desc, derr := c.DescribeWorkflowExecution(ctx, id, "")
	if derr != nil {
		return contracts.State{}, temporalErr(derr)
	}
	st := desc.GetWorkflowExecutionInfo().GetStatus()
	if st == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return contracts.State{}, temporalErr(fmt.Errorf("query %q of %s got no answer within %s: is a worker running on task queue %q? (%v)", contracts.QueryState, id, queryTimeout, contracts.TaskQueue, err))
	}
	s = contracts.State{LocalWorkflowID: id, A2AState: "(no worker to ask; from the history)"}
	var out contracts.Outcome
	if gerr := c.GetWorkflow(ctx, id, "").Get(ctx, &out); gerr != nil {
		s.Failure = fmt.Sprintf("workflow %s: %v", statusName(st), gerr)
	} else {
		s.Outcome = &out
		s.Agent, s.Protocol, s.RemoteTaskID, s.ContextID, s.InputRounds = out.Agent, out.Protocol, out.RemoteTaskID, out.ContextID, out.InputRounds
	}
	return s, nil
}

// clean makes remote text safe for a terminal: control characters
// (escape sequences, carriage returns) are shown escaped.
func clean(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func printState(w io.Writer, s contracts.State, given string) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, clean(v))
		}
	}
	row("delegation", s.LocalWorkflowID)
	row("purpose", s.Purpose)
	row("agent", strings.TrimSpace(s.Agent.Name+" "+s.Agent.CardURL))
	row("card digest", s.Agent.CardDigest)
	if s.Protocol.Version != "" {
		row("protocol", fmt.Sprintf("A2A %s over %s at %s", s.Protocol.Version, s.Protocol.Binding, s.Protocol.URL))
	}
	state := s.A2AState
	if state == "unknown" && s.LastSnapshot != nil {
		state += fmt.Sprintf(" (the agent sent %q)", s.LastSnapshot.RawState)
	}
	row("remote state", state)
	if rt := s.Retrying; rt != nil {
		row("retrying", fmt.Sprintf("%s, attempt %d since %s, next at %s; last error: %s", rt.Op, rt.Attempts,
			rt.Since.UTC().Format(time.RFC3339), rt.Next.UTC().Format(time.RFC3339), rt.LastError))
	}
	row("remote task", s.RemoteTaskID)
	row("context", s.ContextID)
	row("deadline", s.Deadline.UTC().Format(time.RFC3339))
	row("input rounds", fmt.Sprint(s.InputRounds))
	if s.Agent.Signature != "" {
		row("card signature", s.Agent.Signature+reasonSuffix(s.Signature.Reason))
	}
	row("failure", s.Failure)
	row("cancel reason", s.CancelReason)
	row("cancel refused", s.CancelError)
	if u := s.Unknown; u != nil {
		row("unknown outcome", fmt.Sprintf("round %d, messageId %s, since %s: %s", u.Round, u.MessageID, u.Since.UTC().Format(time.RFC3339), u.Error))
		row("resolve with", fmt.Sprintf("delegate resolve %s --action resend|adopt|abandon [--task-id T]%s", s.LocalWorkflowID, given))
	}
	for _, a := range s.Answers {
		if a.Refused != "" {
			row("answer not taken", fmt.Sprintf("round %d at %s: %s", a.Round, a.At.UTC().Format(time.RFC3339), a.Refused))
		}
	}
	if n := len(s.IgnoredSignals); n > 0 {
		last := s.IgnoredSignals[n-1]
		row("signals ignored", fmt.Sprintf("%d; last: %s at %s: %s", s.IgnoredSignalCount, last.Name, last.Time.UTC().Format(time.RFC3339), last.Reason))
	}
	if q := s.Question; q != nil {
		row("question", fmt.Sprintf("%q (since %s)", q.Text, q.Since.UTC().Format(time.RFC3339)))
		row("answer with", answerHint(s, given))
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

func newAnswerCmd() *cobra.Command {
	var cf clientFlags
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
	cf.add(cmd)
	cmd.Flags().StringVar(&text, "text", "", "answer text")
	cmd.Flags().StringVar(&data, "data", "", "answer data (JSON)")
	cmd.Flags().StringVar(&by, "by", "", "who answers (default $USER)")
	cmd.Flags().StringVar(&credRef, "credential-ref", "", "for AUTH_REQUIRED: the name of a credential in the worker's credential store (never the secret)")
	return cmd
}

func newCancelCmd() *cobra.Command {
	var cf clientFlags
	var reason string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel ID [--reason R]",
		Short: "Cancel a delegation; the workflow cancels the remote task",
		Args:  oneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.with(cmd, func(ctx context.Context, c client.Client) error {
				desc, err := c.DescribeWorkflowExecution(ctx, args[0], "")
				if err != nil {
					return temporalErr(err)
				}
				if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
					return temporalErr(fmt.Errorf("delegation %s has already ended (workflow %s); see: delegate status %s", args[0], statusName(st), args[0]))
				}
				if err := dclient.Get(c, args[0]).WithNamespace(cf.namespace).Cancel(ctx, reason); err != nil {
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
	cf.add(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "reason, recorded in the workflow history")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "wait this long for the delegation to end and say how it ended (0: do not wait)")
	return cmd
}

func newListCmd() *cobra.Command {
	var cf clientFlags
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--state S]",
		Short: "List delegations (visibility query on search attribute A2AState)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if state != "" {
				var err error
				if state, err = contracts.ParseA2AState(state); err != nil {
					return usageErr(fmt.Errorf("--state: %w", err))
				}
			}
			c, err := cf.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			q := fmt.Sprintf("WorkflowType = %q", contracts.WorkflowType)
			if state != "" {
				q += " AND " + contracts.A2AStateFilter(state)
			}
			rows, err := listDelegations(ctx, c, cf.namespace, q)
			if err != nil {
				return temporalErr(err)
			}
			fillFromState(ctx, c, rows)
			if asJSON {
				b, _ := json.MarshalIndent(rows, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tREMOTE STATE\tWAITING SINCE\tDEADLINE\tWORKFLOW")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", clean(r.ID), clean(r.Agent), clean(r.A2AState), fmtTime(r.WaitingSince), fmtTime(r.Deadline), r.Status)
			}
			return tw.Flush()
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&state, "state", "", "only delegations whose A2AState is S: "+strings.Join(contracts.A2AStates, ", "))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type listRow struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	A2AState string    `json:"a2a_state"`
	Status   string    `json:"workflow_status"`
	Started  time.Time `json:"started"`
	// WaitingSince is when the open question was asked (running
	// delegations waiting for an operator); Deadline the contract's.
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
	Deadline     *time.Time `json:"deadline,omitempty"`
}

// fillFromState adds, for running delegations, what only the workflow
// knows (Query "state", bounded by a short timeout each).
func fillFromState(ctx context.Context, c client.Client, rows []listRow) {
	for i := range rows {
		if rows[i].Status != "running" {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := dclient.Get(c, rows[i].ID).State(qctx)
		cancel()
		if err != nil {
			continue
		}
		d := s.Deadline
		rows[i].Deadline = &d
		if s.Question != nil {
			since := s.Question.Since
			rows[i].WaitingSince = &since
		} else if s.Unknown != nil {
			since := s.Unknown.Since
			rows[i].WaitingSince = &since
		}
	}
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func listDelegations(ctx context.Context, c client.Client, ns, query string) ([]listRow, error) {
	rows := []listRow{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query, NextPageToken: token})
		if err != nil {
			var inv *serviceerror.InvalidArgument
			if errors.As(err, &inv) {
				return nil, fmt.Errorf("visibility query %q refused: %w", query, err)
			}
			return nil, err
		}
		for _, ex := range resp.Executions {
			r := listRow{ID: ex.Execution.WorkflowId, Status: statusName(ex.Status), Started: ex.StartTime.AsTime().UTC()}
			if sa := ex.SearchAttributes; sa != nil {
				r.Agent = keyword(sa.IndexedFields["A2AAgent"].GetData())
				r.A2AState = contracts.CurrentA2AState(keyword(sa.IndexedFields[contracts.SearchAttributeA2AState].GetData()))
			}
			rows = append(rows, r)
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.After(rows[j].Started) })
	return rows, nil
}

func keyword(data []byte) string {
	var s string
	if json.Unmarshal(data, &s) == nil {
		return s
	}
	return ""
}

func statusName(s enums.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
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

// retryablePoll reports whether a failed long poll may simply be tried
// again.
func retryablePoll(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.Canceled, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
	var out contracts.Outcome
	err := c.GetWorkflow(wctx, id, "").Get(wctx, &out)
	// A long poll the server ends early (gRPC Canceled or Unavailable
	// while our context is live: seen on the embedded server while the
	// workflow's history grows) is not an answer: poll again.
	for err != nil && wctx.Err() == nil && retryablePoll(err) {
		time.Sleep(200 * time.Millisecond)
		err = c.GetWorkflow(wctx, id, "").Get(wctx, &out)
	}
	switch {
	case err != nil && wctx.Err() != nil:
		fmt.Fprintf(w, "still stopping after %s; see: delegate status %s\n", wait, id)
		return nil
	case err != nil:
		return temporalErr(err)
	case slices.Contains(want, out.Status):
		fmt.Fprintf(w, "ended %s (remote task %s)\n", out.Status, orNone(out.RemoteTaskID))
		return nil
	default:
		return &exitError{code: exitNotComplete, err: fmt.Errorf("delegation %s ended %s before the %s took effect; see: delegate status %s", id, out.Status, what, id)}
	}
}
