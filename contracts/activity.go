package contracts

import (
	"fmt"
	"strings"
	"time"
)

// What travels between the Delegation workflow and its activities: the
// activity names, their inputs and results, the error types the workflow
// tells apart, and the pure decisions both sides make on a resolved card.
// They live here, not in package activities, so that the workflow's
// package depends on the Temporal SDK and contracts alone
// (docs/architecture.md, "Rooms"), and so that what an old history decides
// is read from one place. The JSON names are part of recorded histories:
// renaming one breaks the replay of every delegation that recorded it.

// The names the activities are registered under (activities.Register) and
// the workflow schedules them by. They are recorded in history: a rename
// is a change of the workflow (docs/versioning.md).
const (
	ActivityCheckAndSend = "CheckAndSend"
	ActivityPollTask     = "PollTask"
	ActivityWatchTask    = "WatchTask"
	ActivityGetTask      = "GetTask"
	// ActivityFindTask looks for the task a send whose outcome is unknown
	// may have created (A2A 1.0 ListTasks), before it is sent again.
	ActivityFindTask = "FindTask"
	// ActivityCheckCredential checks, for the Update provide-input, that a
	// credential_ref names a credential of the worker's store that may go
	// to the agent's origin, before the answer is accepted.
	ActivityCheckCredential = "CheckCredential"
	ActivityCancelTask      = "CancelTask"
	ActivityReconcileOpen   = "ReconcileOpen"
	// ActivityCancelOrphans is the orphan sweep of ReconcileDelegations
	// (activities.CancelOrphans).
	ActivityCancelOrphans = "CancelOrphans"
)

// ActivityNames lists every activity name the workflows schedule.
var ActivityNames = []string{ActivityCheckAndSend, ActivityPollTask, ActivityWatchTask, ActivityGetTask, ActivityFindTask, ActivityCheckCredential, ActivityCancelTask, ActivityReconcileOpen, ActivityCancelOrphans}

// ErrTypeUnchanged is the ApplicationError type of PollTask when the task
// has not changed: retryable and benign (logged at debug level, not
// counted as a failure), so that Temporal reads the task again after the
// retry interval.
const ErrTypeUnchanged = "task_unchanged"

// ErrTypeCredentialRef is the ApplicationError type of a send whose
// credential_ref is not in the worker's credential store (nothing sent).
const ErrTypeCredentialRef = "credential_ref_unknown"

// ErrTypeCredentialRefNotAllowed is the ApplicationError type of a send
// whose credential_ref may not be sent to the agent's origin (nothing
// sent).
const ErrTypeCredentialRefNotAllowed = "credential_ref_not_allowed"

// ResolveCardInput names the card and the skill a delegation needs.
type ResolveCardInput struct {
	CardURL string `json:"card_url"`
	Skill   string `json:"skill"`
	// RequireSignature is the contract's require_signed_card.
	RequireSignature bool `json:"require_signature,omitempty"`
}

// ResolvedCard is what the workflow keeps of a resolved card. The
// workflow decides what a missing skill, a missing interface or an
// unverified signature means (first resolution or change detection).
type ResolvedCard struct {
	Agent AgentInfo `json:"agent"`
	// SkillFound reports whether the card offers the skill.
	SkillFound bool `json:"skill_found"`
	// Skills are the ids of the skills the card offers, when it does not
	// offer the contract's (the first 20, each cut to 100 bytes), so the
	// refusal can name them.
	Skills []string `json:"skills,omitempty"`
	// Interface is the selected interface; InterfaceError says why there
	// is none.
	Interface      Interface `json:"interface"`
	InterfaceError string    `json:"interface_error,omitempty"`
	Streaming      bool      `json:"streaming"`
	// PushNotifications is the card's capabilities.pushNotifications (A2A
	// 1.0 §4.4.3): the agent can push the task's changes.
	PushNotifications bool `json:"push_notifications,omitempty"`
	// InputModes are the media types the skill accepts: its inputModes, or
	// the card's defaultInputModes (A2A 1.0 §4.4.5); empty when undeclared.
	InputModes []string `json:"input_modes,omitempty"`
	// Verification is the signature check against the trust store.
	Verification CardVerification `json:"verification"`
	// SignatureRequired is true when the contract or the trust store
	// requires a verified signature.
	SignatureRequired bool `json:"signature_required"`
	// ExtendedCardError says why the authenticated extended card the card
	// declares was not used (not fetched: no credentials for the agent,
	// refused, malformed); the public card was used instead.
	ExtendedCardError string `json:"extended_card_error,omitempty"`
}

