package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/a2adelegate/delegate/contracts"
)

// ListOptions select delegations by what Temporal's visibility store
// knows of them.
type ListOptions struct {
	// Namespace is the Temporal namespace ("": "default").
	Namespace string
	// A2AState keeps delegations whose search attribute A2AState is this
	// value, in its current or a former spelling ("": any).
	A2AState string
	// Running keeps open delegations only.
	Running bool
	// Starter keeps delegations whose search attribute DelegationStarter
	// is this value ("": any).
	Starter string
	// StartedBefore keeps delegations started before it (zero: any).
	StartedBefore time.Time
	// Pages, when positive, stops after that many pages of the
	// visibility store's answer (which lists the newest first): a bound on
	// the work for a caller that shows only the newest (`delegate mcp`'s
	// delegation_list). 0: every page.
	Pages int
	// WithState asks each running delegation for its deadline and since
	// when it waits (Query "state", at most 3 s each; a delegation with
	// no worker to answer is listed without them), and reads the Outcome
	// of the MaxOutcomeReads newest delegations that ended (the run's
	// result, at most 3 s each).
	WithState bool
}

// MaxOutcomeReads bounds the Outcomes one List with WithState reads.
const MaxOutcomeReads = 100

// Listed is one delegation as List returns it.
type Listed struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	// Starter is the search attribute DelegationStarter ("" when the
	// starter did not set it).
	Starter string `json:"starter,omitempty"`
	// A2AState is the search attribute, in its current spelling.
	A2AState string `json:"a2a_state"`
	// Status is the workflow's: running, completed, failed, canceled,
	// terminated or timed_out (a run that continued as new is not listed:
	// the run it continued in is).
	Status  string    `json:"workflow_status"`
	Started time.Time `json:"started"`
	// Outcome is the status of the delegation's Outcome once it ended
	// ("completed", "canceled", "deadline_exceeded", ...; set with
	// ListOptions.WithState): how it ended, where A2AState is the remote
	// task's last state or, with none to tell, the phase "ended".
	Outcome contracts.Status `json:"outcome,omitempty"`
	// Failure is the category of a run that failed without an Outcome:
	// the type of its ApplicationError, "invalid_contract" (the workflow
	// refused its input: workflows.ErrTypeInvalidContract) or
	// "carried_state" (workflows.ErrTypeCarriedState). Set with
	// ListOptions.WithState, for the MaxOutcomeReads newest ended runs.
	Failure string `json:"failure,omitempty"`
	// NameUnknown says Agent is the contract's agent_card_url, not a
	// name: the delegation recorded no Agent Card (its first send had not
	// succeeded, the deadline had passed before it, or the card could not
	// be read). Agent is "" when the card URL is not known either (a
	// backend started the run without the search attribute A2AAgent, and
	// its contract could not be read: sealed, or not a contract). Set
	// with ListOptions.WithState.
	NameUnknown bool `json:"name_unknown,omitempty"`
	// WaitingSince is when the open question (or unknown outcome) began,
	// Deadline the contract's; set with ListOptions.WithState.
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
	Deadline     *time.Time `json:"deadline,omitempty"`

	runID string
}

// StarterRule is the rule of a DelegationStarter value (ValidStarter).
const StarterRule = "1 to 200 bytes of printable characters, no quote (\") or backslash"

