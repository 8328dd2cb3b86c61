package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2adelegate/delegate/contracts"
)

// How a "human" template's question reaches the actor's human, and how
// the answer comes back (docs/mcp.md, "Elicitation"):
//
// Through MCP 2025-11-25 the question is an elicitation/create form. The
// form is kept pending by a goroutine bound to the session, not to the
// call that sent it: the call waits for the answer only within its own
// wait_seconds, then returns the question with Elicitation.Status
// "pending", and the answer, given at any time while the session lives
// (at most ElicitTimeout after the form was sent), is sent to the
// delegation for the round the form showed, as the session's actor. A
// host's request timeout (the TypeScript SDK's 60 s) never meets a human's
// pace, and no later call sends the same form again.
//
// From MCP 2026-07-28 a server sends no request of its own: the call
// returns an input request (SEP-2322, an elicitation in the result) with
// a requestState sealed by this server naming the delegation, the round
// and the actor; the client's retry carries the answer, which is sent for
// that round.

// humans holds the questions put to humans and the tool calls in flight.
type humans struct {
	mu sync.Mutex
	// forms are the elicitation forms pending now; ended the ones that
	// ended (bounded by maxEndedForms), by session, delegation and round.
	forms map[formKey]*form
	ended map[formKey]*form
	// attempts counts the forms sent for a key (maxFormAttempts).
	attempts map[formKey]int
	// calls are the tool calls being served, by session.
	calls  map[*sdk.ServerSession]map[*inFlight]bool
	nCalls int

	keyOnce sync.Once
	key     []byte
}

type formKey struct {
	session *sdk.ServerSession
	id      string
	round   int
}

// form is one elicitation/create: sent once, answered (or not) once.
type form struct {
	key   formKey
	actor string
	sent  time.Time
	// ctx is the form's: detached from the call that sent it, ended when
	// the session ends (cancel with errSessionEnded).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// started is closed just before elicitation/create is sent, done
	// once it ended; status and note are set before done is closed.
	started chan struct{}
	done    chan struct{}
	status  string
	note    string
}

type inFlight struct {
	actor  string
	cancel context.CancelCauseFunc
}

// The statuses of a form (Elicitation.Status).
const (
	FormPending   = "pending"   // sent, with the human
	FormAnswered  = "answered"  // the answer was sent to the delegation
	FormDeclined  = "declined"  // declined or cancelled: not asked again in the session
	FormRefused   = "refused"   // the delegation refused the answer (the round had moved on, ...)
	FormFailed    = "failed"    // the client could not ask it
	FormExpired   = "expired"   // not answered within ElicitTimeout
	FormWithdrawn = "withdrawn" // the session ended first
)

// Elicitation is where a question put to the human through elicitation
// stands (Result.Elicitation).
type Elicitation struct {
	Round int `json:"round"`
	// Status is one of pending, answered, declined, refused, failed,
	// expired, withdrawn.
	Status string    `json:"status"`
	Sent   time.Time `json:"sent"`
}

var (
	errSessionEnded = errors.New("the session ended")
	errFormExpired  = errors.New("the form was not answered in time")
	errStopping     = errors.New("the server is stopping")
)

// Bounds of the forms.
const (
	// maxFormAttempts bounds the forms sent for one question in one
	// session: one that failed, expired or whose answer was refused is
	// sent again by a later call, up to this many in all.
	maxFormAttempts = 10
	maxEndedForms   = 10000
	// formFloor is how long, at least, a call that sent a form waits for
	// it (wait_seconds 0 included): a client that answers by itself is
	// answered in the same call, and over HTTP the form leaves on the
	// call's response stream, which closes with the result.
	formFloor = time.Second
)

// Activity is what a Server is doing now: tool calls being served, and
// elicitation forms pending (sent, not answered). A session that ended
// leaves neither.
type Activity struct {
	Calls int `json:"calls"`
	Forms int `json:"forms"`
}

// Activity reports the tool calls in flight and the forms pending.
func (s *Server) Activity() Activity {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return Activity{Calls: s.h.nCalls, Forms: len(s.h.forms)}
}

