package a2aclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxSkippedBytes bounds what a reply over Options.MaxResponseBytes may
// hold in members this client skips unread (a Task's history, A2A 1.0
// §3.2.4): 64 MiB. A reply whose other members are over the limit, or
// whose skipped members are over this, fails with ErrResponseTooLarge.
const MaxSkippedBytes = 64 << 20

// skipHistory reads one JSON reply from r token by token and re-encodes it
// without any "history" member, holding neither the skipped members nor
// more than limit bytes of the rest. Remote content (the value of a "data"
// or "metadata" member) is copied as sent, never entered, so a "history"
// inside it stays. skipped is the number of input bytes the history
// members took. Numbers keep their text (json.Number); strings of the
// structure are re-escaped, the same values. Errors: ErrResponseTooLarge
// when what remains is over limit or the input over limit+maxSkip; a JSON
// syntax error or a read error as they come.
func skipHistory(r io.Reader, limit, maxSkip int64) (out []byte, skipped int64, err error) {
	cr := &countingReader{r: io.LimitReader(r, limit+maxSkip+1)}
	// What is read outside a history is bounded as it is read (a decoder
	// holds a whole token: a long string outside a history must not be
	// read whole before it is refused).
	skipping := false
	cr.room = func(n int64) int64 {
		if skipping {
			return math.MaxInt64
		}
		return limit + skipSlack + skipped - n
	}
	dec := json.NewDecoder(cr)
	dec.UseNumber()
	var buf bytes.Buffer
	type level struct {
		object bool
		n      int // members or elements written
		// haveKey: an object's key was read, its value is next.
		haveKey bool
	}
	var stack []level
	tooLarge := func() error {
		if cr.n > limit+maxSkip {
			return fmt.Errorf("%w: more than %d bytes, of which at most %d may be a history (skipped unread)", ErrResponseTooLarge, limit+maxSkip, maxSkip)
		}
		return fmt.Errorf("%w: more than %d bytes besides a history (skipped unread, at most %d bytes)", ErrResponseTooLarge, limit, maxSkip)
	}
	// skipValue consumes one value whose first token is first.
	skipValue := func(first json.Token) error {
		if d, ok := first.(json.Delim); !ok || (d != '{' && d != '[') {
			return nil
		}
		for depth := 1; depth > 0; {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			if d, ok := t.(json.Delim); ok {
				if d == '{' || d == '[' {
					depth++
				} else {
					depth--
				}
			}
		}
		return nil
	}
	fail := func(err error) ([]byte, int64, error) {
		if cr.n > limit+maxSkip || errors.Is(err, ErrResponseTooLarge) {
			return nil, 0, tooLarge()
		}
		return nil, 0, err
	}
	for {
		if int64(buf.Len()) > limit || cr.n > limit+maxSkip {
			return nil, 0, tooLarge()
		}
		before := dec.InputOffset()
		t, err := dec.Token()
		if err == io.EOF && len(stack) == 0 && buf.Len() > 0 {
			return buf.Bytes(), skipped, nil
		}
		if err != nil {
			return fail(err)
		}
		var top *level
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			buf.WriteByte(byte(d))
			if len(stack) > 0 {
				stack[len(stack)-1].haveKey = false
			} else {
				return buf.Bytes(), skipped, nil
			}
			continue
		}
		if top != nil && top.object && !top.haveKey {
			k, _ := t.(string)
			if k == "history" {
				skipping = true
				v, err := dec.Token()
				if err != nil {
					return fail(err)
				}
				if err := skipValue(v); err != nil {
					return fail(err)
				}
				skipping = false
				skipped += dec.InputOffset() - before
				continue
			}
			if top.n > 0 {
				buf.WriteByte(',')
			}
			top.n++
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			if k == "data" || k == "metadata" {
				// Remote content: copied as sent.
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fail(err)
				}
				buf.Write(raw)
				continue
			}
			top.haveKey = true
			continue
		}
		if top != nil && !top.object {
			if top.n > 0 {
				buf.WriteByte(',')
			}
			top.n++
		}
		switch v := t.(type) {
		case json.Delim:
			buf.WriteByte(byte(v))
			stack = append(stack, level{object: v == '{'})
			continue
		case json.Number:
			buf.WriteString(v.String())
		case nil:
			buf.WriteString("null")
		default:
			b, _ := json.Marshal(v)
			buf.Write(b)
		}
		if top == nil {
			// A scalar reply: nothing to skip.
			return buf.Bytes(), skipped, nil
		}
		top.haveKey = false
	}
}