// ValidStarter reports whether s can be a DelegationStarter value: 1 to
// 200 bytes, printable (no control or format characters), without '"'
// or '\\' (it is quoted in visibility queries).
func ValidStarter(s string) bool {
	if s == "" || len(s) > 200 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// ListQuery is the Temporal visibility query that selects what o asks
// for. Errors: an A2AState that is not one (contracts.ParseA2AState).
func ListQuery(o ListOptions) (string, error) {
	// A run that continued as new is not a delegation of its own: the
	// run it continued in is (it showed as a second row, with the state
	// it had when it handed over, under --state input-required for ever).
	q := fmt.Sprintf("WorkflowType = %q AND ExecutionStatus != \"ContinuedAsNew\"", contracts.WorkflowType)
	if o.Running {
		q += ` AND ExecutionStatus = "Running"`
	}
	if o.A2AState != "" {
		state, err := contracts.ParseA2AState(o.A2AState)
		if err != nil {
			return "", err
		}
		q += " AND " + contracts.A2AStateFilter(state)
	}
	if o.Starter != "" {
		if !ValidStarter(o.Starter) {
			return "", &contracts.FieldError{Field: "starter", Rule: StarterRule}
		}
		q += fmt.Sprintf(" AND %s = %s", contracts.SearchAttributeDelegationStarter, strconv.Quote(o.Starter))
	}
	if !o.StartedBefore.IsZero() {
		q += fmt.Sprintf(` AND StartTime < %q`, o.StartedBefore.UTC().Format(time.RFC3339))
	}
	return q, nil
}

// List returns the delegations o selects, newest first. Errors: a bad
// A2AState, a visibility query the server refuses (it names the query),
// or the Temporal error.
func List(ctx context.Context, c sdkclient.Client, o ListOptions) ([]Listed, error) {
	query, err := ListQuery(o)
	if err != nil {
		return nil, err
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	rows := []Listed{}
	var token []byte
	pages := 0
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query, NextPageToken: token})
		pages++
		if err != nil {
			var inv *serviceerror.InvalidArgument
			if errors.As(err, &inv) {
				return nil, fmt.Errorf("visibility query %q refused: %w", query, err)
			}
			return nil, err
		}
		for _, ex := range resp.Executions {
			r := Listed{ID: ex.Execution.WorkflowId, Status: statusName(ex.Status), Started: ex.StartTime.AsTime().UTC(), runID: ex.Execution.RunId}
			if sa := ex.SearchAttributes; sa != nil {
				r.Agent = keyword(sa.IndexedFields[contracts.SearchAttributeA2AAgent].GetData())
				r.Starter = keyword(sa.IndexedFields[contracts.SearchAttributeDelegationStarter].GetData())
				r.A2AState = contracts.CurrentA2AState(keyword(sa.IndexedFields[contracts.SearchAttributeA2AState].GetData()))
			}
			rows = append(rows, r)
		}
		token = resp.NextPageToken
		if len(token) == 0 || (o.Pages > 0 && pages >= o.Pages) {
			break
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.After(rows[j].Started) })
	if o.WithState {
		fillFromState(ctx, c, rows)
	}
	return rows, nil
}

// fillFromState adds what only the workflow knows: for running
// delegations, from Query "state"; for ended ones (at most
// MaxOutcomeReads), from the run's result, the Outcome, or the category
// of its failure. A row with no agent (a backend that started the run
// without the search attribute A2AAgent) gets the contract's
// agent_card_url, from the state or from the run's input. Each read is
// bounded by a short timeout; a row whose read fails keeps what
// visibility said.
func fillFromState(ctx context.Context, c sdkclient.Client, rows []Listed) {
	outcomes := 0
	for i := range rows {
		r := &rows[i]
		var agent contracts.AgentInfo
		switch {
		case r.Status == "running":
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			s, err := Get(c, r.ID).State(qctx)
			cancel()
			if err != nil {
				continue
			}
			d := s.Deadline
			r.Deadline = &d
			if s.Question != nil {
				since := s.Question.Since
				r.WaitingSince = &since
			} else if s.Unknown != nil {
				since := s.Unknown.Since
				r.WaitingSince = &since
			}
			agent = s.Agent
			if agent.CardURL == "" {
				agent.CardURL = s.AgentCardURL
			}
		case (r.Status == "completed" || r.Status == "failed") && outcomes < MaxOutcomeReads:
			// A delegation returns its Outcome; a failed run (its input
			// refused) has none: its failure's type says why.
			outcomes++
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			var out contracts.Outcome
			err := c.GetWorkflow(qctx, r.ID, r.runID).Get(qctx, &out)
			var appErr *temporal.ApplicationError
			if r.Status == "failed" && errors.As(err, &appErr) {
				r.Failure = contracts.Truncate(appErr.Type(), contracts.MaxKeyword)
			}
			if r.Agent == "" {
				agent.CardURL = out.Agent.CardURL
				if agent.CardURL == "" {
					agent.CardURL = contractCardURL(qctx, c, r.ID, r.runID)
				}
			}
			cancel()
			if r.Status == "failed" {
				if r.Agent == "" && agent.CardURL != "" {
					r.Agent, r.NameUnknown = contracts.Truncate(agent.CardURL, contracts.MaxKeyword), true
				}
				continue
			}
			if err != nil || out.Status == "" {
				continue
			}
			r.Outcome = out.Status
			agent.Name, agent.CardDigest = out.Agent.Name, out.Agent.CardDigest
		default:
			continue
		}
		if agent.Name != "" {
			r.Agent = contracts.Truncate(agent.Name, contracts.MaxKeyword)
		} else if agent.CardDigest == "" {
			r.NameUnknown = true
			if r.Agent == "" {
				r.Agent = contracts.Truncate(agent.CardURL, contracts.MaxKeyword)
			}
		}
	}
}