// Trusted reports whether the card may be used: verified, or no signature
// required.
func (r ResolvedCard) Trusted() bool {
	return !r.SignatureRequired || r.Verification.Status == SigVerified
}

// Usable reports whether a card can be used for a send: trusted, offering
// the skill, with a usable interface.
func (r ResolvedCard) Usable() bool {
	return r.Trusted() && r.SkillFound && r.InterfaceError == ""
}

// CardInUse is what a delegation keeps of the card it uses, to tell a
// change of card that matters from one that does not (A2A 1.0 §8.6).
type CardInUse struct {
	Interface Interface        `json:"interface"`
	Signature CardVerification `json:"signature"`
}

// WhatChanged says what changed between the card in use and card in a
// way that matters to a delegation of skill, or "" when nothing it uses
// did: the skill is gone, the selected interface changed or none is
// usable, the signer changed, or the card is no longer trusted.
// CheckAndSend decides with it whether a follow-up goes out on card.
func (u CardInUse) WhatChanged(card ResolvedCard, skill string) string {
	var what []string
	if !card.SkillFound {
		what = append(what, fmt.Sprintf("skill %q is gone", skill))
	}
	if card.InterfaceError != "" {
		what = append(what, "no usable interface: "+card.InterfaceError)
	} else {
		old, nw := u.Interface, card.Interface
		if old.URL != nw.URL || old.Binding != nw.Binding || old.Version != nw.Version {
			what = append(what, fmt.Sprintf("interface changed from %s %s %s to %s %s %s", old.Binding, old.Version, old.URL, nw.Binding, nw.Version, nw.URL))
		}
	}
	if card.Verification.KeyID != u.Signature.KeyID || card.Verification.Status != u.Signature.Status {
		what = append(what, fmt.Sprintf("signer changed from %s to %s", u.Signature.Label(), card.Verification.Label()))
	}
	if !card.Trusted() {
		what = append(what, "the card is no longer trusted")
	}
	return strings.Join(what, "; ")
}

// AuthorizationInput is what a decision is made about. It is checked again
// before every outbound message (docs/architecture.md, principle 1).
type AuthorizationInput struct {
	LocalWorkflowID string    `json:"local_workflow_id"`
	AgentOrigin     string    `json:"agent_origin"`
	Skill           string    `json:"skill"`
	Purpose         string    `json:"purpose"`
	Deadline        time.Time `json:"deadline"`
	// Round is the message round the decision is for (0: the first send).
	Round int `json:"round"`
}

// SendInput is one outbound message over the selected interface.
type SendInput struct {
	Interface Interface       `json:"interface"`
	Message   OutboundMessage `json:"message"`
	// CredentialRef names a credential of the worker's store to use for
	// this call (an answer to AUTH_REQUIRED); the secret never enters
	// history.
	CredentialRef string `json:"credential_ref,omitempty"`
	// Limits bound what the reply may put into history.
	Limits Limits `json:"limits"`
	// Timeout bounds the send (the contract's send_timeout; 0: the
	// worker's, else DefaultSendTimeout), and never past Deadline (the
	// contract's, when set).
	Timeout  time.Duration `json:"timeout,omitempty"`
	Deadline time.Time     `json:"deadline,omitempty"`
	// Stream sends by SendStreamingMessage (A2A 1.0 §3.1.2) and takes the
	// first event as the send's reply: set by CheckAndSend for a first
	// message to an agent whose card declares streaming.
	Stream bool `json:"stream,omitempty"`
}

// CheckAndSendInput is one send with the checks that come before it.
type CheckAndSendInput struct {
	Card ResolveCardInput `json:"card"`
	// InUse is the card the delegation uses; nil for the first send.
	InUse *CardInUse `json:"in_use,omitempty"`
	// AcceptChange sends on a card that changed in a way that matters,
	// if it is usable (an operator sent rediscover).
	AcceptChange bool `json:"accept_change,omitempty"`
	// Authorization is checked before the send; its AgentOrigin is the
	// origin of the card used.
	Authorization AuthorizationInput `json:"authorization"`
	// Send is the message; its Interface is the card's selected one.
	Send SendInput `json:"send"`
}

