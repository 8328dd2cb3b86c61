package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Answer is what an operator gives when the remote Task asks for input
// (TaskState INPUT_REQUIRED, A2A 1.0 §4.1.3). It is sent to the remote agent
// as a follow-up Message with the same taskId and contextId (A2A 1.0 §3.4.3).
type Answer struct {
	Text       string          `json:"text"`
	Data       json.RawMessage `json:"data,omitempty"`
	AnsweredBy string          `json:"answered_by,omitempty"`
	// CredentialRef answers AUTH_REQUIRED: it names a credential of the
	// worker's credential store, which supplies the secret for the
	// follow-up. Secrets never travel through a signal or an update.
	CredentialRef string `json:"credential_ref,omitempty"`
	// Round, when set (≥ 1), is the question round (State.Question.Round)
	// this answer was written for: the workflow refuses it when another
	// question is pending by then, so an answer given late (an MCP
	// elicitation, an operator reading an old screen) never lands on a
	// later question. 0 answers whichever question is pending.
	Round int `json:"round,omitempty"`
}

// MaxAnswerBytes bounds an answer: its text, data, answered_by and
// credential_ref together, in bytes (64 KiB). An answer travels through
// workflow history and to the agent; a larger one is refused at once.
const MaxAnswerBytes = 64 << 10

// Validate refuses an empty answer (it needs non-blank text or non-null
// data) and one over MaxAnswerBytes.
func (a Answer) Validate() error {
	var errs []error
	if n := len(a.Text) + len(a.Data) + len(a.AnsweredBy) + len(a.CredentialRef); n > MaxAnswerBytes {
		field := "text"
		if len(a.Data) > len(a.Text) {
			field = "data"
		}
		return &FieldError{Field: field, Rule: fmt.Sprintf("the answer is %d bytes; at most %d (text, data, answered_by and credential_ref together)", n, MaxAnswerBytes)}
	}
	if len(a.AnsweredBy) > 200 {
		errs = append(errs, &FieldError{Field: "answered_by", Rule: "at most 200 bytes"})
	}
	if a.Round < 0 {
		errs = append(errs, &FieldError{Field: "round", Rule: "a question round is 1 or more (0 or absent: whichever question is pending)"})
	}
	if strings.TrimSpace(a.Text) == "" && emptyJSON(a.Data) && a.CredentialRef == "" {
		errs = append(errs, &FieldError{Field: "text", Rule: "an answer needs text or data (or credential_ref for AUTH_REQUIRED)"})
	}
	if len(a.CredentialRef) > 200 {
		errs = append(errs, &FieldError{Field: "credential_ref", Rule: "at most 200 bytes: a name, not a secret"})
	}
	if len(a.Data) > 0 {
		d := bytes.TrimSpace(a.Data)
		if bytes.Equal(d, []byte("null")) {
			errs = append(errs, &FieldError{Field: "data", Rule: "must not be null"})
		} else if emptyList(d) {
			errs = append(errs, &FieldError{Field: "data", Rule: EmptyListRule})
		} else if !json.Valid(d) {
			errs = append(errs, &FieldError{Field: "data", Rule: "must be valid JSON"})
		}
	}
	return errors.Join(errs...)
}

// EmptyListRule is why a message's data may not be [] (A2A 1.0 §4.1.6 a
// data Part): a2a-go 2.3.1's server echoes such a part in the task's
// history as {"data": null}, which its client cannot read, so the task
// could not be read at all after the agent had taken the message.
const EmptyListRule = "must not be an empty list ([]): A2A peers read a data part holding [] as a part with no content; leave data out, or send an object"

func emptyList(d []byte) bool { return string(bytes.Join(bytes.Fields(d), nil)) == "[]" }

// emptyJSON reports whether data carries nothing: absent, "", {} or [].
func emptyJSON(data json.RawMessage) bool {
	switch string(bytes.Join(bytes.Fields(data), nil)) {
	case "", `""`, "{}", "[]":
		return true
	}
	return false
}

// DecodeAnswer decodes an Answer strictly (unknown fields and wrong types are
// errors naming the field) and validates it.
func DecodeAnswer(data []byte) (Answer, error) {
	var a Answer
	if err := strictDecode(data, &a, nil, nil); err != nil {
		return Answer{}, err
	}
	return a, a.Validate()
}

// Status is the final status of a delegation, part of the public contract.
type Status string

// Outcome statuses.
const (
	StatusCompleted           Status = "completed"
	StatusInvalidOutput       Status = "invalid_output"
	StatusFailed              Status = "failed"
	StatusRejected            Status = "rejected"
	StatusCanceled            Status = "canceled"
	StatusDeadlineExceeded    Status = "deadline_exceeded"
	StatusUnknownOutcome      Status = "unknown_outcome"
	StatusAuthorizationDenied Status = "authorization_denied"
	StatusProtocolError       Status = "protocol_error"
	// StatusCardUntrusted: a required signature is missing or does not
	// verify; nothing was sent.
	StatusCardUntrusted Status = "card_untrusted"
	// StatusCardChanged: the card changed under the delegation in a way
	// that matters and no operator accepted the new card (Signal
	// "rediscover") before the deadline.
	StatusCardChanged Status = "card_changed"
	// StatusCancelUnconfirmed: canceled locally; the agent did not confirm
	// (TaskNotCancelable, or it kept working). Late results, if any, are in
	// late_results.
	StatusCancelUnconfirmed Status = "cancel_unconfirmed"
)