// contractCardURL reads the agent_card_url of the contract a run was
// started with (workflow input 1, in the first event of its history),
// for a run started without the search attribute A2AAgent. "" when it
// cannot be read: sealed (a codec), not JSON, over
// contracts.MaxContractBytes, or no history.
func contractCardURL(ctx context.Context, c sdkclient.Client, id, runID string) string {
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return ""
	}
	ev, err := it.Next()
	if err != nil {
		return ""
	}
	in := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(in) == 0 || string(in[0].GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON || len(in[0].GetData()) > contracts.MaxContractBytes {
		return ""
	}
	var d struct {
		AgentCardURL string `json:"agent_card_url"`
	}
	if json.Unmarshal(in[0].GetData(), &d) != nil {
		return ""
	}
	return d.AgentCardURL
}

func keyword(data []byte) string {
	var s string
	if json.Unmarshal(data, &s) == nil {
		return s
	}
	return ""
}

// statusName is a workflow execution status in lower case: "running",
// "completed", ...
func statusName(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// Described is what the Temporal server itself knows of a delegation's
// latest run (DescribeWorkflowExecution: no worker, no workflow task).
type Described struct {
	// WorkflowType is the run's workflow type (contracts.WorkflowType for
	// a delegation).
	WorkflowType string
	// Status is the run's status in lower case: "running", "completed",
	// "failed", "canceled", "terminated", "continued_as_new" or
	// "timed_out".
	Status string
	// A2AState is search attribute A2AState as stored (a former spelling
	// is not mapped: contracts.CurrentA2AState); "" when unset. It lags
	// the workflow's state by up to one workflow task.
	A2AState string
	// Starter is search attribute DelegationStarter: who started the
	// delegation (`delegate mcp`'s actor, client.WithStarter); "" when
	// unset.
	Starter string
	// RunID is the id of that latest run (a continue-as-new makes a new
	// one): the Temporal UI's page of a run is
	// /namespaces/NS/workflows/ID/RUNID/TAB.
	RunID string
	// FirstRunID is the id of the delegation's first run (RunID until it
	// continued as new).
	FirstRunID string
	// StartTime is when that run started, CloseTime when it closed (zero
	// while it runs), UTC.
	StartTime, CloseTime time.Time
}

// Running reports whether the run is still running.
func (d Described) Running() bool { return d.Status == "running" }

// Describe reads the delegation's latest run from the server
// (DescribeWorkflowExecution). Errors: the Temporal error
// (serviceerror.NotFound for an unknown id).
func (h *Handle) Describe(ctx context.Context) (Described, error) {
	desc, err := h.c.DescribeWorkflowExecution(ctx, h.id, "")
	if err != nil {
		return Described{}, err
	}
	info := desc.GetWorkflowExecutionInfo()
	sa := info.GetSearchAttributes().GetIndexedFields()
	return Described{
		WorkflowType: info.GetType().GetName(),
		Status:       statusName(info.GetStatus()),
		A2AState:     keyword(sa[contracts.SearchAttributeA2AState].GetData()),
		Starter:      keyword(sa[contracts.SearchAttributeDelegationStarter].GetData()),
		RunID:        info.GetExecution().GetRunId(),
		FirstRunID:   info.GetFirstRunId(),
		StartTime:    utcOrZero(info.GetStartTime()),
		CloseTime:    utcOrZero(info.GetCloseTime()),
	}, nil
}

func utcOrZero(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime().UTC()
}

// WorkflowStatus returns the status of the delegation's latest workflow
// run (Describe: Described.Status). Errors: the Temporal error
// (serviceerror.NotFound for an unknown id).
func (h *Handle) WorkflowStatus(ctx context.Context) (string, error) {
	d, err := h.Describe(ctx)
	return d.Status, err
}