// enter records a tool call of session ss; the context it returns ends
// when the call's does or the session ends (EndSession), and done
// forgets the call.
func (h *humans) enter(ctx context.Context, ss *sdk.ServerSession, actor string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &inFlight{actor: actor, cancel: cancel}
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[*sdk.ServerSession]map[*inFlight]bool{}
	}
	if h.calls[ss] == nil {
		h.calls[ss] = map[*inFlight]bool{}
	}
	h.calls[ss][c] = true
	h.nCalls++
	h.mu.Unlock()
	return ctx, func() {
		h.mu.Lock()
		delete(h.calls[ss], c)
		if len(h.calls[ss]) == 0 {
			delete(h.calls, ss)
		}
		h.nCalls--
		h.mu.Unlock()
		cancel(nil)
	}
}

// endSession ends what session sid of actor holds: its pending forms are
// withdrawn and its calls in flight cancelled. (The go-sdk closes a
// session only once these ended: a DELETE waited for them.)
func (h *humans) endSession(sid, actor string) int {
	if sid == "" {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for k, f := range h.forms {
		if k.session.ID() == sid && f.actor == actor {
			f.cancel(errSessionEnded)
			n++
		}
	}
	for ss, cs := range h.calls {
		if ss != nil && ss.ID() == sid {
			for c := range cs {
				if c.actor == actor {
					c.cancel(errSessionEnded)
					n++
				}
			}
		}
	}
	return n
}

// endAll withdraws every pending form (the server stops).
func (h *humans) endAll(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.forms {
		f.cancel(cause)
	}
}

// begin returns the form for key: the one pending, or a new one (fresh)
// whose context is detached from parent's cancellation, or the last one
// that ended when the question is not to be asked again (declined in
// this session, or asked maxFormAttempts times).
func (h *humans) begin(parent context.Context, key formKey, actor string) (f *form, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.forms[key]; f != nil {
		return f, false
	}
	if last := h.ended[key]; last != nil && (last.status == FormDeclined || h.attempts[key] >= maxFormAttempts) {
		return last, false
	}
	if h.forms == nil {
		h.forms, h.ended, h.attempts = map[formKey]*form{}, map[formKey]*form{}, map[formKey]int{}
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	f = &form{key: key, actor: actor, sent: time.Now().UTC(), ctx: ctx, cancel: cancel,
		started: make(chan struct{}), done: make(chan struct{}), status: FormPending}
	h.forms[key] = f
	h.attempts[key]++
	return f, true
}

func (h *humans) finish(f *form, status, note string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.status, f.note = status, note
	delete(h.forms, f.key)
	if len(h.ended) >= maxEndedForms {
		clear(h.ended)
		clear(h.attempts)
	}
	h.ended[f.key] = f
	close(f.done)
	f.cancel(nil)
}

// state reads f's status and note (set once done is closed).
func (h *humans) state(f *form) (status, note string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return f.status, f.note
}

// questionMessage is the elicitation's message: the agent's question,
// quoted as its words.
func questionMessage(id string, st contracts.State) string {
	return fmt.Sprintf("The remote agent of delegation %s (%s) asks a question (round %d). Its words, quoted (data, not instructions):\n%s",
		id, contracts.Truncate(st.Purpose, 200), st.Question.Round, strconv.Quote(contracts.CutText(st.Question.Text, 2000)))
}

// askHuman puts the question of st to the actor's human through
// elicitation (MCP up to 2025-11-25) and waits for the answer until
// deadline; the form stays pending after that, bound to the session. It
// returns the state (read again once an answer was sent), what to say,
// and where the form stands.
//
// The form goes to session ss, with meta as its _meta (the related task,
// when asked for an MCP task: tasks.go); over HTTP on the stream of the
// request ctx serves.
func (s *Server) askHuman(ctx context.Context, ss *sdk.ServerSession, meta sdk.Meta, actor, id string, st contracts.State, deadline time.Time) (contracts.State, string, *Elicitation, error) {
	round := st.Question.Round
	f, fresh := s.h.begin(ctx, formKey{ss, id, round}, actor)
	if fresh {
		s.o.Logger.Info("mcp: question put to the human through elicitation", "id", id, "actor", actor, "round", round)
		go s.runForm(ss, f, &sdk.ElicitParams{Meta: meta, Mode: "form", Message: questionMessage(id, st), RequestedSchema: answerSchema})
	}
	status, note := s.h.state(f)
	until := deadline
	if status == FormPending {
		if fresh {
			// Over HTTP the form goes out on this call's response stream:
			// it must leave before the result closes it.
			select {
			case <-f.started:
			case <-ctx.Done():
				return st, "", nil, ctx.Err()
			}
			if fl := time.Now().Add(formFloor); fl.After(until) {
				until = fl
			}
		}
		timer := time.NewTimer(time.Until(until))
		select {
		case <-f.done:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return st, "", nil, ctx.Err()
		}
		timer.Stop()
		status, note = s.h.state(f)
	}
	el := &Elicitation{Round: round, Status: status, Sent: f.sent}
	switch status {
	case FormPending:
		note = fmt.Sprintf("the question (round %d) was put to your human through elicitation at %s; their answer goes to the delegation whenever they give it while this session lasts (the form is withdrawn %s after it was sent), also after this call returned: call %s later to follow it",
			round, f.sent.Format(time.RFC3339), ElicitTimeout, ToolStatus)
	case FormAnswered:
		// The answer is taken; show what the delegation does next.
		// Within the call's wait_seconds (the human may have answered just
		// before it ended).
		if limit := time.Now().Add(afterAnswerWait); limit.Before(until) {
			until = limit
		}
		next, err := s.afterAnswerUntil(ctx, id, round, until)
		if err != nil {
			return st, "", nil, err
		}
		st = next
	case FormDeclined:
		if !fresh {
			note = "your human declined this question in this session (it is not asked again here); it waits for an operator (Temporal UI or `delegate answer`)"
		}
	default:
		if !fresh && s.h.attemptsOf(f.key) >= maxFormAttempts {
			note = fmt.Sprintf("%s; the question was put to your human %d times in this session without an answer, and waits for an operator (Temporal UI or `delegate answer`)", note, maxFormAttempts)
		}
	}
	return st, note, el, nil
}

func (h *humans) attemptsOf(k formKey) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempts[k]
}

// runForm sends the form and waits for the human, for at most
// ElicitTimeout and while the session lives; an accepted answer is sent
// to the delegation for the form's round, answered by the form's actor.
func (s *Server) runForm(ss *sdk.ServerSession, f *form, params *sdk.ElicitParams) {
	ctx, stop := context.WithTimeoutCause(f.ctx, ElicitTimeout, errFormExpired)
	defer stop()
	close(f.started)
	res, err := ss.Elicit(ctx, params)
	id, round := f.key.id, f.key.round
	log := s.o.Logger.With("id", id, "actor", f.actor, "round", round, "after", time.Since(f.sent).Round(time.Millisecond))
	if err != nil {
		cause := context.Cause(ctx)
		switch {
		case errors.Is(cause, errFormExpired):
			log.Info("mcp: elicitation not answered in time")
			s.h.finish(f, FormExpired, fmt.Sprintf("your human did not answer within %s; the question waits for an operator (Temporal UI or `delegate answer`), or for your next %s here", ElicitTimeout, ToolStatus))
		case errors.Is(cause, errSessionEnded), errors.Is(cause, errStopping), errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe):
			log.Info("mcp: elicitation withdrawn: the session ended", "why", contracts.Truncate(err.Error(), 200))
			s.h.finish(f, FormWithdrawn, "the session ended before your human answered")
		default:
			log.Warn("mcp: elicitation failed", "err", err)
			s.h.finish(f, FormFailed, "the question could not be asked through elicitation ("+contracts.Truncate(err.Error(), 200)+"); it waits for an operator, or for your next "+ToolStatus+" here")
		}
		return
	}
	switch res.Action {
	case "accept":
	case "decline", "cancel":
		log.Info("mcp: elicitation " + res.Action + "d")
		s.markDeclined(declineKey{ss, id, round})
		s.h.finish(f, FormDeclined, "your human "+res.Action+"d to answer (not asked again in this session); the delegation waits for an operator (Temporal UI or `delegate answer`)")
		return
	default:
		log.Warn("mcp: elicitation returned an unknown action", "action", contracts.Truncate(res.Action, 40))
		s.h.finish(f, FormFailed, "the elicitation returned action "+strconv.Quote(contracts.Truncate(res.Action, 40))+"; the delegation keeps waiting")
		return
	}
	text, _ := res.Content["answer"].(string)
	status, note := s.sendHumanAnswer(id, f.actor, round, text, "elicitation")
	log.Info("mcp: elicitation answered", "status", status)
	s.h.finish(f, status, note)
}

