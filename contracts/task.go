package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// TaskState is a remote Task's state in the short form used in local
// state, search attributes and the CLI: A2A 1.0 §4.1.3 TaskState written
// lower case with hyphens ("input-required"), the way A2A 0.3 §6.3 spells
// it. Local phases have their own type, Phase.
type TaskState string

// The remote task states (A2A 1.0 §4.1.3), and two values that are not a
// TaskState but take its place in a TaskSnapshot.
const (
	TaskStateSubmitted     TaskState = "submitted"
	TaskStateWorking       TaskState = "working"
	TaskStateInputRequired TaskState = "input-required"
	TaskStateAuthRequired  TaskState = "auth-required"
	TaskStateCompleted     TaskState = "completed"
	TaskStateFailed        TaskState = "failed"
	TaskStateRejected      TaskState = "rejected"
	TaskStateCanceled      TaskState = "canceled"
	// TaskStateUnknown is a state that could not be read (the raw value is
	// kept in TaskSnapshot.RawState).
	TaskStateUnknown TaskState = "unknown"
	// TaskStateMessage: the agent answered with a Message and created no
	// Task (A2A 1.0 §3.1.1).
	TaskStateMessage TaskState = "message"
)

// TaskStates lists every TaskState value, in the order of A2A 1.0 §4.1.3,
// then "message" and "unknown".
var TaskStates = []TaskState{
	TaskStateSubmitted, TaskStateWorking, TaskStateInputRequired, TaskStateAuthRequired,
	TaskStateCompleted, TaskStateFailed, TaskStateRejected, TaskStateCanceled,
	TaskStateMessage, TaskStateUnknown,
}

// Terminal reports whether s is terminal: completed, failed, rejected or
// canceled (A2A 1.0 §4.1.3).
func (s TaskState) Terminal() bool {
	switch s {
	case TaskStateCompleted, TaskStateFailed, TaskStateRejected, TaskStateCanceled:
		return true
	}
	return false
}

// Interrupted reports whether the remote task waits for the client:
// input-required or auth-required (A2A 1.0 §4.1.3).
func (s TaskState) Interrupted() bool {
	return s == TaskStateInputRequired || s == TaskStateAuthRequired
}

// ParseTaskState reads a TaskState in any of the spellings peers send: the
// 1.0 enum ("TASK_STATE_INPUT_REQUIRED", A2A 1.0 §4.1.3), the 0.3 kebab
// case ("input-required", A2A 0.3 §6.3), with underscores, in any case,
// and "cancelled". Anything else is TaskStateUnknown.
func ParseTaskState(s string) TaskState {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.TrimPrefix(k, "task_state_")
	k = strings.ReplaceAll(k, "_", "-")
	switch st := TaskState(k); st {
	case TaskStateSubmitted, TaskStateWorking, TaskStateInputRequired, TaskStateAuthRequired,
		TaskStateCompleted, TaskStateFailed, TaskStateRejected, TaskStateCanceled:
		return st
	case "cancelled":
		return TaskStateCanceled
	}
	return TaskStateUnknown
}

// TaskSnapshot is what the client observed of a remote Task at one moment:
// its ids, state, the status message (untrusted remote text, stored, never
// obeyed) and its artifacts. It travels through history as an activity
// result and in State.LastSnapshot.
type TaskSnapshot struct {
	TaskID    string    `json:"task_id"`
	ContextID string    `json:"context_id"`
	State     TaskState `json:"state"`
	// RawState is the TaskState as received, kept when State is "unknown".
	RawState string `json:"raw_state,omitempty"`
	// StatusText and StatusData are the text and data parts of the status
	// message.
	StatusText string          `json:"status_text,omitempty"`
	StatusData json.RawMessage `json:"status_data,omitempty"`
	Artifacts  []Artifact      `json:"artifacts,omitempty"`
	// Reply is the text of a Message reply (State "message").
	Reply string `json:"reply,omitempty"`
	// Attempt is the activity attempt that got this snapshot (SendMessage:
	// 1 unless earlier attempts failed before sending).
	Attempt int `json:"attempt,omitempty"`
	// StatusMessageID and StatusTimestamp identify the status as the agent
	// sent it (TaskStatus.message.messageId and TaskStatus.timestamp, A2A
	// 1.0 §4.1.2); StatusKey is the identity the client compares (see
	// StatusKeyOf). They tell a question already answered from a new one.
	StatusMessageID string `json:"status_message_id,omitempty"`
	StatusTimestamp string `json:"status_timestamp,omitempty"`
	StatusKey       string `json:"status_key,omitempty"`
	// PushConfigured: the send also registered a push notification config
	// for the task (A2A 1.0 §3.1.8 CreateTaskPushNotificationConfig)
	// pointing at the worker's webhook.
	PushConfigured bool `json:"push_configured,omitempty"`
	// Warnings name the members of the reply this client does not need and
	// could not read, which it ignored (a status timestamp that is not RFC
	// 3339, metadata that is not an object, a part of no known kind);
	// untrusted remote text, at most 20 of 300 characters.
	Warnings []string `json:"warnings,omitempty"`
}

// SameStatus reports whether two snapshots show the same status of the
// same task: the same state and the same status identity. A task
// republished as it stood (a2a-js publishes the task before it handles a
// follow-up) shows the same status as before.
func SameStatus(a, b TaskSnapshot) bool {
	return a.TaskID == b.TaskID && a.State == b.State && a.StatusKey != "" && a.StatusKey == b.StatusKey
}

// WeakStatusKey reports whether a status key is only a hash of what the
// status says (no message id, no timestamp): the same question asked
// twice has the same weak key.
func WeakStatusKey(key string) bool { return strings.HasPrefix(key, "sha256:") }

// StatusKeyOf is the identity of a task status: "msg:" and the status
// message's messageId when it has one, else "ts:" and the status timestamp,
// else "sha256:" of the state, the status text and data as received.
func StatusKeyOf(state TaskState, messageID, timestamp, text string, data []byte) string {
	switch {
	case messageID != "":
		return "msg:" + messageID
	case timestamp != "":
		return "ts:" + timestamp
	}
	h := sha256.New()
	h.Write([]byte(state))
	h.Write([]byte{0})
	h.Write([]byte(text))
	h.Write([]byte{0})
	h.Write(data)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TaskUpdate is the payload of Signal "task-update": what a push
// notification said of the task (its id, state as sent, and the status
// timestamp), after the webhook authenticated it. Never trusted further:
// the workflow reads the task itself.
type TaskUpdate struct {
	TaskID    string `json:"task_id"`
	State     string `json:"state,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
}

// OutboundMessage is one outbound user Message (A2A 1.0 §4.1.4). TaskID
// and ContextID are empty for the first message of a delegation and set
// for follow-ups (A2A 1.0 §3.4.3).
type OutboundMessage struct {
	MessageID string          `json:"message_id"`
	TaskID    string          `json:"task_id,omitempty"`
	ContextID string          `json:"context_id,omitempty"`
	Text      string          `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}
