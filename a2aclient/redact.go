package a2aclient

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

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
// looked for, in any case, as sent, JSON-escaped (a JSON body re-spelled
// first), percent-encoded, hex, and base64-encoded wherever it starts in
// the encoded bytes ("Bearer <secret>", "user:<secret>"); in a reply's
// body before anything reads or cuts it (wireTransport), and in what is
// decoded from it. Ids too: an agent that makes the secret its
// task's id loses the task.
type redactor struct {
	// plain are the forms a JSON body can hold in its strings: as sent
	// (any byte percent-encoded) and JSON-escaped; encoded are the base64
	// (at each alignment) and hex ones. Case is ignored. Both only grow
	// (add, under mu): a token minted after Dial joins them.
	mu             sync.RWMutex
	seen           map[string]bool
	plain, encoded []*regexp.Regexp
}

// minRedacted is the shortest secret looked for: a shorter one would
// match ordinary text everywhere (and is no secret worth the name).
const minRedacted = 6

// newRedactor returns a redactor of secrets; nil when none is long enough.
func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	r.add(secrets...)
	if len(r.plain) == 0 {
		return nil
	}
	return r
}

// add makes the redactor look for more secrets (a token minted and sent
// after Dial); safe for concurrent use with every other method.
func (r *redactor) add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	// add takes a pattern (case ignored), once.
	add := func(list *[]*regexp.Regexp, pattern string) {
		if pattern == "" || r.seen[strings.ToLower(pattern)] {
			return
		}
		r.seen[strings.ToLower(pattern)] = true
		*list = append(*list, regexp.MustCompile("(?i)"+pattern))
	}
	for _, s := range secrets {
		if len(s) < minRedacted {
			continue
		}
		// As sent, with any of its bytes percent-encoded (%2D for -).
		var pat strings.Builder
		for _, c := range strings.ToValidUTF8(s, "\uFFFD") {
			var pct strings.Builder
			for _, b := range []byte(string(c)) {
				fmt.Fprintf(&pct, "%%%02X", b)
			}
			fmt.Fprintf(&pat, "(?:%s|%s)", regexp.QuoteMeta(string(c)), pct.String())
		}
		add(&r.plain, pat.String())
		if b, err := json.Marshal(s); err == nil {
			add(&r.plain, regexp.QuoteMeta(string(b[1:len(b)-1])))
		}
		// base64 wherever the secret starts in the encoded bytes ("Bearer
		// <secret>", "user:<secret>", a JSON blob): the characters that
		// hold only the secret's bits, at each of the three alignments.
		for k := range 3 {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				b64 := enc.EncodeToString(append(make([]byte, k), s...))
				if from, to := (8*k+5)/6, 8*(k+len(s))/6; to-from >= 8 {
					add(&r.encoded, regexp.QuoteMeta(b64[from:to]))
				}
			}
		}
		add(&r.encoded, hex.EncodeToString([]byte(s)))
	}
}

// lists returns the patterns as they are now.
func (r *redactor) lists() (plain, encoded []*regexp.Regexp) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.plain, r.encoded
}

// replace puts Redacted in the place of every match of each of res.
func replace(b []byte, res ...[]*regexp.Regexp) []byte {
	for _, list := range res {
		for _, re := range list {
			b = re.ReplaceAllLiteral(b, []byte(Redacted))
		}
	}
	return b
}

func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	plain, encoded := r.lists()
	return string(replace([]byte(s), plain, encoded))
}

func (r *redactor) bytes(b []byte) []byte {
	if r == nil || b == nil {
		return b
	}
	plain, encoded := r.lists()
	return replace(b, plain, encoded)
}

// wireBody redacts a reply's body before anything reads it (a2a-go, the
// error's excerpt, its cuts: a secret cut in two is no longer found), in
// the forms a JSON string can hold; the base64 ones are left to the
// decoded fields (in the body they may sit in a file's bytes, and
// replacing them there would break the base64). A JSON body that no
// longer parses is passed on as it came.
func (r *redactor) wireBody(b []byte) []byte {
	if r == nil {
		return b
	}
	plain, _ := r.lists()
	if len(plain) == 0 {
		return b
	}
	// JSON may spell a string's characters many ways ("\/", "\u0041"):
	// re-encoded, every string is spelled one way, the way the
	// JSON-escaped form of each secret is.
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if json.Valid(b) && dec.Decode(&v) == nil {
		if canon, err := json.Marshal(v); err == nil {
			out := replace(canon, plain)
			if bytes.Equal(out, canon) {
				return b // nothing to redact: the body as it came
			}
			if json.Valid(out) {
				return out
			}
		}
	}
	out := replace(b, plain)
	if json.Valid(b) && !json.Valid(out) {
		return b
	}
	return out
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

func (r *redactor) artifact(a contracts.Artifact) contracts.Artifact {
	if r == nil {
		return a
	}
	a.ArtifactID, a.Name, a.Metadata = r.text(a.ArtifactID), r.text(a.Name), r.json(a.Metadata)
	parts := make([]contracts.Part, len(a.Parts))
	for i, p := range a.Parts {
		p.Text, p.URL, p.Filename, p.MediaType = r.text(p.Text), r.text(p.URL), r.text(p.Filename), r.text(p.MediaType)
		p.Data, p.Raw, p.Metadata = r.json(p.Data), r.bytes(p.Raw), r.json(p.Metadata)
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
	if s.Warnings != nil {
		ws := make([]string, len(s.Warnings))
		for i, w := range s.Warnings {
			ws[i] = r.text(w)
		}
		s.Warnings = ws
	}
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
