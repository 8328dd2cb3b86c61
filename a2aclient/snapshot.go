package a2aclient

import (
	"encoding/json"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// ShortState maps a TaskState to its short form (contracts.ParseTaskState:
// the 1.0 enum and the 0.3 spelling, in any case, and "cancelled").
func ShortState(s a2a.TaskState) contracts.TaskState { return contracts.ParseTaskState(string(s)) }

// SnapshotOf converts an a2a-go Task.
func SnapshotOf(t *a2a.Task) contracts.TaskSnapshot {
	s := contracts.TaskSnapshot{TaskID: string(t.ID), ContextID: t.ContextID, State: ShortState(t.Status.State), RawState: string(t.Status.State)}
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
	s.StatusKey = contracts.StatusKeyOf(s.State, s.StatusMessageID, s.StatusTimestamp, s.StatusText, s.StatusData)
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
