package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Delegation is the local contract for one piece of delegated work. Its JSON
// field names are part of the public contract.
//
//	{
//	  "local_workflow_id": "lost-parcel-1",
//	  "agent_card_url": "http://127.0.0.1:9999/.well-known/agent-card.json",
//	  "skill": "open-claim",
//	  "purpose": "open a claim for a lost parcel",
//	  "message": {"text": "...", "data": {"order_id": "A-1001"}},
//	  "allowed_outputs": ["claim_opened"],
//	  "deadline": "2030-01-01T00:00:00Z",
//	  "write_authority": "none"
//	}
type Delegation struct {
	// LocalWorkflowID is also the Temporal Workflow ID of the delegation.
	LocalWorkflowID string `json:"local_workflow_id"`
	// AgentCardURL is where the remote Agent Card is fetched (A2A 1.0 §8.2).
	// A URL without a path means the well-known path /.well-known/agent-card.json.
	AgentCardURL string `json:"agent_card_url"`
	// Skill is the id of the AgentSkill of the card this delegation uses.
	Skill string `json:"skill"`
	// Purpose says why the work is delegated; shown to operators.
	Purpose string `json:"purpose"`
	// Message is the first message sent to the remote agent.
	Message MessageSpec `json:"message"`
	// AllowedOutputs lists the artifact kinds (Artifact.name) that may
	// become outputs. Non-empty, unique, each matching OutputKindPattern.
	AllowedOutputs []string `json:"allowed_outputs"`
	// Deadline is the latest time (RFC 3339) the delegation may run. A
	// contract file may give "deadline_in" instead (FieldDeadlineIn),
	// which DecodeDelegation and ResolveDeadline turn into this absolute
	// time; the workflow only ever holds this one.
	Deadline time.Time `json:"deadline"`
	// WriteAuthority is what the remote agent may change locally; only
	// "none" is accepted: every output is a proposal.
	WriteAuthority string `json:"write_authority"`

	// OutputSchemas maps an allowed output kind to the JSON Schema (2020-12)
	// its data part must satisfy. Optional.
	OutputSchemas map[string]json.RawMessage `json:"output_schemas,omitempty"`
	// OutputModes lists the media types accepted in artifact parts
	// (default DefaultOutputModes).
	OutputModes []string `json:"output_modes,omitempty"`
	// ResourceScope lists the local resource ids this delegation may name;
	// a string marked "x-resource-ref": true in an output schema must be one.
	ResourceScope []string `json:"resource_scope,omitempty"`
	// OnInvalidArtifact is "fail" (default: status invalid_output) or "drop"
	// (valid outputs kept, status completed, rejections listed).
	OnInvalidArtifact string `json:"on_invalid_artifact,omitempty"`
	// Limits lowers the default limits (DefaultLimits); raising is refused.
	Limits *Limits `json:"limits,omitempty"`
	// RequireSignedCard makes a verified Agent Card signature (A2A 1.0
	// §8.4) required for this delegation, whatever the trust store says.
	RequireSignedCard bool `json:"require_signed_card,omitempty"`
	// OnUnknownOutcome is what happens when a send's outcome is unknown
	// (written, no answer): "ask_operator" (default) or "resend" (same
	// messageId, at most MaxAutoResends times, then ask an operator).
	OnUnknownOutcome string `json:"on_unknown_outcome,omitempty"`
	// WaitingPollSeconds is how often, in seconds, the remote task is read
	// while an operator is asked for input (so that a task the agent ended
	// meanwhile ends the delegation), and, for an agent that pushes its
	// changes, how often a working task is read when no push comes: 1 to
	// MaxWaitingPollSeconds; 0 or absent is DefaultWaitingPollSeconds.
	WaitingPollSeconds int `json:"waiting_poll_seconds,omitempty"`
	// SendTimeout is how long one send (SendMessage, or the first event of
	// SendStreamingMessage) may take before its outcome is unknown, as a Go
	// duration ("90s", "5m"): for agents that do their work inside the send
	// and ignore returnImmediately (A2A 1.0 §3.2.2). 1s to MaxSendTimeout;
	// absent is DefaultSendTimeout. A send never runs past the deadline.
	SendTimeout string `json:"send_timeout,omitempty"`
}

// DefaultSendTimeout is the send timeout of a contract that sets none.
const DefaultSendTimeout = 30 * time.Second