// skipSlack is what skipHistory reads past its limit outside a history
// before it refuses the reply: the decoder's read-ahead.
const skipSlack = 64 << 10

// countingReader counts what is read through it. room, when set, says how
// many more bytes may be read once n are: a read never goes past it, and
// the read after fails with ErrResponseTooLarge, sticky and with no bytes
// (a decoder may ignore an error that comes with bytes, and reads in
// chunks as large as its buffer: encoding/json over jsontext, as Go 1.27
// builds it, does both).
type countingReader struct {
	r    io.Reader
	n    int64
	room func(n int64) int64
	err  error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.room != nil {
		left := c.room(c.n)
		if left <= 0 {
			c.err = ErrResponseTooLarge
			return 0, c.err
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// maxEventLine bounds one line of an event stream this client reads (a2a-go
// reads lines of at most 10 MiB: internal/sse MaxSSETokenSize).
const maxEventLine = 10 << 20

// errEventTooLarge is an event stream line over maxEventLine.
var errEventTooLarge = errors.New("an event stream line is over 10 MiB")

// eventStream passes a text/event-stream body through, each event's data
// (its "data:" lines joined, as a2a-go joins them) compacted to one line,
// the client's secrets redacted (as from a body), normalized for the
// interface's version and protected (exactValues) before a2a-go reads it.
type eventStream struct {
	src     *bufio.Reader
	body    io.Closer
	version string
	exact   *exactValues
	red     *redactor
	out     bytes.Buffer
	data    bytes.Buffer
	hasData bool
	err     error
}

func newEventStream(body io.ReadCloser, version string, x *exactValues, red *redactor) io.ReadCloser {
	return &eventStream{src: bufio.NewReaderSize(body, 64<<10), body: body, version: version, exact: x, red: red}
}

func (s *eventStream) Close() error { return s.body.Close() }

func (s *eventStream) Read(p []byte) (int, error) {
	for s.out.Len() == 0 && s.err == nil {
		s.step()
	}
	if s.out.Len() > 0 {
		return s.out.Read(p)
	}
	return 0, s.err
}

// step reads one line and moves what it completes to out.
func (s *eventStream) step() {
	line, err := s.readLine()
	if len(line) > 0 || err == nil {
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0:
			s.flush()
			s.out.Write(line)
		case bytes.HasPrefix(trimmed, []byte("data:")):
			d := trimmed[len("data:"):]
			if len(d) > 0 && d[0] == ' ' {
				d = d[1:]
			}
			if s.hasData {
				s.data.WriteByte('\n')
			}
			s.data.Write(d)
			s.hasData = true
		default:
			s.out.Write(line)
		}
	}
	if err != nil {
		s.flush()
		s.err = err
	}
}

// flush writes the pending event's data as one data line.
func (s *eventStream) flush() {
	if !s.hasData {
		return
	}
	ev := s.data.Bytes()
	var compact bytes.Buffer
	if json.Compact(&compact, ev) == nil {
		// One JSON event, on one line whatever lines it came in (SSE joins
		// a data field's lines with newlines).
		ev = s.red.wireBody(compact.Bytes())
		if s.exact != nil {
			ev = s.exact.protect(ev)
		}
		ev, _ = normalizeBody(ev, s.version)
		s.out.WriteString("data: ")
		s.out.Write(ev)
		s.out.WriteString("\n")
	} else {
		// Not JSON: passed on as it came, line by line (a2a-go says what
		// it is).
		for _, line := range bytes.Split(ev, []byte("\n")) {
			s.out.WriteString("data: ")
			s.out.Write(line)
			s.out.WriteString("\n")
		}
	}
	s.data.Reset()
	s.hasData = false
}

func (s *eventStream) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := s.src.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxEventLine {
			return nil, errEventTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}