// CheckAndSendResult says what was checked and whether the message went.
type CheckAndSendResult struct {
	// Card is the card as resolved now.
	Card ResolvedCard `json:"card"`
	// Change is CardInUse.WhatChanged against InUse ("" for the first
	// send).
	Change string `json:"change,omitempty"`
	// Refused says why nothing was sent because of the card (the first
	// send: untrusted, no skill, no interface, input modes; a follow-up:
	// a change that matters, not accepted).
	Refused string `json:"refused,omitempty"`
	// Authorization is the decision, nil when the card was refused first.
	Authorization *AuthorizationDecision `json:"authorization,omitempty"`
	// Sent is true when SendMessage answered; Snapshot is its task.
	Sent     bool         `json:"sent"`
	Snapshot TaskSnapshot `json:"snapshot"`
}

// WatchInput names the task to watch (WatchTask, PollTask) and the state
// last observed.
type WatchInput struct {
	Interface Interface `json:"interface"`
	TaskID    string    `json:"task_id"`
	// ContextID is the tracked contextId (empty: not checked).
	ContextID string `json:"context_id,omitempty"`
	// Since is the last state the workflow recorded; WatchTask returns only
	// when the remote state differs from it, or (SinceKey set) when the task
	// waits for input with a status other than SinceKey: a new question.
	Since    TaskState `json:"since"`
	SinceKey string    `json:"since_key,omitempty"`
	// Within, when set, bounds the watch to that many seconds: the task is
	// then returned as it is, changed or not.
	Within int `json:"within,omitempty"`

	// Stream follows SubscribeToTask (the card declares streaming).
	Stream bool `json:"stream,omitempty"`
	// ReadFirst makes PollTask's first attempt read the task (the
	// workflow has waited an interval already); otherwise the first
	// attempt reads nothing.
	ReadFirst bool `json:"read_first,omitempty"`
	// Limits bound what the result may put into history.
	Limits Limits `json:"limits"`
}

// GetTaskInput names a task to read once.
type GetTaskInput struct {
	Interface Interface `json:"interface"`
	TaskID    string    `json:"task_id"`
	ContextID string    `json:"context_id,omitempty"`
	Limits    Limits    `json:"limits"`
}

// FindTaskInput names the message whose task FindTask looks for: its
// messageId, sent over Interface no earlier than Since.
type FindTaskInput struct {
	// Interface is the interface the message went to; when its URL is
	// empty (the send was abandoned before it said), Card is resolved
	// for it.
	Interface     Interface        `json:"interface"`
	Card          ResolveCardInput `json:"card"`
	MessageID     string           `json:"message_id"`
	Since         time.Time        `json:"since"`
	CredentialRef string           `json:"credential_ref,omitempty"`
	Limits        Limits           `json:"limits"`
}

// FindTaskResult is what FindTask found: the task (Found), or that the agent
// serves no ListTasks (NotOffered), or why it could not look (Error).
type FindTaskResult struct {
	// Card is the card FindTask resolved, when the input named no
	// interface (the delegation then adopts it, as after a send).
	Card       *ResolvedCard `json:"card,omitempty"`
	Found      bool          `json:"found,omitempty"`
	Snapshot   TaskSnapshot  `json:"snapshot,omitempty"`
	NotOffered bool          `json:"not_offered,omitempty"`
	Error      string        `json:"error,omitempty"`
}

// CheckCredentialInput names a credential_ref and the interface it would
// be sent to (its origin is what the ref must be bound to).
type CheckCredentialInput struct {
	Ref       string    `json:"ref"`
	Interface Interface `json:"interface"`
}

// CheckCredentialResult is "" when the ref may be used, else why not
// (never a secret).
type CheckCredentialResult struct {
	Refused string `json:"refused,omitempty"`
}

// CancelInput names the task to cancel.
type CancelInput struct {
	Interface Interface `json:"interface"`
	TaskID    string    `json:"task_id"`
	ContextID string    `json:"context_id,omitempty"`
}