// Category separates kinds of error (docs/architecture.md, principle 6); each has one
// handling. Part of the public contract.
type Category string

// Error categories.
const (
	CategoryProtocol       Category = "protocol"
	CategoryAuthorization  Category = "authorization"
	CategoryTransient      Category = "transient"
	CategoryRemoteBusiness Category = "remote_business"
	CategoryInvalidOutput  Category = "invalid_output"
	CategoryUnknownOutcome Category = "unknown_outcome"
	CategoryDeadline       Category = "deadline"
	CategoryCanceled       Category = "canceled"
	CategoryInvalidInput   Category = "invalid_contract"
	CategoryCard           Category = "card"
)

// Outcome is the result of a delegation: the workflow's return value.
type Outcome struct {
	LocalWorkflowID   string             `json:"local_workflow_id"`
	Status            Status             `json:"status"`
	RemoteTaskID      string             `json:"remote_task_id"`
	ContextID         string             `json:"context_id"`
	Agent             AgentInfo          `json:"agent"`
	Protocol          ProtocolInfo       `json:"protocol"`
	Outputs           []Output           `json:"outputs"`
	RejectedArtifacts []RejectedArtifact `json:"rejected_artifacts"`
	InputRounds       int                `json:"input_rounds"`
	Error             *ErrorInfo         `json:"error,omitempty"`
	// LateResults are artifacts that arrived after a local cancel: recorded,
	// never turned into outputs.
	LateResults []Artifact `json:"late_results,omitempty"`
}

// AgentInfo identifies the remote agent by its Agent Card (A2A 1.0 §4.4.1).
// CardDigest is "sha256:" + hex of the RFC 8785 form of the card without
// its signatures.
type AgentInfo struct {
	Name        string `json:"name"`
	CardURL     string `json:"card_url"`
	CardVersion string `json:"card_version"`
	CardDigest  string `json:"card_digest"`
	// Signature is "verified:<kid>", "unsigned" or "unverified" (A2A 1.0
	// §8.4.3, checked against the worker's trust store).
	Signature string `json:"signature,omitempty"`
	// ExtendedCardDigest is the digest (as CardDigest) of the
	// authenticated extended Agent Card the delegation used (A2A 1.0
	// §3.1.11): the card declared capabilities.extendedAgentCard and the
	// worker holds credentials for the agent, so its skills and interfaces
	// are the extended card's. ExtendedCardSignature is its signature
	// check, as Signature.
	ExtendedCardDigest    string `json:"extended_card_digest,omitempty"`
	ExtendedCardSignature string `json:"extended_card_signature,omitempty"`
}

// ProtocolInfo is the negotiated protocol version ("1.0", "0.3"), binding
// ("JSONRPC", "HTTP+JSON", "GRPC") and the interface URL used (A2A 1.0
// §8.3; for GRPC the url as the card wrote it, e.g. "host:port").
type ProtocolInfo struct {
	Version string `json:"version"`
	Binding string `json:"binding"`
	URL     string `json:"url"`
	// DeclaredVersion is the card's protocolVersion when it is not the
	// version spoken (Interface.DeclaredVersion: "0.2.5" spoken as 0.3).
	DeclaredVersion string `json:"declared_version,omitempty"`
}

// Output is one artifact that passed the contract. Kind is the artifact's
// kind (see KindOf); Data is its data part (JSON), Text its text parts
// joined, Files its file parts (recorded, never fetched). Authority is
// always "none": an output is a proposal for the backend to act on under
// its own rules.
type Output struct {
	Kind       string          `json:"kind"`
	ArtifactID string          `json:"artifact_id"`
	Data       json.RawMessage `json:"data,omitempty"`
	Text       string          `json:"text,omitempty"`
	Files      []FileRef       `json:"files,omitempty"`
	Authority  string          `json:"authority"`
}

// RejectedArtifact is an artifact that failed the contract, with the reason.
type RejectedArtifact struct {
	ArtifactID string `json:"artifact_id"`
	Reason     string `json:"reason"`
}

// ErrorInfo is an error with its category. Message never holds secrets or
// remote message bodies beyond what the status needs.
type ErrorInfo struct {
	Category Category `json:"category"`
	Message  string   `json:"message"`
}

// DecodeObject decodes one JSON object into v strictly: unknown fields,
// wrong types and trailing data are *FieldError naming the field; anything
// but an object (a bare string, a number, null, an array) is refused as
// "(document)". For payloads an operator types by hand (signals, updates).
func DecodeObject(data []byte, v any) error { return strictDecode(data, v, nil, nil) }
