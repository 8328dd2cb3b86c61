package contracts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"slices"
	"strconv"
	"strings"
)

// Artifact is a remote A2A Artifact (A2A 1.0 §4.1.7) as recorded in local
// state, before it is validated. It is untrusted data.
type Artifact struct {
	ArtifactID string `json:"artifact_id"`
	Name       string `json:"name"`
	// Metadata is the artifact's metadata as the agent sent it (a JSON
	// object, its numbers and strings as written: never decoded through
	// float64).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Parts    []Part          `json:"parts"`
	// Withheld is set (with the rejection reason) when the worker did not
	// keep the content because it broke a limit (see activities.ApplyLimits); Size and
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
	// Metadata is the part's metadata as sent (see Artifact.Metadata).
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Part kinds.
const (
	PartText = "text"
	PartData = "data"
	PartFile = "file"
	// PartUnknown is a part of no kind A2A defines (A2A 1.0 §4.1.6), kept
	// whole in Data as the agent sent it; an artifact holding one is
	// rejected (no_content: unknown kind), never shortened.
	PartUnknown = "unknown"
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
	// ReasonNumberOutOfRange: a number of the data part no reader of
	// outputs can be expected to hold (an exponent past ±MaxNumberExponent,
	// or more than MaxNumberDigits characters), kept as sent, never an output.
	ReasonNumberOutOfRange = "number_out_of_range"
	// ReasonDuplicateKey: an object of the data part gives a key twice:
	// readers disagree on which value counts (encoding/json the last,
	// others the first or none), so the output checked is not surely the
	// one a backend reads.
	ReasonDuplicateKey = "duplicate_key"
)

// MaxNumberExponent and MaxNumberDigits bound a number of an output's
// data: far past any double (1e308) or decimal a backend uses, and small
// enough that checking it against a schema stays cheap (a JSON Schema
// validator builds the exact rational: 10^999999999 was a crash, and 25,000
// numbers of 1e999999 minutes of a workflow task).
const (
	MaxNumberExponent = 4096
	MaxNumberDigits   = 4096
)

// checkData returns the reason an output's data is refused before it is
// checked against a schema, or "": a number out of range, a key given twice.
func checkData(data json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		text := n.String()
		if len(text) > MaxNumberDigits {
			return fmt.Sprintf("%s: a number of %d characters (at most %d)", ReasonNumberOutOfRange, len(text), MaxNumberDigits)
		}
		if i := strings.IndexAny(text, "eE"); i >= 0 {
			e, err := strconv.Atoi(strings.TrimPrefix(text[i+1:], "+"))
			if err != nil || e > MaxNumberExponent || e < -MaxNumberExponent {
				return fmt.Sprintf("%s: %s has an exponent past ±%d", ReasonNumberOutOfRange, CutText(text, 64), MaxNumberExponent)
			}
		}
	}
	if key := duplicateKey(data); key != "" {
		return fmt.Sprintf("%s: key %q is given twice in one object", ReasonDuplicateKey, CutText(key, 100))
	}
	return ""
}

// duplicateKey returns a key given twice in one object of data (keys
// compared after unescaping), or "". No map is iterated: the workflow
// calls it (workflowcheck).
func duplicateKey(data json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.object {
					top.wantKey = true
				}
				stack = append(stack, &level{object: d == '{', keys: map[string]bool{}, wantKey: true})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if top != nil && top.object {
			if top.wantKey {
				k, _ := tok.(string)
				if top.keys[k] {
					return k
				}
				top.keys[k] = true
				top.wantKey = false
			} else {
				top.wantKey = true
			}
		}
	}
}

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
		size := ArtifactSize(a)
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

// ArtifactSize is the size the limits count of an artifact: the bytes of
// its parts (text, data, raw, url), or for a withheld artifact the Size it
// was withheld with. The worker withholds by it (activities.ApplyLimits)
// and the validator rejects by it, so both count alike.
func ArtifactSize(a Artifact) int {
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
	mk, has := metadataMembers(a.Metadata)[OutputKindKey]
	if !has {
		return a.Name, true
	}
	var s string
	if json.Unmarshal(mk, &s) != nil || (a.Name != "" && a.Name != s) {
		return "", false
	}
	return s, true
}

// metadataMembers reads a metadata object's members, each as sent (nil
// for no metadata, or metadata that is not a JSON object). Of a key given
// twice the last counts, as encoding/json reads it.
func metadataMembers(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func (v *Validator) validateOne(a Artifact) (Output, string) {
	if a.ArtifactID == "" {
		return Output{}, ReasonMissingID + ": the artifact has no artifactId"
	}
	kind, ok := KindOf(a)
	if !ok {
		return Output{}, fmt.Sprintf("%s: name %q and metadata.%s %s differ", ReasonKindConflict, a.Name, OutputKindKey, CutText(string(metadataMembers(a.Metadata)[OutputKindKey]), 256))
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
			if d := JSONDepth(p.Data); d > v.limits.MaxJSONDepth {
				return Output{}, fmt.Sprintf("%s: JSON nesting depth %d > %d", ReasonTooDeep, d, v.limits.MaxJSONDepth)
			}
			if reason := checkData(p.Data); reason != "" {
				return Output{}, reason
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

func authorityKey(raw json.RawMessage) string {
	md := metadataMembers(raw)
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

// JSONDepth returns the nesting depth of a JSON document (a scalar is 0,
// {} and [] are 1), without decoding it.
func JSONDepth(b []byte) int {
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

// FileRef is a file part of an output: a URL (never fetched) or inline
// bytes counted by Size and identified by SHA256.
type FileRef struct {
	URL       string `json:"url,omitempty"`
	MediaType string `json:"media_type"`
	Filename  string `json:"filename,omitempty"`
	Size      int    `json:"size,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
}
