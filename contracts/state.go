package contracts

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// State is the authoritative local state of one delegation (docs/architecture.md,
// principle 5), returned by Query "state".
type State struct {
	LocalWorkflowID string    `json:"local_workflow_id"`
	Purpose         string    `json:"purpose"`
	Skill           string    `json:"skill"`
	AgentCardURL    string    `json:"agent_card_url"`
	Deadline        time.Time `json:"deadline"`
	StartedAt       time.Time `json:"started_at"`
	// A2AState is the remote TaskState in short form ("working",
	// "input-required", ...) or a local phase ("resolving", "sending");
	// mirrored in search attribute A2AState.
	A2AState     string       `json:"a2a_state"`
	RemoteTaskID string       `json:"remote_task_id,omitempty"`
	ContextID    string       `json:"context_id,omitempty"`
	Agent        AgentInfo    `json:"agent"`
	Protocol     ProtocolInfo `json:"protocol"`
	Interface    Interface    `json:"interface"`
	// Signature is the card's signature check (agent.signature is its
	// label); Reason says why it did not verify.
	Signature CardVerification `json:"signature"`
	// ContinuedAsNew counts the runs this delegation continued into.
	ContinuedAsNew int `json:"continued_as_new,omitempty"`
	// Streaming is the card's capabilities.streaming: the task is then
	// followed with SubscribeToTask.
	Streaming bool `json:"streaming,omitempty"`
	// Push: the agent pushes the task's changes to the webhook (the card
	// declares pushNotifications and the worker registered a config); the
	// task is then read when a push arrives (Signal "task-update"), and at
	// the waiting cadence otherwise. Pushes counts the pushes taken.
	Push   bool `json:"push,omitempty"`
	Pushes int  `json:"pushes,omitempty"`
	// CardChanges lists the card changes seen before follow-ups.
	CardChanges []CardChange `json:"card_changes,omitempty"`
	// InputModes are the media types the remote skill accepts (empty:
	// undeclared); every outbound message is checked against them.
	InputModes []string `json:"input_modes,omitempty"`
	// Question is the pending remote request for input, nil when none.
	Question    *Question      `json:"question,omitempty"`
	InputRounds int            `json:"input_rounds"`
	Answers     []AnswerRecord `json:"answers,omitempty"`
	// IgnoredAnswers counts signals that arrived while no question was
	// pending (they are never applied to a later question).
	IgnoredAnswers int          `json:"ignored_answers,omitempty"`
	Transitions    []Transition `json:"transitions"`
	// LastSnapshot is the last remote Task observed (untrusted data).
	LastSnapshot *TaskSnapshot `json:"last_snapshot,omitempty"`
	// Outcome is set when the delegation has ended.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Failure is set when the workflow failed without an Outcome (a
	// contract that does not validate).
	Failure string `json:"failure,omitempty"`
	// Authorizations are the decisions taken before each outbound message.
	Authorizations []AuthorizationRecord `json:"authorizations,omitempty"`
	// Sends records every send of every round.
	Sends []SendRecord `json:"sends,omitempty"`
	// Unknown is the pending send whose outcome is unknown;
	// UnknownHistory the resolved ones.
	Unknown        *UnknownOutcome  `json:"unknown_outcome,omitempty"`
	UnknownHistory []UnknownOutcome `json:"unknown_outcomes,omitempty"`
	// Reconciliations are the GetTask reads made on Signal "reconcile".
	Reconciliations []Reconciliation `json:"reconciliations,omitempty"`
	// LateResults are artifacts that arrived after a local cancel.
	LateResults []Artifact `json:"late_results,omitempty"`
	// CancelError is why CancelTask failed (TaskNotCancelable, ...).
	CancelError string `json:"cancel_error,omitempty"`
	// CancelReason is the reason given with a cancel (`delegate cancel
	// --reason`, Signal "cancel-reason" sent before the cancel request), at
	// most 1000 bytes.
	CancelReason string `json:"cancel_reason,omitempty"`
	// Retrying is set while a call that failed transiently (card fetch,
	// send) is being retried; it shows the last error.
	Retrying *Retrying `json:"retrying,omitempty"`
	// ReconcileCount counts the reconcile reads and requests; Reconciliations
	// keeps the last 20.
	ReconcileCount int `json:"reconcile_count,omitempty"`
	// IgnoredSignals are the last signal payloads that were not applied
	// (did not decode or validate), newest last, at most 20;
	// IgnoredSignalCount counts them all.
	IgnoredSignals []IgnoredSignal `json:"ignored_signals,omitempty"`
	// UnknownSignals are the names of Signals sent to the delegation that
	// it has no handler for (a typo in the UI's form: "provide_input"),
	// read when the state is queried; they are never applied.
	UnknownSignals     []string `json:"unknown_signals,omitempty"`
	IgnoredSignalCount int      `json:"ignored_signal_count,omitempty"`
	// SendInFlight is the messageId of a send in flight when the
	// delegation stopped, abandoned (or ended without a reply), whose task
	// was not found (ListTasks): its outcome is unknown.
	SendInFlight string `json:"send_in_flight,omitempty"`
	// StaleReplies counts interrupted task snapshots that showed a question
	// already answered (a republished task): they never open a round.
	StaleReplies int `json:"stale_replies,omitempty"`

	// stateNext has no field: the build tag rollingnext, "release N+1" of
	// the rolling-deploy test (e2e/rolling_test.go, docs/versioning.md
	// "Data"), adds one through it.
	stateNext
}