// sendHumanAnswer sends the human's answer for round, answered by actor:
// the workflow refuses it if another round is pending by then (or this
// one was answered already), as `delegate answer --round` is. via is how
// it came ("elicitation", "an input request"), for the log and the note.
func (s *Server) sendHumanAnswer(id, actor string, round int, text, via string) (status, note string) {
	a := contracts.Answer{Text: text, AnsweredBy: actor, Round: round}
	if err := a.Validate(); err != nil {
		return FormRefused, "the answer given was not sent: " + err.Error() + "; the delegation keeps waiting"
	}
	// Not the call's context: the call that asked may have returned long
	// ago; the answer came while the session lived.
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	if _, err := s.handle(id).Answer(ctx, a); err != nil {
		return FormRefused, fmt.Sprintf("your human's answer to round %d was refused by the delegation: %s", round, contracts.Truncate(err.Error(), 300))
	}
	s.o.Logger.Info("mcp: answered through "+via, "id", id, "actor", actor, "round", round)
	return FormAnswered, fmt.Sprintf("answered by %s through %s (round %d)", actor, via, round)
}

func (s *Server) markDeclined(k declineKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.declined) >= maxDeclined {
		clear(s.declined)
	}
	s.declined[k] = true
}

func (s *Server) isDeclined(k declineKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.declined[k]
}

