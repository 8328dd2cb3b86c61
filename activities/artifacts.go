package activities

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
)

// What the worker does to the artifacts an agent returns before they
// become an activity result, that is workflow history: the limits of the
// contract applied (ApplyLimits, Withhold, WithheldRest), and streamed
// chunks assembled (Assembly). The workflow never runs this code; it
// validates what arrives (contracts.ValidateArtifacts) and rejects a
// withheld artifact with the reason recorded here.

// ApplyLimits is applied by the worker to what the remote agent returned,
// before it enters workflow history: artifacts beyond the count limit, and
// artifacts larger than the byte limit or nested deeper than the depth
// limit, keep only their id and name (cut to MaxWithheldIDChars), size and
// sha256 and are marked Withheld with the rejection reason. Of the
// artifacts beyond the count limit, the first MaxArtifacts are listed so;
// the rest become one entry (WithheldRest) with their number, total size
// and one sha256, so that what is kept grows with the limits, never with
// what the agent sent. The workflow then rejects withheld artifacts with
// that reason. (Remote status text is cut separately with contracts.CutText.)
func ApplyLimits(arts []contracts.Artifact, l contracts.Limits) []contracts.Artifact {
	l = l.WithDefaults()
	out := make([]contracts.Artifact, 0, min(len(arts), 2*l.MaxArtifacts+1))
	var rest []contracts.Artifact
	for i, a := range arts {
		if i >= 2*l.MaxArtifacts {
			rest = arts[i:]
			break
		}
		size := contracts.ArtifactSize(a)
		reason := ""
		switch {
		case i >= l.MaxArtifacts:
			reason = fmt.Sprintf("%s: more than %d artifacts", contracts.ReasonTooManyArtifacts, l.MaxArtifacts)
		case size > l.MaxArtifactBytes:
			reason = fmt.Sprintf("%s: %d bytes > %d", contracts.ReasonTooLarge, size, l.MaxArtifactBytes)
		default:
			for _, p := range a.Parts {
				if d := contracts.JSONDepth(p.Data); d > l.MaxJSONDepth {
					reason = fmt.Sprintf("%s: JSON nesting depth %d > %d", contracts.ReasonTooDeep, d, l.MaxJSONDepth)
					break
				}
			}
		}
		if reason != "" {
			out = append(out, Withhold(a, reason, size))
			continue
		}
		out = append(out, a)
	}
	if len(rest) > 0 {
		out = append(out, WithheldRest(rest, fmt.Sprintf("%s: more than %d artifacts", contracts.ReasonTooManyArtifacts, l.MaxArtifacts)))
	}
	return out
}

// MaxWithheldIDChars bounds the id and name a withheld artifact keeps.
const MaxWithheldIDChars = 256

// Withhold is a's withheld form: its id and name (cut), size (bytes of its
// parts, as counted by the limits) and the sha256 of its parts' content,
// marked with reason.
func Withhold(a contracts.Artifact, reason string, size int) contracts.Artifact {
	return contracts.Artifact{ArtifactID: contracts.CutText(a.ArtifactID, MaxWithheldIDChars), Name: contracts.CutText(a.Name, MaxWithheldIDChars), Parts: []contracts.Part{},
		Withheld: reason, Size: size, SHA256: hex.EncodeToString(partsHash(sha256.New(), a).Sum(nil))}
}

// WithheldRest is one withheld entry standing for arts, none of them
// listed: no id, their number in the reason, their total size, and one
// sha256 over their ids and parts in order.
func WithheldRest(arts []contracts.Artifact, reason string) contracts.Artifact {
	h := sha256.New()
	size := 0
	for _, a := range arts {
		h.Write([]byte(a.ArtifactID))
		h.Write([]byte{0})
		partsHash(h, a)
		size += contracts.ArtifactSize(a)
	}
	return contracts.Artifact{Parts: []contracts.Part{}, Withheld: fmt.Sprintf("%s (%d more artifacts, not listed)", reason, len(arts)),
		Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}
}

func partsHash(h hash.Hash, a contracts.Artifact) hash.Hash {
	for _, p := range a.Parts {
		h.Write([]byte(p.Text))
		h.Write(p.Data)
		h.Write(p.Raw)
		h.Write([]byte(p.URL))
	}
	return h
}