// Retrying is a call being retried after transient failures, with
// backoff, until it succeeds, fails permanently, or the deadline.
type Retrying struct {
	Op        string    `json:"op"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	Since     time.Time `json:"since"`
	Next      time.Time `json:"next"`
	// HandedOver: after WorkflowRetries attempts, Temporal retries the
	// call (every 5 minutes at most) until the deadline; the pending
	// activity (Temporal UI, delegate status) shows each attempt's failure.
	HandedOver bool `json:"handed_over,omitempty"`
}

// Question is what the remote agent asked (untrusted text, shown, never
// obeyed) and since when.
type Question struct {
	Round int             `json:"round"`
	State TaskState       `json:"state"`
	Text  string          `json:"text"`
	Data  json.RawMessage `json:"data,omitempty"`
	Since time.Time       `json:"since"`
	// Key is the status identity of the question (StatusKeyOf):
	// the same question seen again after it was answered is not a new one.
	Key string `json:"key,omitempty"`
}

// AnswerRecord is one answer sent to the remote agent.
type AnswerRecord struct {
	Round      int             `json:"round"`
	Text       string          `json:"text"`
	Data       json.RawMessage `json:"data,omitempty"`
	AnsweredBy string          `json:"answered_by,omitempty"`
	Via        string          `json:"via"` // "signal" or "update"
	// Refused says why the answer could not be sent (the question is then
	// asked again).
	Refused string `json:"refused,omitempty"`
	// Unconfirmed says why the answer's delivery is not known: the
	// follow-up failed without a reply (it may have reached the agent) and
	// the task ended meanwhile, in the agent's own state.
	Unconfirmed string    `json:"unconfirmed,omitempty"`
	At          time.Time `json:"at"`
	MessageID   string    `json:"message_id"`
	// QuestionState and QuestionKey identify the question this answers.
	QuestionState TaskState `json:"question_state,omitempty"`
	QuestionKey   string    `json:"question_key,omitempty"`
}

// Transition is one observed state change.
type Transition struct {
	State string    `json:"state"`
	At    time.Time `json:"at"`
}

// ProvideInputResult is the result of Update "provide-input".
type ProvideInputResult struct {
	Round int `json:"round"`
}

// CardChange is a change of the agent card observed before a follow-up.
type CardChange struct {
	At        time.Time `json:"at"`
	OldDigest string    `json:"old_digest"`
	NewDigest string    `json:"new_digest"`
	// Matters is true when the change touched what the delegation uses
	// (skill, interface, signer, trust); What says what.
	Matters  bool   `json:"matters"`
	What     string `json:"what,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
}

// Carry is what a run hands to the run it continues as new into, as the
// workflow's second input: the State, and every intent received and not
// yet acted on.
type Carry struct {
	State State `json:"state"`
	// Revoked is a revoke's reason.
	Revoked *string `json:"revoked,omitempty"`
	// Pending is an accepted answer not yet sent (PendingVia "signal" or
	// "update").
	Pending    *Answer `json:"pending,omitempty"`
	PendingVia string  `json:"pending_via,omitempty"`
	// Resolution is a resolve-unknown not yet applied.
	Resolution *Resolution `json:"resolution,omitempty"`
	// Rediscover is a rediscover not yet applied.
	Rediscover bool `json:"rediscover,omitempty"`
	// Reconcile is a reconcile asked for and not yet read.
	Reconcile bool `json:"reconcile,omitempty"`
	// Pushed is a push (Signal "task-update") not yet acted on.
	Pushed bool `json:"pushed,omitempty"`
	// FromRunID is the id of the run that handed this over, and
	// ContractDigest the sha256 (hex) of the contract it ran (its JSON as
	// the workflow encodes it): the next run accepts the carry only as the
	// continuation of that run (its ContinuedExecutionRunID) of the same
	// contract. Empty in carries written before they were recorded.
	FromRunID      string `json:"from_run_id,omitempty"`
	ContractDigest string `json:"contract_digest,omitempty"`

	// carryNext has no field: the build tag rollingnext adds one through
	// it (see State).
	carryNext
}