// MaxSendTimeout is the longest send_timeout, an hour.
const MaxSendTimeout = time.Hour

// SendTimeoutOf is the contract's send timeout with the default filled in
// (a send_timeout that Validate refuses reads as the default).
func (d Delegation) SendTimeoutOf() time.Duration {
	if d.SendTimeout == "" {
		return DefaultSendTimeout
	}
	t, err := time.ParseDuration(d.SendTimeout)
	if err != nil || t < time.Second || t > MaxSendTimeout {
		return DefaultSendTimeout
	}
	return t
}

// DefaultWaitingPollSeconds is the waiting cadence of a contract that sets
// no waiting_poll_seconds: one read every five minutes (10,000 waiting
// delegations cost about 33 reads a second, agents and server together).
const DefaultWaitingPollSeconds = 300

// MaxWaitingPollSeconds is the longest waiting cadence, a day. A day suits
// agents that push their changes and delegations that wait for days; at
// the former bound, an hour, 100,000 waiting make 28 reads a second, agents
// and server together (docs/scaling.md).
const MaxWaitingPollSeconds = 86400

// WaitingPoll is the contract's waiting cadence with the default filled in.
func (d Delegation) WaitingPoll() time.Duration {
	if d.WaitingPollSeconds <= 0 {
		return DefaultWaitingPollSeconds * time.Second
	}
	return time.Duration(d.WaitingPollSeconds) * time.Second
}

// On-unknown-outcome policies.
const (
	OnUnknownAskOperator = "ask_operator"
	OnUnknownResend      = "resend"
	// MaxAutoResends bounds the automatic resends of one round.
	MaxAutoResends = 3
)

// DefaultOutputModes are the media types accepted when output_modes is
// not given.
var DefaultOutputModes = []string{"application/json", "text/plain"}

// On-invalid-artifact policies.
const (
	OnInvalidFail = "fail"
	OnInvalidDrop = "drop"
)

// Limits bound what a remote agent can put into local state. A zero field
// means the default. Bytes count the text, data, inline file bytes and
// file URL of the parts.
type Limits struct {
	MaxArtifacts     int `json:"max_artifacts,omitempty"`      // artifacts per task, default 32
	MaxArtifactBytes int `json:"max_artifact_bytes,omitempty"` // bytes per artifact, default 262144 (256 KiB)
	MaxTotalBytes    int `json:"max_total_bytes,omitempty"`    // bytes of all outputs, default 1048576 (1 MiB)
	MaxJSONDepth     int `json:"max_json_depth,omitempty"`     // nesting depth of a data part, default 32
	MaxTextChars     int `json:"max_text_chars,omitempty"`     // bytes of remote status text kept, default 4096
	// MaxResponseBytes bounds every response body read from the agent
	// (JSON-RPC, HTTP+JSON, GetTask; over gRPC every message, stream events
	// included) before it is decoded, default 8388608
	// (8 MiB); a larger one is a protocol error naming the limit.
	MaxResponseBytes int `json:"max_response_bytes,omitempty"`
}

// DefaultLimits are the limits of a contract that sets none.
var DefaultLimits = Limits{MaxArtifacts: 32, MaxArtifactBytes: 256 << 10, MaxTotalBytes: 1 << 20, MaxJSONDepth: 32, MaxTextChars: 4096, MaxResponseBytes: 8 << 20}

// WithDefaults fills zero fields with DefaultLimits.
func (l Limits) WithDefaults() Limits {
	pick := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	return Limits{
		MaxArtifacts:     pick(l.MaxArtifacts, DefaultLimits.MaxArtifacts),
		MaxArtifactBytes: pick(l.MaxArtifactBytes, DefaultLimits.MaxArtifactBytes),
		MaxTotalBytes:    pick(l.MaxTotalBytes, DefaultLimits.MaxTotalBytes),
		MaxJSONDepth:     pick(l.MaxJSONDepth, DefaultLimits.MaxJSONDepth),
		MaxTextChars:     pick(l.MaxTextChars, DefaultLimits.MaxTextChars),
		MaxResponseBytes: pick(l.MaxResponseBytes, DefaultLimits.MaxResponseBytes),
	}
}

// EffectiveLimits returns the contract's limits with defaults filled in.
func (d Delegation) EffectiveLimits() Limits {
	if d.Limits == nil {
		return DefaultLimits
	}
	return d.Limits.WithDefaults()
}

// EffectiveOutputModes returns output_modes, or DefaultOutputModes.
func (d Delegation) EffectiveOutputModes() []string {
	if len(d.OutputModes) == 0 {
		return DefaultOutputModes
	}
	out := make([]string, len(d.OutputModes))
	for i, m := range d.OutputModes {
		out[i] = Part{MediaType: m}.MediaTypeOf()
	}
	return out
}

// MessageSpec is the content of an outbound A2A Message: a text Part and,
// optionally, a data Part (any JSON value except null).
type MessageSpec struct {
	Text string          `json:"text"`
	Data json.RawMessage `json:"data,omitempty"`
}

// MaxContractBytes is the size limit of an encoded contract (256 KiB): it
// travels in workflow history.
const MaxContractBytes = 256 << 10

// MaxDeadline is how far ahead a deadline may be (366 days).
const MaxDeadline = 366 * 24 * time.Hour

// checkCardURL returns "" or the rule an agent_card_url breaks.
func checkCardURL(s string) string {
	if len(s) > 2048 {
		return "at most 2048 bytes"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "not a URL: " + err.Error()
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return "must be an http or https URL"
	}
	if u.Hostname() == "" {
		return "has no host"
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("port %q is not 1-65535", p)
		}
	}
	if u.User != nil {
		return "must not carry credentials (user:password@): credentials belong in the worker's credential store"
	}
	return ""
}

// WriteAuthorityNone is the only accepted value of Delegation.WriteAuthority.
const WriteAuthorityNone = "none"

