package a2aclient

import (
	"encoding/json"

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

// ShortState maps an A2A 1.0 TaskState to its short form.
func ShortState(s a2a.TaskState) string {
	switch s {
	case a2a.TaskStateSubmitted:
		return StateSubmitted
	case a2a.TaskStateWorking:
		return StateWorking
	case a2a.TaskStateInputRequired:
		return StateInputRequired
	case a2a.TaskStateAuthRequired:
		return StateAuthRequired
	case a2a.TaskStateCompleted:
		return StateCompleted
	case a2a.TaskStateFailed:
		return StateFailed
	case a2a.TaskStateRejected:
		return StateRejected
	case a2a.TaskStateCanceled:
		return StateCanceled
	}
	return StateUnknown
}

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
