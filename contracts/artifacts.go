package contracts

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Artifact is a remote A2A Artifact (A2A 1.0 §4.1.7) as recorded in local
// state, before it is validated. It is untrusted data.
type Artifact struct {
	ArtifactID string `json:"artifact_id"`
	Name       string `json:"name"`
	Parts      []Part `json:"parts"`
}

// Part is one recorded A2A Part (A2A 1.0 §4.1.6). Kind is "text", "data",
// "file" (url or raw bytes); exactly one of Text, Data, URL is set.
type Part struct {
	Kind      string          `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
}

// Part kinds.
const (
	PartText = "text"
	PartData = "data"
	PartFile = "file"
)

// Rejection reasons (prefixes of RejectedArtifact.Reason).
const (
	ReasonKindNotAllowed = "kind_not_allowed"
	ReasonNoContent      = "no_content"
	ReasonMultipleData   = "multiple_data_parts"
	ReasonMissingID      = "missing_artifact_id"
)

// ValidateArtifacts turns the artifacts of a completed remote Task into
// outputs and rejections under the contract d. An artifact's kind is its
// name; a kind not in allowed_outputs is rejected. Every artifact ends in
// exactly one of the two lists, in the order received.
func ValidateArtifacts(d Delegation, artifacts []Artifact) (outputs []Output, rejected []RejectedArtifact) {
	outputs, rejected = []Output{}, []RejectedArtifact{}
	for _, a := range artifacts {
		out, reason := validateArtifact(d, a)
		if reason != "" {
			rejected = append(rejected, RejectedArtifact{ArtifactID: a.ArtifactID, Reason: reason})
			continue
		}
		outputs = append(outputs, out)
	}
	return outputs, rejected
}

func validateArtifact(d Delegation, a Artifact) (Output, string) {
	if a.ArtifactID == "" {
		return Output{}, ReasonMissingID + ": the artifact has no artifactId"
	}
	if !d.Allows(a.Name) {
		return Output{}, fmt.Sprintf("%s: kind %q is not in allowed_outputs %v", ReasonKindNotAllowed, a.Name, d.AllowedOutputs)
	}
	out := Output{Kind: a.Name, ArtifactID: a.ArtifactID}
	var texts []string
	for _, p := range a.Parts {
		switch p.Kind {
		case PartText:
			texts = append(texts, p.Text)
		case PartData:
			if out.Data != nil {
				return Output{}, ReasonMultipleData + ": an output carries at most one data part"
			}
			out.Data = p.Data
		}
	}
	out.Text = strings.Join(texts, "\n")
	if out.Data == nil && out.Text == "" {
		return Output{}, ReasonNoContent + ": the artifact has no text or data part"
	}
	return out, ""
}