// Assembly builds a task's artifacts from streamed chunks, per
// artifactId: a chunk without Append starts (or replaces) the artifact; a
// chunk with Append adds its parts, in order, to the one started; an
// append for an artifact never started is rejected with contracts.ReasonOrphanChunk.
// With MaxArtifactBytes set, an artifact whose parts grow past it is
// withheld there and then (contracts.ReasonTooLarge): its content is no longer kept,
// only its size and a running sha256, so that an agent streaming without
// end holds no more than that per artifact in the worker's memory. The
// zero value is ready to use (and keeps everything).
type Assembly struct {
	// MaxArtifactBytes bounds what is kept per artifact, MaxTotalBytes
	// over all of them (0: no bound); past either, an artifact is withheld.
	MaxArtifactBytes int
	MaxTotalBytes    int
	kept             int
	arts             []contracts.Artifact
	index            map[string]int
	complete         map[string]bool
	sums             map[string]hash.Hash
	sizes            map[string]int
	Rejected         []contracts.RejectedArtifact
}

// Add takes one chunk.
func (as *Assembly) Add(c a2aclient.ArtifactChunk) {
	if as.index == nil {
		as.index, as.complete, as.sums, as.sizes = map[string]int{}, map[string]bool{}, map[string]hash.Hash{}, map[string]int{}
	}
	id := c.Artifact.ArtifactID
	key := assemblyKey(id)
	i, known := as.index[key]
	switch {
	case c.Append && !known:
		as.Rejected = append(as.Rejected, contracts.RejectedArtifact{ArtifactID: contracts.CutText(id, MaxWithheldIDChars),
			Reason: fmt.Sprintf("%s: a chunk appends to artifact %q, which was never started", contracts.ReasonOrphanChunk, contracts.CutText(id, 256))})
		return
	case c.Append && as.sums[key] != nil:
		// Withheld already: counted, not kept.
		partsHash(as.sums[key], c.Artifact)
		as.arts[i].Size += contracts.ArtifactSize(contracts.Artifact{Parts: c.Artifact.Parts})
		return
	case c.Append:
		as.arts[i].Parts = append(as.arts[i].Parts, c.Artifact.Parts...)
		n := keptCost(c.Artifact.Parts)
		as.sizes[key] += n
		as.kept += n
	case known:
		as.kept -= as.sizes[key]
		as.arts[i] = c.Artifact
		as.sizes[key] = keptCost(c.Artifact)
		as.kept += as.sizes[key]
		delete(as.sums, key)
	default:
		i = len(as.arts)
		as.index[key] = i
		as.arts = append(as.arts, c.Artifact)
		as.sizes[key] = keptCost(c.Artifact)
		as.kept += as.sizes[key]
	}
	// Everything kept counts: the id, name and metadata as much as the
	// parts (an agent streamed new artifacts with 4 MiB ids: 1.8 GB), each
	// part at its cost in memory (15,000 empty parts per artifact: 4.3 GB),
	// per artifact and over the whole stream.
	a := as.arts[i]
	reason := ""
	switch {
	case as.MaxArtifactBytes > 0 && as.sizes[key] > as.MaxArtifactBytes:
		reason = fmt.Sprintf("%s: more than %d bytes streamed (id, name, metadata and parts)", contracts.ReasonTooLarge, as.MaxArtifactBytes)
	case as.MaxTotalBytes > 0 && as.kept > as.MaxTotalBytes:
		reason = fmt.Sprintf("%s: the streamed artifacts pass %d bytes", contracts.ReasonTotalTooLarge, as.MaxTotalBytes)
	}
	if reason != "" {
		as.sums[key] = partsHash(sha256.New(), a)
		as.kept -= as.sizes[key]
		as.sizes[key] = 0
		as.arts[i] = contracts.Artifact{ArtifactID: contracts.CutText(id, MaxWithheldIDChars), Name: contracts.CutText(a.Name, MaxWithheldIDChars), Parts: []contracts.Part{},
			Withheld: reason, Size: contracts.ArtifactSize(a)}
	}
	if c.LastChunk {
		as.complete[key] = true
	}
}

// assemblyKey is what an Assembly keeps of an artifact id to find it
// again: the id, or for a long one its sha256 (a map of 4 MiB ids is
// what the byte limit is there to prevent).
func assemblyKey(id string) string {
	if len(id) <= MaxWithheldIDChars {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// partCost is what a kept part costs in memory beyond its encoded bytes
// (a contracts.Part value, its slice slot, its strings' headers).
const partCost = 160

// keptCost is what keeping v (an contracts.Artifact or its parts) costs: its encoded
// bytes, and partCost for each part.
func keptCost(v any) int {
	n := encodedSize(v)
	switch x := v.(type) {
	case contracts.Artifact:
		n += partCost * len(x.Parts)
	case []contracts.Part:
		n += partCost * len(x)
	}
	return n
}

// Artifacts returns the assembled artifacts in the order they were started.
func (as *Assembly) Artifacts() []contracts.Artifact {
	out := slices.Clone(as.arts)
	for id, h := range as.sums {
		out[as.index[id]].SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// Complete reports whether the artifact's last chunk was seen.
func (as *Assembly) Complete(id string) bool { return as.complete[assemblyKey(id)] }