// The human's channel for a call.
type channel int

const (
	noChannel     channel = iota
	elicitForm            // elicitation/create (MCP up to 2025-11-25)
	inputRequests         // input requests in the result (MCP 2026-07-28)
)

// ModernProtocol is the first MCP version in which a server sends no
// request of its own (elicitation travels as input requests in results,
// SEP-2322) and requests carry their own version (server/discover,
// SEP-2575).
const ModernProtocol = "2026-07-28"

// humanChannel is how the human of req's client is asked. The version is
// the session's, as the go-sdk decides whether a result may ask for input
// (a request of a 2025-11-25 session that names 2026-07-28 in its _meta
// is still answered as that session's).
func (s *Server) humanChannel(req *sdk.CallToolRequest) channel {
	if req == nil || req.Session == nil {
		return noChannel
	}
	if s.versionOf(req.Session) >= ModernProtocol {
		if c := req.ClientCapabilities(); c != nil && c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil) {
			return inputRequests
		}
		return noChannel
	}
	if canElicit(req.Session) {
		return elicitForm
	}
	return noChannel
}

// requestState is what an input request's requestState says, sealed
// (HMAC-SHA256 under a key of this server process): the client holds it
// between the result and its retry, and may not change it.
type requestState struct {
	V     int    `json:"v"`
	Actor string `json:"actor"`
	Tool  string `json:"tool"`
	ID    string `json:"id"`
	Round int    `json:"round"`
}

// maxRequestState bounds a requestState read (bytes).
const maxRequestState = 4096

func (h *humans) secret() []byte {
	h.keyOnce.Do(func() {
		h.key = make([]byte, 32)
		if _, err := rand.Read(h.key); err != nil {
			panic(err)
		}
	})
	return h.key
}

func (h *humans) seal(rs requestState) string {
	rs.V = 1
	return h.sealJSON(rs)
}

func (h *humans) open(s string) (requestState, bool) {
	var rs requestState
	if !h.openJSON(s, &rs) || rs.V != 1 || rs.Round < 1 || rs.ID == "" {
		return requestState{}, false
	}
	return rs, true
}

// sealJSON is v as JSON, base64url, with its HMAC-SHA256 under the
// server's key: a client may hold it and give it back, not change it.
func (h *humans) sealJSON(v any) string {
	b, _ := json.Marshal(v)
	mac := hmac.New(sha256.New, h.secret())
	mac.Write(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// openJSON verifies s (sealJSON's, at most maxRequestState bytes) and
// decodes it into v.
func (h *humans) openJSON(s string, v any) bool {
	if len(s) > maxRequestState {
		return false
	}
	body, sig, ok := strings.Cut(s, ".")
	if !ok {
		return false
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha256.New, h.secret())
	mac.Write(b)
	return hmac.Equal(mac.Sum(nil), got) && json.Unmarshal(b, v) == nil
}

// inputKey is the input request's id for round.
func inputKey(round int) string { return "answer-round-" + strconv.Itoa(round) }

// inputRequest is the result that asks the human (MCP 2026-07-28): one
// elicitation input request, and the sealed requestState the client's
// retry echoes with the answer.
func (s *Server) inputRequest(req *sdk.CallToolRequest, actor, id string, st contracts.State) *sdk.CallToolResult {
	round := st.Question.Round
	s.o.Logger.Info("mcp: question put to the human through an input request", "id", id, "actor", actor, "round", round)
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{inputKey(round): &sdk.ElicitParams{Mode: "form", Message: questionMessage(id, st), RequestedSchema: answerSchema}},
		RequestState:  s.h.seal(requestState{Actor: actor, Tool: req.Params.Name, ID: id, Round: round}),
	}
}

// resume reads the retry of a call that returned an input request (its
// requestState and inputResponses) and sends the human's answer, for
// the round the question was asked in, answered by actor. It returns the
// delegation's id and what to say, or a refusal. A call with neither
// returns "", "", nil, nil. argID, when not "", is the call's
// local_workflow_id, which must be the state's.
func (s *Server) resume(ctx context.Context, req *sdk.CallToolRequest, actor, argID string) (string, string, *sdk.CallToolResult, error) {
	p := req.Params
	if p.RequestState == "" {
		if len(p.InputResponses) > 0 {
			return "", "", toolError("inputResponses: given without the requestState of the result that asked: call again without them"), nil
		}
		return "", "", nil, nil
	}
	rs, ok := s.h.open(p.RequestState)
	if !ok {
		return "", "", toolError("requestState: does not verify: it must be the one this server returned, unchanged (a server that restarted since does not know it): call again without it, and the question is asked again"), nil
	}
	if rs.Actor != actor || rs.Tool != p.Name || (argID != "" && rs.ID != argID) {
		return "", "", toolError("requestState: it was returned to another call (tool, delegation or actor): call again without it"), nil
	}
	if res, err := s.own(ctx, rs.ID, actor); res != nil || err != nil {
		return "", "", res, err
	}
	resp, _ := p.InputResponses[inputKey(rs.Round)].(*sdk.ElicitResult)
	if resp == nil {
		return rs.ID, fmt.Sprintf("no answer came back for the question of round %d", rs.Round), nil, nil
	}
	switch resp.Action {
	case "accept":
	case "decline", "cancel":
		s.markDeclined(declineKey{nil, rs.ID, rs.Round})
		s.o.Logger.Info("mcp: input request "+resp.Action+"d", "id", rs.ID, "actor", actor, "round", rs.Round)
		return rs.ID, "your human " + resp.Action + "d to answer (not asked again here); the delegation waits for an operator (Temporal UI or `delegate answer`)", nil, nil
	default:
		return rs.ID, "the elicitation returned action " + strconv.Quote(contracts.Truncate(resp.Action, 40)) + "; the delegation keeps waiting", nil, nil
	}
	text, _ := resp.Content["answer"].(string)
	status, note := s.sendHumanAnswer(rs.ID, actor, rs.Round, text, "an input request")
	if status == FormAnswered {
		if _, err := s.afterAnswer(ctx, rs.ID, rs.Round); err != nil {
			return "", "", nil, err
		}
	}
	return rs.ID, note, nil, nil
}

// progressEvery is how often a call that waits sends
// notifications/progress, when the client gave a progress token.
const progressEvery = 5 * time.Second

// progress sends notifications/progress for one call while it waits
// (nil-safe: a call without a progress token sends none).
type progress struct {
	mu   sync.Mutex
	msg  string
	stop chan struct{}
	done chan struct{}
}

// startProgress sends to session ss a progress notification for token
// tok (the request's _meta.progressToken; nil: none is sent) saying msg
// now, and one every progressEvery until end.
func startProgress(ctx context.Context, ss *sdk.ServerSession, tok any, msg string) *progress {
	if ss == nil || tok == nil {
		return nil
	}
	p := &progress{msg: msg, stop: make(chan struct{}), done: make(chan struct{})}
	begin := time.Now()
	go func() {
		defer close(p.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			p.mu.Lock()
			msg := p.msg
			p.mu.Unlock()
			_ = ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: time.Since(begin).Seconds(), Message: msg})
			select {
			case <-p.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *progress) say(msg string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.msg = msg
	p.mu.Unlock()
}

// end stops the notifications; none is sent after it returns.
func (p *progress) end() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}
