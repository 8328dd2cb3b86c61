package a2aclient

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/a2adelegate/delegate/contracts"
)

// Redacted stands in for a secret this client sent, wherever the agent
// sent it back.
const Redacted = "[redacted]"

// redactor replaces the secrets a client sends (Options.WithCredential) in
// everything it returns from the agent: task snapshots, stream chunks and
// errors. An agent that echoes a request header (a debug error message, a
// status text, an artifact) otherwise put the worker's secret into
// workflow history, `delegate status`, the UI and the worker's log, where
// people without access to the credential store read it. Each secret is
// looked for as sent, JSON-escaped and base64-encoded. Task and context
// ids are left as they are: they name the task (an agent that makes its
// secret its task id keeps it visible).
type redactor struct {
	forms []string
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		forms := []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s))}
		if b, err := json.Marshal(s); err == nil {
			forms = append(forms, string(b[1:len(b)-1]))
		}
		for _, f := range forms {
			if !contains(r.forms, f) {
				r.forms = append(r.forms, f)
			}
		}
	}
	if len(r.forms) == 0 {
		return nil
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	for _, f := range r.forms {
		s = strings.ReplaceAll(s, f, Redacted)
	}
	return s
}

func (r *redactor) bytes(b []byte) []byte {
	if r == nil || b == nil {
		return b
	}
	for _, f := range r.forms {
		if bytes.Contains(b, []byte(f)) {
			b = bytes.ReplaceAll(b, []byte(f), []byte(Redacted))
		}
	}
	return b
}

// json redacts inside a JSON value; what no longer parses (a secret that
// was not inside a string) becomes the JSON string Redacted.
func (r *redactor) json(b json.RawMessage) json.RawMessage {
	if r == nil || b == nil {
		return b
	}
	out := r.bytes(b)
	if !bytes.Equal(out, b) && !json.Valid(out) {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return out
}

func (r *redactor) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.text(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.text(k)] = r.value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.value(e)
		}
		return out
	}
	return v
}

func (r *redactor) metadata(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return r.value(m).(map[string]any)
}

func (r *redactor) artifact(a contracts.Artifact) contracts.Artifact {
	if r == nil {
		return a
	}
	a.ArtifactID, a.Name, a.Metadata = r.text(a.ArtifactID), r.text(a.Name), r.metadata(a.Metadata)
	parts := make([]contracts.Part, len(a.Parts))
	for i, p := range a.Parts {
		p.Text, p.URL, p.Filename, p.MediaType = r.text(p.Text), r.text(p.URL), r.text(p.Filename), r.text(p.MediaType)
		p.Data, p.Raw, p.Metadata = r.json(p.Data), r.bytes(p.Raw), r.metadata(p.Metadata)
		parts[i] = p
	}
	if a.Parts != nil {
		a.Parts = parts
	}
	return a
}

func (r *redactor) snapshot(s contracts.TaskSnapshot) contracts.TaskSnapshot {
	if r == nil {
		return s
	}
	s.RawState, s.StatusText, s.Reply = r.text(s.RawState), r.text(s.StatusText), r.text(s.Reply)
	s.StatusMessageID, s.StatusTimestamp, s.StatusKey = r.text(s.StatusMessageID), r.text(s.StatusTimestamp), r.text(s.StatusKey)
	s.StatusData = r.json(s.StatusData)
	if s.Artifacts != nil {
		arts := make([]contracts.Artifact, len(s.Artifacts))
		for i, a := range s.Artifacts {
			arts[i] = r.artifact(a)
		}
		s.Artifacts = arts
	}
	return s
}

// err redacts a CallError's remote text (its JSON-RPC message, body
// excerpt and cause); other errors are wrapped so that their text is.
func (r *redactor) err(err error) error {
	if r == nil || err == nil {
		return err
	}
	if ce, ok := err.(*CallError); ok {
		c := *ce
		c.Message, c.Excerpt = r.text(c.Message), r.text(c.Excerpt)
		if c.Err != nil {
			c.Err = &redactedError{err: c.Err, r: r}
		}
		return &c
	}
	if r.text(err.Error()) == err.Error() {
		return err
	}
	return &redactedError{err: err, r: r}
}

// redactedError is an error whose text has the secrets redacted; it
// unwraps to the original, so errors.Is and errors.As still see it.
type redactedError struct {
	err error
	r   *redactor
}

func (e *redactedError) Error() string { return e.r.text(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }
