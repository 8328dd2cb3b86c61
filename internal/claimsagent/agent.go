package claimsagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Scenarios.
const (
	ScenarioLostParcel = "lost-parcel"
	ScenarioInstant    = "instant"
	ScenarioFail       = "fail"
	ScenarioWrongKind  = "wrong-kind"
	ScenarioSlow       = "slow"
	ScenarioMixed      = "mixed"
	ScenarioStubborn   = "stubborn"
	ScenarioAuth       = "auth"
	ScenarioHang       = "hang"
	ScenarioThink      = "think"
	// ScenarioTwoQuestions asks twice: a photo of the box, then, after
	// the first follow-up, the receipt.
	ScenarioTwoQuestions = "two-questions"
)

// Scenarios lists every scenario with what the agent does in it, in the
// order `claims-agent --help` and docs/claims-agent.md give them.
var Scenarios = []struct{ Name, Does string }{
	{ScenarioLostParcel, "WORKING, then INPUT_REQUIRED asking for a photo of the box; any follow-up completes it with claim_opened (the default)"},
	{ScenarioTwoQuestions, "as lost-parcel, but the first follow-up is answered with a second INPUT_REQUIRED asking for the receipt; the second follow-up completes it"},
	{ScenarioInstant, "completes at once with one claim_opened artifact"},
	{ScenarioFail, "FAILED with the reason \"no shipment found for order ...\""},
	{ScenarioWrongKind, "completes with an artifact named refund_issued (not allowed by the example contracts)"},
	{ScenarioMixed, "completes with one valid claim_opened and seven artifacts that each break one contract rule"},
	{ScenarioSlow, "stays WORKING until canceled (try cancel and the deadline)"},
	{ScenarioStubborn, "refuses CancelTask (TaskNotCancelable) and completes after --stubborn-delay (try cancel: cancel_unconfirmed)"},
	{ScenarioAuth, "AUTH_REQUIRED; a follow-up carrying \"Authorization: Bearer $CLAIMS_AGENT_AUTH_TOKEN\" lets it complete"},
	{ScenarioHang, "creates the task and completes it, but answers the first delivery of the message only after 40 s (longer than the worker's 30 s send timeout: unknown_outcome)"},
	{ScenarioThink, "works inside the send, as agent frameworks that run their model there do: ignores returnImmediately (a send is answered when the task is done), completes after --think-delay (default 40 s), and makes a new task for every delivery of a messageId (no deduplication); a streaming send gets the task at once"},
}

// DefaultThinkDelay is how long a "think" task works before it completes
// unless Config.ThinkDelay says otherwise.
const DefaultThinkDelay = 40 * time.Second

// DefaultHangDelay is how long scenario "hang" holds its first answer
// unless Config.HangDelay says otherwise.
const DefaultHangDelay = 40 * time.Second

// DefaultStubbornDelay is how long a "stubborn" task works before it
// completes unless Config.StubbornDelay says otherwise.
const DefaultStubbornDelay = 2 * time.Second

// Question is the status message of the INPUT_REQUIRED state.
const Question = "Please send a photo of the box the parcel was shipped in."

// SecondQuestion is the status message of the second INPUT_REQUIRED of scenario
// "two-questions".
const SecondQuestion = "Please send the receipt of the order too."

// ArtifactKind is the name of the artifact of a completed claim.
const ArtifactKind = "claim_opened"

var orderPattern = regexp.MustCompile(`\b[A-Z]{1,4}-\d{1,10}\b`)

// executor implements a2asrv.AgentExecutor.
type executor struct {
	workDelay     time.Duration
	hangDelay     time.Duration
	stubbornDelay time.Duration
	thinkDelay    time.Duration
	authToken     string
	authWait      map[a2a.TaskID]chan struct{}

	mu        sync.Mutex
	scenarios map[a2a.TaskID]string
	orders    map[a2a.TaskID]string
	// followUps counts the follow-ups each task's executions took.
	followUps map[a2a.TaskID]int
}

func newExecutor(cfg Config) *executor {
	e := &executor{workDelay: cfg.WorkDelay, hangDelay: cfg.HangDelay, stubbornDelay: cfg.StubbornDelay, thinkDelay: cfg.ThinkDelay,
		scenarios: map[a2a.TaskID]string{}, orders: map[a2a.TaskID]string{}, followUps: map[a2a.TaskID]int{}, authWait: map[a2a.TaskID]chan struct{}{}}
	if e.hangDelay == 0 {
		e.hangDelay = DefaultHangDelay
	}
	if e.stubbornDelay == 0 {
		e.stubbornDelay = DefaultStubbornDelay
	}
	if e.thinkDelay == 0 {
		e.thinkDelay = DefaultThinkDelay
	}
	return e
}

func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			e.start(ctx, ec, yield)
			return
		}
		e.followUp(ctx, ec, yield)
	}
}

func (e *executor) start(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	scenario, order := readRequest(ec.Message)
	e.mu.Lock()
	e.scenarios[ec.TaskID], e.orders[ec.TaskID] = scenario, order
	e.mu.Unlock()

	if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
		return
	}
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	if !e.pause(ctx) {
		return
	}
	switch scenario {
	case ScenarioInstant, ScenarioHang:
		e.complete(ec, order, ArtifactKind, yield)
	case ScenarioFail:
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("no shipment found for order "+order))
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg), nil)
	case ScenarioWrongKind:
		e.complete(ec, order, "refund_issued", yield)
	case ScenarioSlow:
		<-ctx.Done()
	case ScenarioThink:
		t := time.NewTimer(e.thinkDelay)
		defer t.Stop()
		select {
		case <-t.C:
			e.complete(ec, order, ArtifactKind, yield)
		case <-ctx.Done():
		}
	case ScenarioStubborn:
		// Refuses to be canceled and completes after Config.StubbornDelay.
		t := time.NewTimer(e.stubbornDelay)
		defer t.Stop()
		select {
		case <-t.C:
			e.complete(ec, order, ArtifactKind, yield)
		case <-ctx.Done():
		}
	case ScenarioAuth:
		// In-task authorization (A2A 1.0 §7.6): the execution stays
		// active and goes on once the credential arrives (see
		// deliverAuth), here with a follow-up message to the task.
		ch := make(chan struct{})
		e.mu.Lock()
		e.authWait[ec.TaskID] = ch
		e.mu.Unlock()
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Sign in to the claims system to continue."))
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateAuthRequired, msg), nil) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) || !e.pause(ctx) {
			return
		}
		e.complete(ec, order, ArtifactKind, yield)
	case ScenarioMixed:
		for _, art := range MixedArtifacts(ec, order) {
			if !yield(art, nil) {
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	default:
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(Question))
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg), nil)
	}
}

func (e *executor) followUp(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	e.mu.Lock()
	order, scenario := e.orders[ec.TaskID], e.scenarios[ec.TaskID]
	e.followUps[ec.TaskID]++
	n := e.followUps[ec.TaskID]
	e.mu.Unlock()
	if order == "" && len(ec.StoredTask.History) > 0 {
		scenario, order = readRequest(ec.StoredTask.History[0])
	}
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	if !e.pause(ctx) {
		return
	}
	if scenario == ScenarioTwoQuestions && n == 1 {
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(SecondQuestion))
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg), nil)
		return
	}
	e.complete(ec, order, ArtifactKind, yield)
}

// deliverAuth takes a message to a task waiting in AUTH_REQUIRED: it
// reports whether the task waits, and lets it go on when the message's call
// carried "Authorization: Bearer <AuthToken>".
func (e *executor) deliverAuth(ctx context.Context, tid a2a.TaskID) (waiting, accepted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.authWait[tid]
	if !ok {
		return false, false
	}
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok || e.authToken == "" {
		return true, false
	}
	v, _ := cc.ServiceParams().Get("Authorization")
	if len(v) != 1 || v[0] != "Bearer "+e.authToken {
		return true, false
	}
	close(ch)
	delete(e.authWait, tid)
	return true, true
}

func (e *executor) complete(ec *a2asrv.ExecutorContext, order, kind string, yield func(a2a.Event, error) bool) {
	art := a2a.NewArtifactEvent(ec, a2a.NewDataPart(map[string]any{"claim_id": newClaimID(), "order_id": order}))
	art.Artifact.Name = kind
	if !yield(art, nil) {
		return
	}
	yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
}

func (e *executor) pause(ctx context.Context) bool {
	if e.workDelay <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(e.workDelay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e.mu.Lock()
		scenario, known := e.scenarios[ec.TaskID]
		e.mu.Unlock()
		if !known && ec.StoredTask != nil && len(ec.StoredTask.History) > 0 {
			scenario, _ = readRequest(ec.StoredTask.History[0]) // a task from before a restart
		}
		if scenario == ScenarioStubborn {
			yield(nil, a2a.ErrTaskNotCancelable)
			return
		}
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("claim canceled on request"))
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, msg), nil)
	}
}

// readRequest takes the scenario and the order id from the first message.
func readRequest(m *a2a.Message) (scenario, order string) {
	scenario = ScenarioLostParcel
	if m == nil {
		return scenario, "unknown"
	}
	var texts []string
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if t := p.Text(); t != "" {
			texts = append(texts, t)
		}
		if d, ok := p.Data().(map[string]any); ok {
			if s, ok := d["scenario"].(string); ok && s != "" {
				scenario = s
			}
			if o, ok := d["order_id"].(string); ok && o != "" {
				order = o
			}
		}
	}
	if order == "" {
		order = orderPattern.FindString(strings.Join(texts, " "))
	}
	if order == "" {
		order = "unknown"
	}
	return scenario, order
}

func newClaimID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("CLM-%s", strings.ToUpper(hex.EncodeToString(b)))
}

// MixedArtifacts are the artifacts of scenario "mixed", in order, with the
// artifact ids "good", "extra-field", "wrong-kind", "wrong-type",
// "out-of-scope", "claims-approval", "kind-conflict", "image-part". Only
// "good" passes a contract that allows claim_opened with a strict schema
// (claim_id and order_id strings, order_id an x-resource-ref, no other
// field), resource_scope [order], and the default output modes.
func MixedArtifacts(ec *a2asrv.ExecutorContext, order string) []*a2a.TaskArtifactUpdateEvent {
	mk := func(id, name string, meta map[string]any, parts ...*a2a.Part) *a2a.TaskArtifactUpdateEvent {
		ev := a2a.NewArtifactEvent(ec, parts...)
		ev.Artifact.ID, ev.Artifact.Name, ev.Artifact.Metadata = a2a.ArtifactID(id), name, meta
		return ev
	}
	claim := func(extra map[string]any) *a2a.Part {
		d := map[string]any{"claim_id": "CLM-1", "order_id": order}
		for k, v := range extra {
			d[k] = v
		}
		return a2a.NewDataPart(d)
	}
	return []*a2a.TaskArtifactUpdateEvent{
		mk("good", ArtifactKind, nil, claim(nil)),
		mk("extra-field", ArtifactKind, nil, claim(map[string]any{"refund_amount": 100})),
		mk("wrong-kind", "refund_issued", nil, claim(nil)),
		mk("wrong-type", ArtifactKind, nil, a2a.NewDataPart(map[string]any{"claim_id": "CLM-2", "order_id": []any{order}})),
		mk("out-of-scope", ArtifactKind, nil, claim(map[string]any{"order_id": "Z-9999"})),
		mk("claims-approval", ArtifactKind, map[string]any{"approved": true}, claim(nil)),
		mk("kind-conflict", "refund_issued", map[string]any{"output_kind": ArtifactKind}, claim(nil)),
		mk("image-part", ArtifactKind, nil, claim(nil), &a2a.Part{Content: a2a.Raw([]byte{0x89, 'P', 'N', 'G'}), MediaType: "image/png", Filename: "box.png"}),
	}
}
