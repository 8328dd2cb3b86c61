package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"mime"
	"slices"
	"strings"
)

// Artifact is a remote A2A Artifact (A2A 1.0 §4.1.7) as recorded in local
// state, before it is validated. It is untrusted data.
type Artifact struct {
	ArtifactID string         `json:"artifact_id"`
	Name       string         `json:"name"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Parts      []Part         `json:"parts"`
	// Withheld is set (with the rejection reason) when the worker did not
	// keep the content because it broke a limit (see ApplyLimits); Size and
	// SHA256 then describe what was received.
	Withheld string `json:"withheld,omitempty"`
	Size     int    `json:"size,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
}

// Part is one recorded A2A Part (A2A 1.0 §4.1.6). Kind is "text", "data" or
// "file"; a file is a URL (recorded, never fetched) or inline Raw bytes.
type Part struct {
	Kind      string          `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// Part kinds.
const (
	PartText = "text"
	PartData = "data"
	PartFile = "file"
)

// MediaTypeOf is the media type a part is judged by: its own mediaType, or
// text/plain for text, application/json for data, application/octet-stream
// for a file without one. Parameters are dropped and case is folded.
func (p Part) MediaTypeOf() string {
	mt := p.MediaType
	if mt == "" {
		switch p.Kind {
		case PartText:
			mt = "text/plain"
		case PartData:
			mt = "application/json"
		default:
			mt = "application/octet-stream"
		}
	}
	if parsed, _, err := mime.ParseMediaType(mt); err == nil {
		return parsed
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// size is the number of content bytes the part carries.
func (p Part) size() int { return len(p.Text) + len(p.Data) + len(p.Raw) + len(p.URL) }

// Rejection reasons: the first word of RejectedArtifact.Reason.
const (
	ReasonKindNotAllowed      = "kind_not_allowed"
	ReasonKindConflict        = "kind_conflict"
	ReasonNoContent           = "no_content"
	ReasonMultipleData        = "multiple_data_parts"
	ReasonMissingID           = "missing_artifact_id"
	ReasonMediaTypeNotAllowed = "media_type_not_allowed"
	ReasonSchemaViolation     = "schema_violation"
	ReasonResourceOutOfScope  = "resource_out_of_scope"
	ReasonClaimsAuthority     = "claims_authority"
	ReasonTooManyArtifacts    = "too_many_artifacts"
	ReasonTooLarge            = "too_large"
	ReasonTotalTooLarge       = "total_too_large"
	ReasonTooDeep             = "too_deep"
	// ReasonDuplicateID: two artifacts of one task share an artifactId
	// (A2A 1.0 §4.1.7: the id is unique within a task); neither is used.
	ReasonDuplicateID = "duplicate_artifact_id"
	// ReasonOrphanChunk: a streamed chunk appends to an artifact that was
	// never started (A2A 1.0 §4.2.2).
	ReasonOrphanChunk = "orphan_chunk"
)

// AuthorityKeys are metadata keys by which remote content would claim
// approval or authority; an artifact carrying one (on itself or a part,
// any case) is rejected: a remote message cannot widen the delegation.
var AuthorityKeys = []string{"approved", "authorized", "authorization", "authority", "write_authority", "scope", "permissions"}

// OutputKindKey is the artifact metadata key that names its kind when
// present (it must then agree with the artifact's name, if any).
const OutputKindKey = "output_kind"

// Validator validates artifacts against one contract. Build it once per
// contract with NewValidator.
type Validator struct {
	d       Delegation
	limits  Limits
	modes   []string
	schemas map[string]*compiledSchema
}

// NewValidator compiles the contract's output schemas. It fails only for a
// contract that does not validate (see Delegation.Validate).
func NewValidator(d Delegation) (*Validator, error) {
	v := &Validator{d: d, limits: d.EffectiveLimits(), modes: d.EffectiveOutputModes(), schemas: map[string]*compiledSchema{}}
	for kind, raw := range d.OutputSchemas {
		cs, err := compileSchema(raw, d.ResourceScope)
		if err != nil {
			return nil, &FieldError{Field: "output_schemas." + kind, Rule: err.Error()}
		}
		v.schemas[kind] = cs
	}
	return v, nil
}

// ValidateArtifacts turns the artifacts of a completed remote Task into
// outputs and rejections under the contract d (see Validator.Validate).
func ValidateArtifacts(d Delegation, artifacts []Artifact) (outputs []Output, rejected []RejectedArtifact) {
	v, err := NewValidator(d)
	if err != nil {
		outputs, rejected = []Output{}, []RejectedArtifact{}
		for _, a := range artifacts {
			rejected = append(rejected, RejectedArtifact{ArtifactID: a.ArtifactID, Reason: "invalid_contract: " + err.Error()})
		}
		return outputs, rejected
	}
	return v.Validate(artifacts)
}

// Validate checks every artifact, in the order received, against the
// contract: limits (count, bytes, total bytes, JSON depth), kind (name or
// metadata.output_kind) in allowed_outputs, no authority claims in
// metadata, every part's media type in output_modes, at most one data
// part, an artifactId used once in the task, and the data part against output_schemas[kind] (JSON Schema
// 2020-12) including resource_scope for strings marked "x-resource-ref".
// Every artifact ends in exactly one of the two lists.
func (v *Validator) Validate(artifacts []Artifact) (outputs []Output, rejected []RejectedArtifact) {
	outputs, rejected = []Output{}, []RejectedArtifact{}
	total := 0
	ids := map[string]int{}
	for _, a := range artifacts {
		if a.ArtifactID != "" {
			ids[a.ArtifactID]++
		}
	}
	for i, a := range artifacts {
		reason := ""
		switch {
		case ids[a.ArtifactID] > 1:
			reason = fmt.Sprintf("%s: artifactId %q appears %d times in the task", ReasonDuplicateID, CutText(a.ArtifactID, 256), ids[a.ArtifactID])
		case a.Withheld != "":
			reason = a.Withheld
		case i >= v.limits.MaxArtifacts:
			reason = fmt.Sprintf("%s: more than %d artifacts", ReasonTooManyArtifacts, v.limits.MaxArtifacts)
		}
		size := artifactSize(a)
		if reason == "" && size > v.limits.MaxArtifactBytes {
			reason = fmt.Sprintf("%s: %d bytes > %d", ReasonTooLarge, size, v.limits.MaxArtifactBytes)
		}
		if reason == "" && total+size > v.limits.MaxTotalBytes {
			reason = fmt.Sprintf("%s: the artifacts exceed %d bytes in total", ReasonTotalTooLarge, v.limits.MaxTotalBytes)
		}
		var out Output
		if reason == "" {
			out, reason = v.validateOne(a)
		}
		if reason != "" {
			rejected = append(rejected, RejectedArtifact{ArtifactID: a.ArtifactID, Reason: reason})
			continue
		}
		total += size
		outputs = append(outputs, out)
	}
	return outputs, rejected
}

func artifactSize(a Artifact) int {
	if a.Withheld != "" {
		return a.Size
	}
	n := 0
	for _, p := range a.Parts {
		n += p.size()
	}
	return n
}

// KindOf returns an artifact's kind: metadata.output_kind when present,
// else its name. ok is false when both are present and differ, or the
// metadata value is not a string.
func KindOf(a Artifact) (kind string, ok bool) {
	mk, has := a.Metadata[OutputKindKey]
	if !has {
		return a.Name, true
	}
	s, isStr := mk.(string)
	if !isStr || (a.Name != "" && a.Name != s) {
		return "", false
	}
	return s, true
}

func (v *Validator) validateOne(a Artifact) (Output, string) {
	if a.ArtifactID == "" {
		return Output{}, ReasonMissingID + ": the artifact has no artifactId"
	}
	kind, ok := KindOf(a)
	if !ok {
		return Output{}, fmt.Sprintf("%s: name %q and metadata.%s %v differ", ReasonKindConflict, a.Name, OutputKindKey, a.Metadata[OutputKindKey])
	}
	if !v.d.Allows(kind) {
		return Output{}, fmt.Sprintf("%s: kind %q is not in allowed_outputs %v", ReasonKindNotAllowed, kind, v.d.AllowedOutputs)
	}
	if key := authorityKey(a.Metadata); key != "" {
		return Output{}, fmt.Sprintf("%s: artifact metadata key %q claims approval or authority; outputs are proposals only", ReasonClaimsAuthority, key)
	}
	out := Output{Kind: kind, ArtifactID: a.ArtifactID, Authority: WriteAuthorityNone}
	var texts []string
	for i, p := range a.Parts {
		if key := authorityKey(p.Metadata); key != "" {
			return Output{}, fmt.Sprintf("%s: part %d metadata key %q claims approval or authority", ReasonClaimsAuthority, i, key)
		}
		if mt := p.MediaTypeOf(); !slices.Contains(v.modes, mt) {
			return Output{}, fmt.Sprintf("%s: part %d is %s, output_modes allow %v", ReasonMediaTypeNotAllowed, i, mt, v.modes)
		}
		switch p.Kind {
		case PartText:
			texts = append(texts, p.Text)
		case PartData:
			if out.Data != nil {
				return Output{}, ReasonMultipleData + ": an output carries at most one data part"
			}
			if d := jsonDepth(p.Data); d > v.limits.MaxJSONDepth {
				return Output{}, fmt.Sprintf("%s: JSON nesting depth %d > %d", ReasonTooDeep, d, v.limits.MaxJSONDepth)
			}
			out.Data = p.Data
		case PartFile:
			f := FileRef{URL: p.URL, MediaType: p.MediaTypeOf(), Filename: p.Filename}
			if len(p.Raw) > 0 {
				sum := sha256.Sum256(p.Raw)
				f.Size, f.SHA256 = len(p.Raw), hex.EncodeToString(sum[:])
			}
			out.Files = append(out.Files, f)
		default:
			return Output{}, fmt.Sprintf("%s: part %d has unknown kind %q", ReasonNoContent, i, p.Kind)
		}
	}
	// Text parts are joined exactly as sent: a text streamed in chunks
	// reads as the agent wrote it.
	out.Text = strings.Join(texts, "")
	if out.Data == nil && out.Text == "" && len(out.Files) == 0 {
		return Output{}, ReasonNoContent + ": the artifact has no text, data or file part"
	}
	if cs := v.schemas[kind]; cs != nil {
		if out.Data == nil {
			return Output{}, fmt.Sprintf("%s: output_schemas.%s needs a data part", ReasonSchemaViolation, kind)
		}
		if reason := cs.validate(out.Data); reason != "" {
			return Output{}, reason
		}
	}
	return out, ""
}

func authorityKey(md map[string]any) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(AuthorityKeys, strings.ToLower(k)) {
			return k
		}
	}
	return ""
}

// jsonDepth returns the nesting depth of a JSON document (a scalar is 0,
// {} and [] are 1), without decoding it.
func jsonDepth(b []byte) int {
	depth, maxDepth, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			maxDepth = max(maxDepth, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return maxDepth
}

// CutText keeps at most n bytes of remote text (on a rune boundary); a
// longer text is cut and ends with a marker that gives its full length and
// sha256, so that what was dropped can still be identified.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s…[cut: %d bytes, sha256:%s]", prefix(s, n), len(s), hex.EncodeToString(sum[:]))
}

// ApplyLimits is applied by the worker to what the remote agent returned,
// before it enters workflow history: artifacts beyond the count limit, and
// artifacts larger than the byte limit or nested deeper than the depth
// limit, keep only their id and name (cut to MaxWithheldIDChars), size and
// sha256 and are marked Withheld with the rejection reason. Of the
// artifacts beyond the count limit, the first MaxArtifacts are listed so;
// the rest become one entry (WithheldRest) with their number, total size
// and one sha256, so that what is kept grows with the limits, never with
// what the agent sent. The workflow then rejects withheld artifacts with
// that reason. (Remote status text is cut separately with CutText.)
func ApplyLimits(arts []Artifact, l Limits) []Artifact {
	l = l.WithDefaults()
	out := make([]Artifact, 0, min(len(arts), 2*l.MaxArtifacts+1))
	var rest []Artifact
	for i, a := range arts {
		if i >= 2*l.MaxArtifacts {
			rest = arts[i:]
			break
		}
		size := artifactSize(a)
		reason := ""
		switch {
		case i >= l.MaxArtifacts:
			reason = fmt.Sprintf("%s: more than %d artifacts", ReasonTooManyArtifacts, l.MaxArtifacts)
		case size > l.MaxArtifactBytes:
			reason = fmt.Sprintf("%s: %d bytes > %d", ReasonTooLarge, size, l.MaxArtifactBytes)
		default:
			for _, p := range a.Parts {
				if d := jsonDepth(p.Data); d > l.MaxJSONDepth {
					reason = fmt.Sprintf("%s: JSON nesting depth %d > %d", ReasonTooDeep, d, l.MaxJSONDepth)
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
		out = append(out, WithheldRest(rest, fmt.Sprintf("%s: more than %d artifacts", ReasonTooManyArtifacts, l.MaxArtifacts)))
	}
	return out
}

// MaxWithheldIDChars bounds the id and name a withheld artifact keeps.
const MaxWithheldIDChars = 256

// Withhold is a's withheld form: its id and name (cut), size (bytes of its
// parts, as counted by the limits) and the sha256 of its parts' content,
// marked with reason.
func Withhold(a Artifact, reason string, size int) Artifact {
	return Artifact{ArtifactID: CutText(a.ArtifactID, MaxWithheldIDChars), Name: CutText(a.Name, MaxWithheldIDChars), Parts: []Part{},
		Withheld: reason, Size: size, SHA256: hex.EncodeToString(partsHash(sha256.New(), a).Sum(nil))}
}

// WithheldRest is one withheld entry standing for arts, none of them
// listed: no id, their number in the reason, their total size, and one
// sha256 over their ids and parts in order.
func WithheldRest(arts []Artifact, reason string) Artifact {
	h := sha256.New()
	size := 0
	for _, a := range arts {
		h.Write([]byte(a.ArtifactID))
		h.Write([]byte{0})
		partsHash(h, a)
		size += artifactSize(a)
	}
	return Artifact{Parts: []Part{}, Withheld: fmt.Sprintf("%s (%d more artifacts, not listed)", reason, len(arts)),
		Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}
}

func partsHash(h hash.Hash, a Artifact) hash.Hash {
	for _, p := range a.Parts {
		h.Write([]byte(p.Text))
		h.Write(p.Data)
		h.Write(p.Raw)
		h.Write([]byte(p.URL))
	}
	return h
}

// FileRef is a file part of an output: a URL (never fetched) or inline
// bytes counted by Size and identified by SHA256.
type FileRef struct {
	URL       string `json:"url,omitempty"`
	MediaType string `json:"media_type"`
	Filename  string `json:"filename,omitempty"`
	Size      int    `json:"size,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
}