// Unknown-outcome actions (Resolution.Action).
const (
	ActionResend  = "resend"
	ActionAdopt   = "adopt"
	ActionAbandon = "abandon"
)

// Resolution is the payload of resolve-unknown.
type Resolution struct {
	Action     string `json:"action"`
	TaskID     string `json:"task_id,omitempty"`
	ResolvedBy string `json:"resolved_by,omitempty"`
}

// Validate checks a Resolution.
// TaskIDOnlyWithAdopt is the rule that refuses a task_id with another
// action than adopt.
const TaskIDOnlyWithAdopt = "only with action adopt (resend and abandon name no task)"

func (res Resolution) Validate() error {
	switch res.Action {
	case ActionResend, ActionAbandon:
		if strings.TrimSpace(res.TaskID) != "" {
			// A task id with another action looked like an adopt.
			return &FieldError{Field: "task_id", Rule: TaskIDOnlyWithAdopt}
		}
		return nil
	case ActionAdopt:
		if strings.TrimSpace(res.TaskID) == "" {
			return &FieldError{Field: "task_id", Rule: "required with action adopt"}
		}
		return nil
	}
	return &FieldError{Field: "action", Rule: fmt.Sprintf(`must be "resend", "adopt" or "abandon", got %q`, res.Action)}
}

// UnknownOutcome is a send whose outcome is unknown (docs/architecture.md,
// principle 4).
type UnknownOutcome struct {
	Round     int       `json:"round"`
	MessageID string    `json:"message_id"`
	Since     time.Time `json:"since"`
	Error     string    `json:"error"`
	// AutoResends counts the automatic resends (on_unknown_outcome
	// "resend", at most 3) before an operator was asked.
	AutoResends int `json:"auto_resends"`
	// Resolution is the operator's choice, once given.
	Resolution *Resolution `json:"resolution,omitempty"`
}

// SendRecord is one send of a round.
type SendRecord struct {
	Round     int       `json:"round"`
	MessageID string    `json:"message_id"`
	At        time.Time `json:"at"`
	// Result is "sent", "unknown_outcome", "adopted" (by an operator),
	// "adopted: found by ListTasks", "not found: REASON" (ListTasks found
	// no task of the send), "abandoned at the stop", "sent after the stop"
	// or the error category.
	Result string `json:"result"`
	// Attempts is the activity attempt that sent (earlier attempts failed
	// before anything was sent: connection refused, 503, ...).
	Attempts int `json:"attempts,omitempty"`
	// Error is why the outcome is unknown (Result "unknown_outcome"), at
	// most 500 bytes of the send's error.
	Error string `json:"error,omitempty"`
}

// AuthorizationRecord is one authorization decision.
type AuthorizationRecord struct {
	AuthorizationDecision
	Round int       `json:"round"`
	At    time.Time `json:"at"`
}

// AuthorizationDecision is recorded in the workflow state.
type AuthorizationDecision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	// Policy is "allow-all" without a policy file, else "sha256:<hex>" of
	// the file's content at the time of the decision.
	Policy string `json:"policy"`
}

// Reconciliation is one GetTask made on Signal "reconcile".
type Reconciliation struct {
	At      time.Time `json:"at"`
	Before  string    `json:"before"`
	Seen    string    `json:"seen,omitempty"`
	Changed bool      `json:"changed"`
	Error   string    `json:"error,omitempty"`
}

// IgnoredSignal is a signal payload that was not applied: it did not
// decode or did not validate. Name is the signal's, Excerpt the start of
// the payload as sent (at most 200 bytes), Size its length in bytes, Time
// when it arrived.
type IgnoredSignal struct {
	Name    string    `json:"name"`
	Reason  string    `json:"reason"`
	Excerpt string    `json:"excerpt,omitempty"`
	Size    int       `json:"size"`
	Time    time.Time `json:"time"`
}