// OutputKindPattern is the rule every entry of allowed_outputs must match.
var OutputKindPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// workflowIDPattern keeps local_workflow_id printable and bounded; Temporal
// accepts more, but an id shown in a UI and a shell should be plain.
var workflowIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$`)

// WorkflowIDPattern is the rule of a delegation's id (local_workflow_id).
func WorkflowIDPattern() string { return workflowIDPattern.String() }

// ValidWorkflowID reports whether id is one a delegation can have.
func ValidWorkflowID(id string) bool { return workflowIDPattern.MatchString(id) }

// FieldError is a decoding or validation error about one field of a contract.
// Field is the JSON path of the field ("message.text", "allowed_outputs[1]").
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// ErrInvalidContract wraps every FieldError returned by this package, so that
// callers can test errors.Is(err, ErrInvalidContract).
var ErrInvalidContract = errors.New("invalid contract")

func (e *FieldError) Unwrap() error { return ErrInvalidContract }

// DecodeDelegation decodes a contract file strictly and validates it against
// now: a relative "deadline_in" is resolved first against now
// (ResolveDeadline), the rest is DecodeDelegationStrict and Validate.
// Errors are *FieldError (joined when several fields are wrong): an unknown
// field, a wrong type, a missing required field, or a rule broken.
func DecodeDelegation(data []byte, now time.Time) (Delegation, error) {
	data, err := ResolveDeadline(data, now)
	if err != nil {
		return Delegation{}, err
	}
	d, err := DecodeDelegationStrict(data)
	if err != nil {
		return Delegation{}, err
	}
	if err := d.Validate(now); err != nil {
		return Delegation{}, err
	}
	return d, nil
}

// DecodeDelegationStrict is DecodeDelegation without Validate: the size
// limit (MaxContractBytes), then strict decoding (an unknown field in any
// case, a key given twice, a wrong type, a missing required field,
// trailing data: each a *FieldError naming the field and the rule). The
// workflow uses it on its own input and validates against its own clock.
// A "deadline_in" is refused here (the stored contract holds the absolute
// "deadline"; ResolveDeadline makes it so before the start).
func DecodeDelegationStrict(data []byte) (Delegation, error) {
	if len(data) > MaxContractBytes {
		return Delegation{}, &FieldError{Field: "(document)", Rule: fmt.Sprintf("%d bytes is over the %d-byte limit of a contract", len(data), MaxContractBytes)}
	}
	if err := refuseDeadlineIn(data); err != nil {
		return Delegation{}, err
	}
	var d Delegation
	if err := strictDecode(data, &d, map[string]string{"deadline": "string"}, []string{
		"local_workflow_id", "agent_card_url", "skill", "purpose", "message",
		"allowed_outputs", "deadline", "write_authority",
	}); err != nil {
		return Delegation{}, err
	}
	return d, nil
}

// Validate checks the rules of a Delegation (also the ones strict decoding
// cannot see). It is called again by the workflow before anything is sent.
func (d Delegation) Validate(now time.Time) error {
	var errs []error
	add := func(field, rule string) { errs = append(errs, &FieldError{Field: field, Rule: rule}) }

	if d.LocalWorkflowID == "" {
		add("local_workflow_id", "required")
	} else if !workflowIDPattern.MatchString(d.LocalWorkflowID) {
		add("local_workflow_id", fmt.Sprintf("%q must match %s", truncateRunes(d.LocalWorkflowID, 40), workflowIDPattern))
	}
	if d.AgentCardURL == "" {
		add("agent_card_url", "required")
	} else if rule := checkCardURL(d.AgentCardURL); rule != "" {
		add("agent_card_url", rule)
	}
	if strings.TrimSpace(d.Skill) == "" {
		add("skill", "required")
	} else if len(d.Skill) > 256 {
		add("skill", "at most 256 bytes")
	}
	if strings.TrimSpace(d.Purpose) == "" {
		add("purpose", "required")
	} else if len(d.Purpose) > 1000 {
		add("purpose", "at most 1000 bytes")
	}
	if len(d.AllowedOutputs) > 64 {
		add("allowed_outputs", "at most 64 kinds")
	}
	if strings.TrimSpace(d.Message.Text) == "" && len(d.Message.Data) == 0 {
		add("message", "needs text or data")
	}
	if len(d.Message.Data) > 0 && bytes.Equal(bytes.TrimSpace(d.Message.Data), []byte("null")) {
		add("message.data", "must not be null")
	}
	if emptyList(d.Message.Data) {
		add("message.data", EmptyListRule)
	}
	if len(d.AllowedOutputs) == 0 {
		add("allowed_outputs", "must not be empty")
	}
	seen := map[string]bool{}
	for i, k := range d.AllowedOutputs {
		f := fmt.Sprintf("allowed_outputs[%d]", i)
		if !OutputKindPattern.MatchString(k) {
			add(f, fmt.Sprintf("%q must match %s", k, OutputKindPattern))
		} else if seen[k] {
			add(f, fmt.Sprintf("%q is listed twice", k))
		}
		seen[k] = true
	}
	if d.Deadline.IsZero() {
		add("deadline", "required (RFC 3339), and not the zero time")
	} else if !d.Deadline.After(now) {
		add("deadline", fmt.Sprintf("must be in the future (got %s, now %s)", d.Deadline.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano)))
	} else if d.Deadline.Sub(now) > MaxDeadline {
		add("deadline", fmt.Sprintf("at most %d days ahead (got %s)", int(MaxDeadline.Hours()/24), d.Deadline.UTC().Format(time.RFC3339)))
	}
	if d.SendTimeout != "" {
		t, err := time.ParseDuration(d.SendTimeout)
		switch {
		case err != nil:
			add("send_timeout", fmt.Sprintf("%q is not a Go duration (e.g. \"90s\", \"5m\")", truncateRunes(d.SendTimeout, 40)))
		case t < time.Second || t > MaxSendTimeout:
			add("send_timeout", fmt.Sprintf("must be 1s to %s, got %s", MaxSendTimeout, d.SendTimeout))
		}
	}
	if d.WaitingPollSeconds < 0 || d.WaitingPollSeconds > MaxWaitingPollSeconds {
		add("waiting_poll_seconds", fmt.Sprintf("must be 1 to %d (seconds, a day), or 0 for the default %d, got %d", MaxWaitingPollSeconds, DefaultWaitingPollSeconds, d.WaitingPollSeconds))
	}
	errs = append(errs, d.validateDepth()...)
	switch d.WriteAuthority {
	case WriteAuthorityNone:
	case "":
		add("write_authority", `required; only "none" is accepted`)
	default:
		add("write_authority", fmt.Sprintf(`only "none" is accepted, got %q: a delegation never grants the remote agent write authority`, d.WriteAuthority))
	}
	return errors.Join(errs...)
}

// validateDepth checks the optional fields of the contract depth
// (output schemas, modes, scope, policy, limits).
func (d Delegation) validateDepth() []error {
	var errs []error
	add := func(field, rule string) { errs = append(errs, &FieldError{Field: field, Rule: rule}) }
	kinds := make([]string, 0, len(d.OutputSchemas))
	for k := range d.OutputSchemas {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		f := "output_schemas." + k
		if !d.Allows(k) {
			add(f, fmt.Sprintf("%q is not in allowed_outputs", k))
			continue
		}
		if _, err := compileSchema(d.OutputSchemas[k], d.ResourceScope); err != nil {
			add(f, err.Error())
		}
	}
	for i, m := range d.OutputModes {
		if _, _, err := mime.ParseMediaType(m); err != nil || !strings.Contains(m, "/") {
			add(fmt.Sprintf("output_modes[%d]", i), fmt.Sprintf("%q is not a media type (type/subtype)", m))
		}
	}
	for i, r := range d.ResourceScope {
		if strings.TrimSpace(r) == "" {
			add(fmt.Sprintf("resource_scope[%d]", i), "must not be empty")
		}
	}
	switch d.OnUnknownOutcome {
	case "", OnUnknownAskOperator, OnUnknownResend:
	default:
		add("on_unknown_outcome", fmt.Sprintf(`must be "ask_operator" or "resend", got %q`, d.OnUnknownOutcome))
	}
	switch d.OnInvalidArtifact {
	case "", OnInvalidFail, OnInvalidDrop:
	default:
		add("on_invalid_artifact", fmt.Sprintf(`must be "fail" or "drop", got %q`, d.OnInvalidArtifact))
	}
	if l := d.Limits; l != nil {
		check := func(name string, v, def int) {
			switch {
			case v < 0:
				add("limits."+name, "must not be negative")
			case v > def:
				add("limits."+name, fmt.Sprintf("%d is above the default %d: limits can only be lowered", v, def))
			}
		}
		check("max_artifacts", l.MaxArtifacts, DefaultLimits.MaxArtifacts)
		check("max_artifact_bytes", l.MaxArtifactBytes, DefaultLimits.MaxArtifactBytes)
		check("max_total_bytes", l.MaxTotalBytes, DefaultLimits.MaxTotalBytes)
		check("max_json_depth", l.MaxJSONDepth, DefaultLimits.MaxJSONDepth)
		check("max_text_chars", l.MaxTextChars, DefaultLimits.MaxTextChars)
		check("max_response_bytes", l.MaxResponseBytes, DefaultLimits.MaxResponseBytes)
	}
	return errs
}

// MessageModes returns the media types an outbound message carries:
// text/plain for text, application/json for data.
func MessageModes(text string, data json.RawMessage) []string {
	var modes []string
	if strings.TrimSpace(text) != "" {
		modes = append(modes, "text/plain")
	}
	if len(data) > 0 && !bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		modes = append(modes, "application/json")
	}
	return modes
}

// CheckInputModes refuses a message whose media types are not all in the
// modes the remote skill accepts (AgentSkill.inputModes, or the card's
// defaultInputModes; A2A 1.0 §4.4.5). No declared modes accept anything.
func CheckInputModes(accepted, carried []string) error {
	if len(accepted) == 0 {
		return nil
	}
	norm := make([]string, len(accepted))
	for i, m := range accepted {
		norm[i] = Part{MediaType: m}.MediaTypeOf()
		// Cards written from trpc-a2a-go's examples name part kinds, not
		// media types ("text", "data": its protocol.KindText, KindData);
		// read as the media types of those parts.
		switch norm[i] {
		case PartText:
			norm[i] = "text/plain"
		case PartData:
			norm[i] = "application/json"
		}
	}
	for _, m := range carried {
		if !slices.Contains(norm, m) && !slices.Contains(norm, "*/*") {
			return fmt.Errorf("the skill accepts %v; the message carries %s", accepted, m)
		}
	}
	return nil
}

// Allows reports whether kind is one of the allowed outputs.
func (d Delegation) Allows(kind string) bool {
	for _, k := range d.AllowedOutputs {
		if k == kind {
			return true
		}
	}
	return false
}

// strictDecode decodes one JSON object into v, refusing unknown fields,
// wrong types, trailing data and missing required fields. Errors are
// *FieldError.
//
// kinds names fields whose JSON kind is checked before decoding ("string"),
// for fields whose own UnmarshalJSON would not name them in its error.
func strictDecode(data []byte, v any, kinds map[string]string, required []string) error {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(trimmed) == 0 || trimmed[0] != '{' {
		var v any
		if err := json.Unmarshal(trimmed, &v); len(trimmed) > 0 && err != nil {
			// Not JSON at all ("[1", "nul"): say where, as for an object.
			return &FieldError{Field: "(document)", Rule: "malformed JSON" + where(data, trimmed, err) + ": " + err.Error()}
		}
		return &FieldError{Field: "(document)", Rule: "must be a JSON object"}
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &present); err != nil {
		if at, ok := trailingComma(data, trimmed, err); ok {
			return &FieldError{Field: "(document)", Rule: "malformed JSON" + at + ": a trailing comma (JSON allows none before } or ])"}
		}
		return &FieldError{Field: "(document)", Rule: "malformed JSON" + where(data, trimmed, err) + ": " + err.Error()}
	}
	if present == nil {
		return &FieldError{Field: "(document)", Rule: "must be a JSON object"}
	}
	if errs := checkKeys(trimmed, reflect.TypeOf(v).Elem()); len(errs) > 0 {
		// A typo'd name is an unknown field and, often, a missing one:
		// say both at once.
		for _, f := range required {
			if _, ok := present[f]; !ok {
				errs = append(errs, &FieldError{Field: f, Rule: "required"})
			}
		}
		return errors.Join(errs...)
	}
	for f, kind := range kinds {
		raw, ok := present[f]
		if ok && kind == "string" && (len(raw) == 0 || raw[0] != '"') {
			return &FieldError{Field: f, Rule: "wrong type: want string"}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	var errs []error
	for _, f := range required {
		if _, ok := present[f]; !ok {
			errs = append(errs, &FieldError{Field: f, Rule: "required"})
		}
	}
	return errors.Join(errs...)
}

// JSONErrorAt locates a JSON syntax or type error (encoding/json's
// *SyntaxError or *UnmarshalTypeError) in data as " at line L, column C"
// (1-based; column in bytes), or "" for another error.
func JSONErrorAt(data []byte, err error) string { return where(data, data, err) }

// trailingComma recognizes a syntax error at a } or ] that follows a
// comma, and locates the comma.
func trailingComma(data, trimmed []byte, err error) (string, bool) {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) || syn.Offset < 1 || syn.Offset > int64(len(trimmed)) {
		return "", false
	}
	at := syn.Offset - 1
	if c := trimmed[at]; c != '}' && c != ']' {
		return "", false
	}
	i := at - 1
	for i >= 0 && strings.ContainsRune(" \t\r\n", rune(trimmed[i])) {
		i--
	}
	if i < 0 || trimmed[i] != ',' {
		return "", false
	}
	return where(data, trimmed, &json.SyntaxError{Offset: i + 1}), true
}

// where locates a JSON syntax or type error in data (the document as
// given; trimmed is the part that was decoded) as " at line L, column C"
// (1-based, column in bytes), or "" when the error has no offset.
func where(data, trimmed []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return ""
	}
	if i := bytes.Index(data, trimmed); i >= 0 {
		off += int64(i)
	}
	off = min(off, int64(len(data)))
	if syn != nil && off > 0 {
		off-- // a syntax error's offset is just past the offending byte
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	// Columns count characters, as editors do (a tab is one); a byte
	// order mark is not one.
	col := utf8.RuneCount(bytes.TrimPrefix(before[lineStart:], []byte("\xef\xbb\xbf"))) + 1
	return fmt.Sprintf(" at line %d, column %d", line, col)
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "(document)"
		}
		return &FieldError{Field: field, Rule: fmt.Sprintf("wrong type: got JSON %s, want %s", typeErr.Value, jsonTypeName(typeErr.Type.String()))}
	}
	var timeErr *time.ParseError
	if errors.As(err, &timeErr) {
		return &FieldError{Field: "deadline", Rule: "must be an RFC 3339 time: " + timeErr.Error()}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &FieldError{Field: strings.Trim(rest, `"`), Rule: "unknown field"}
	}
	return &FieldError{Field: "(document)", Rule: "malformed JSON: " + msg}
}

func jsonTypeName(goType string) string {
	switch {
	case goType == "string", goType == "time.Time":
		return "string"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"):
		return "number"
	case goType == "bool":
		return "boolean"
	default:
		return "object"
	}
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
