package a2aclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// Remote task states in the short form used in local state, search
// attributes and the CLI (A2A 1.0 §4.1.3 TaskState, lower-case, kebab).
const (
	StateSubmitted     = "submitted"
	StateWorking       = "working"
	StateInputRequired = "input-required"
	StateAuthRequired  = "auth-required"
	StateCompleted     = "completed"
	StateFailed        = "failed"
	StateRejected      = "rejected"
	StateCanceled      = "canceled"
	StateUnknown       = "unknown"
	// StateMessage is not a TaskState: the agent answered with a Message
	// and created no Task (A2A 1.0 §3.1.1).
	StateMessage = "message"
)

// Terminal reports whether a short state is terminal (A2A 1.0 §4.1.3).
func Terminal(state string) bool {
	switch state {
	case StateCompleted, StateFailed, StateRejected, StateCanceled:
		return true
	}
	return false
}

// Interrupted reports whether the remote task waits for the client.
func Interrupted(state string) bool {
	return state == StateInputRequired || state == StateAuthRequired
}

// ShortState maps a TaskState to its short form. It reads the 1.0 enum
// (A2A 1.0 §4.1.3, "TASK_STATE_COMPLETED") and the 0.3 spelling (A2A 0.3
// §6.3, "completed", "input-required") on either version, in any case, and
// "cancelled"; anything else is StateUnknown.
func ShortState(s a2a.TaskState) string { return shortOf(string(s)) }

// Snapshot is what the client observed of a remote Task at one moment: its
// ids, state, the status message (untrusted remote text, stored, never
// obeyed) and its artifacts.
type Snapshot struct {
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id"`
	State     string `json:"state"`
	// RawState is the TaskState as received, kept when State is "unknown".
	RawState string `json:"raw_state,omitempty"`
	// StatusText and StatusData are the text and data parts of the status
	// message.
	StatusText string               `json:"status_text,omitempty"`
	StatusData json.RawMessage      `json:"status_data,omitempty"`
	Artifacts  []contracts.Artifact `json:"artifacts,omitempty"`
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
}

// SameStatus reports whether two snapshots show the same status of the
// same task: the same state and the same status identity. A task
// republished as it stood (a2a-js publishes the task before it handles a
// follow-up) shows the same status as before.
func SameStatus(a, b Snapshot) bool {
	return a.TaskID == b.TaskID && a.State == b.State && a.StatusKey != "" && a.StatusKey == b.StatusKey
}

// WeakStatusKey reports whether a status key is only a hash of what the
// status says (no message id, no timestamp): the same question asked
// twice has the same weak key.
func WeakStatusKey(key string) bool { return strings.HasPrefix(key, "sha256:") }

// StatusKeyOf is the identity of a task status: "msg:" and the status
// message's messageId when it has one, else "ts:" and the status timestamp,
// else "sha256:" of the state, the status text and data as received.
func StatusKeyOf(state, messageID, timestamp, text string, data []byte) string {
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

// SnapshotOf converts an a2a-go Task.
func SnapshotOf(t *a2a.Task) Snapshot {
	s := Snapshot{TaskID: string(t.ID), ContextID: t.ContextID, State: ShortState(t.Status.State), RawState: string(t.Status.State)}
	if m := t.Status.Message; m != nil {
		s.StatusText = partsText(m.Parts)
		for _, p := range m.Parts {
			if p == nil {
				continue
			}
			if d, ok := p.Content.(a2a.Data); ok {
				if b, err := json.Marshal(d.Value); err == nil {
					s.StatusData = b
				}
				break
			}
		}
	}
	if m := t.Status.Message; m != nil {
		s.StatusMessageID = m.ID
	}
	if ts := t.Status.Timestamp; ts != nil {
		s.StatusTimestamp = ts.UTC().Format(time.RFC3339Nano)
	}
	s.StatusKey = StatusKeyOf(s.State, s.StatusMessageID, s.StatusTimestamp, s.StatusText, s.StatusData)
	for _, a := range t.Artifacts {
		if a == nil {
			continue
		}
		s.Artifacts = append(s.Artifacts, artifactOf(a))
	}
	return s
}

func artifactOf(a *a2a.Artifact) contracts.Artifact {
	out := contracts.Artifact{ArtifactID: string(a.ID), Name: a.Name, Metadata: a.Metadata, Parts: []contracts.Part{}}
	for _, p := range a.Parts {
		if p == nil {
			continue
		}
		cp := contracts.Part{MediaType: p.MediaType, Filename: p.Filename, Metadata: p.Metadata}
		switch c := p.Content.(type) {
		case a2a.Text:
			cp.Kind, cp.Text = contracts.PartText, string(c)
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				continue
			}
			cp.Kind, cp.Data = contracts.PartData, b
		case a2a.URL:
			cp.Kind, cp.URL = contracts.PartFile, string(c)
		case a2a.Raw:
			cp.Kind, cp.Raw = contracts.PartFile, []byte(c)
		default:
			continue
		}
		out.Parts = append(out.Parts, cp)
	}
	return out
}