// ArtifactChunk is one streamed TaskArtifactUpdateEvent (A2A 1.0 §4.2.2):
// an artifact, or a part of one when Append is set.
type ArtifactChunk struct {
	Artifact  Artifact
	Append    bool
	LastChunk bool
}

// Assembly builds a task's artifacts from streamed chunks, per
// artifactId: a chunk without Append starts (or replaces) the artifact; a
// chunk with Append adds its parts, in order, to the one started; an
// append for an artifact never started is rejected with ReasonOrphanChunk.
// With MaxArtifactBytes set, an artifact whose parts grow past it is
// withheld there and then (ReasonTooLarge): its content is no longer kept,
// only its size and a running sha256, so that an agent streaming without
// end holds no more than that per artifact in the worker's memory. The
// zero value is ready to use (and keeps everything).
type Assembly struct {
	// MaxArtifactBytes bounds what is kept per artifact, MaxTotalBytes
	// over all of them (0: no bound); past either, an artifact is withheld.
	MaxArtifactBytes int
	MaxTotalBytes    int
	kept             int
	arts             []Artifact
	index            map[string]int
	complete         map[string]bool
	sums             map[string]hash.Hash
	sizes            map[string]int
	Rejected         []RejectedArtifact
}

// Add takes one chunk.
func (as *Assembly) Add(c ArtifactChunk) {
	if as.index == nil {
		as.index, as.complete, as.sums, as.sizes = map[string]int{}, map[string]bool{}, map[string]hash.Hash{}, map[string]int{}
	}
	id := c.Artifact.ArtifactID
	key := assemblyKey(id)
	i, known := as.index[key]
	switch {
	case c.Append && !known:
		as.Rejected = append(as.Rejected, RejectedArtifact{ArtifactID: CutText(id, MaxWithheldIDChars),
			Reason: fmt.Sprintf("%s: a chunk appends to artifact %q, which was never started", ReasonOrphanChunk, CutText(id, 256))})
		return
	case c.Append && as.sums[key] != nil:
		// Withheld already: counted, not kept.
		partsHash(as.sums[key], c.Artifact)
		as.arts[i].Size += artifactSize(Artifact{Parts: c.Artifact.Parts})
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
		reason = fmt.Sprintf("%s: more than %d bytes streamed (id, name, metadata and parts)", ReasonTooLarge, as.MaxArtifactBytes)
	case as.MaxTotalBytes > 0 && as.kept > as.MaxTotalBytes:
		reason = fmt.Sprintf("%s: the streamed artifacts pass %d bytes", ReasonTotalTooLarge, as.MaxTotalBytes)
	}
	if reason != "" {
		as.sums[key] = partsHash(sha256.New(), a)
		as.kept -= as.sizes[key]
		as.sizes[key] = 0
		as.arts[i] = Artifact{ArtifactID: CutText(id, MaxWithheldIDChars), Name: CutText(a.Name, MaxWithheldIDChars), Parts: []Part{},
			Withheld: reason, Size: artifactSize(a)}
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
// (a Part value, its slice slot, its strings' headers).
const partCost = 160

// keptCost is what keeping v (an Artifact or its parts) costs: its encoded
// bytes, and partCost for each part.
func keptCost(v any) int {
	n := encodedLen(v)
	switch x := v.(type) {
	case Artifact:
		n += partCost * len(x.Parts)
	case []Part:
		n += partCost * len(x)
	}
	return n
}

func encodedLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// Artifacts returns the assembled artifacts in the order they were started.
func (as *Assembly) Artifacts() []Artifact {
	out := slices.Clone(as.arts)
	for id, h := range as.sums {
		out[as.index[id]].SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// Complete reports whether the artifact's last chunk was seen.
func (as *Assembly) Complete(id string) bool { return as.complete[assemblyKey(id)] }
