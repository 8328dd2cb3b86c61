package a2aclient

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// ShortState maps a TaskState to its short form (contracts.ParseTaskState:
// the 1.0 enum and the 0.3 spelling, in any case, and "cancelled").
func ShortState(s a2a.TaskState) contracts.TaskState { return contracts.ParseTaskState(string(s)) }

// SnapshotOf converts an a2a-go Task (its data and metadata as a2a-go
// decoded them; the client's own calls keep them exact, see exactValues).
func SnapshotOf(t *a2a.Task) contracts.TaskSnapshot { return snapshotOf(t, nil, "") }

// snapshotOf converts an a2a-go Task, giving back the exact text of every
// value x held; version is the interface's (0.3 unwraps a2a-go's
// data_part_compat form).
func snapshotOf(t *a2a.Task, x *exactValues, version string) contracts.TaskSnapshot {
	s := contracts.TaskSnapshot{TaskID: string(t.ID), ContextID: t.ContextID, State: ShortState(t.Status.State), RawState: string(t.Status.State)}
	if m := t.Status.Message; m != nil {
		s.StatusText = partsText(m.Parts)
		for _, p := range m.Parts {
			if p == nil {
				continue
			}
			if d, ok := p.Content.(a2a.Data); ok {
				raw, unknown, ok := x.resolve(d.Value)
				if !ok || unknown {
					continue
				}
				meta, _, _ := x.resolve(mapOrNil(p.Metadata))
				s.StatusData, _ = unwrapCompat(raw, meta, version)
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
		s.Artifacts = append(s.Artifacts, artifactOf(a, x, version))
	}
	s.Warnings = x.takeWarnings()
	return s
}

// mapOrNil makes a nil map a nil any (resolve then reports no value).
func mapOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// unwrapCompat undoes a2a-go's 0.3 compatibility form of a data part whose
// value is not an object ({"value": V} with metadata data_part_compat
// true, a2acompat/a2av0 FromV1Part), as a2a-go's own reader does; it
// returns the value and the metadata without the marker.
func unwrapCompat(data, meta json.RawMessage, version string) (json.RawMessage, json.RawMessage) {
	if !strings.HasPrefix(version, "0.") || len(meta) == 0 {
		return data, meta
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil || string(bytes.TrimSpace(m["data_part_compat"])) != "true" {
		return data, meta
	}
	var d map[string]json.RawMessage
	if json.Unmarshal(data, &d) != nil || d["value"] == nil {
		return data, meta
	}
	delete(m, "data_part_compat")
	var rest json.RawMessage
	if len(m) > 0 {
		rest, _ = json.Marshal(m)
	}
	return d["value"], rest
}

func artifactOf(a *a2a.Artifact, x *exactValues, version string) contracts.Artifact {
	meta, _, _ := x.resolve(mapOrNil(a.Metadata))
	out := contracts.Artifact{ArtifactID: string(a.ID), Name: a.Name, Metadata: meta, Parts: []contracts.Part{}}
	for _, p := range a.Parts {
		if p == nil {
			continue
		}
		pm, _, _ := x.resolve(mapOrNil(p.Metadata))
		cp := contracts.Part{MediaType: p.MediaType, Filename: p.Filename, Metadata: pm}
		switch c := p.Content.(type) {
		case a2a.Text:
			cp.Kind, cp.Text = contracts.PartText, string(c)
		case a2a.Data:
			raw, unknown, ok := x.resolve(c.Value)
			if !ok {
				continue
			}
			if unknown {
				// A part of no kind this client reads, kept whole: the
				// artifact is rejected for it (contracts: unknown kind).
				cp.Kind, cp.Data = contracts.PartUnknown, raw
				break
			}
			cp.Kind = contracts.PartData
			cp.Data, cp.Metadata = unwrapCompat(raw, pm, version)
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
