// Package activities holds every I/O step the Delegation workflow takes, as
// Temporal Activities: ResolveCard, SendMessage, WatchTask, CancelTask.
//
// Each maps its errors to a category of contracts (DESIGN.md principle 6)
// and returns them as a temporal.ApplicationError whose Type is the category:
// "transient" errors are retryable, every other category is not, so the
// workflow sees exactly one handling per category. Logs carry ids and
// categories, never message bodies.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Activities carries the worker-side dependencies of the activities.
// Register a *Activities with the worker; the zero value works.
type Activities struct {
	// Fetcher fetches Agent Cards; nil means a default cards.Fetcher.
	Fetcher *cards.Fetcher
	// DialOptions are used for every a2aclient.Dial.
	DialOptions a2aclient.Options
	// PollInitial and PollMax bound the GetTask polling backoff of WatchTask
	// (defaults 1 s and 30 s; each wait doubles up to PollMax).
	PollInitial, PollMax time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Policy is the authorization policy file (nil or no path: allow all).
	Policy *PolicyFile
	// Credentials is the worker's credential store (nil: none).
	Credentials *a2aclient.Credentials
	// Temporal is a client for ReconcileOpen (nil: reconciliation by
	// schedule is unavailable).
	Temporal client.Client
	// SettleWindow is how long SendMessage reads a task that is still
	// submitted or working before returning it (default 250 ms; negative:
	// none).
	SettleWindow time.Duration
	// SendTimeout bounds one SendMessage call (default 30 s). A call that
	// times out after its request was written has an unknown outcome.
	SendTimeout time.Duration
	// StreamIdle is how long a SubscribeToTask stream may stay without an
	// event before it is closed and the task read with GetTask (default
	// DefaultStreamIdle).
	StreamIdle time.Duration

	once sync.Once
}

// ResolveCardInput names the card and the skill a delegation needs.
type ResolveCardInput struct {
	CardURL string `json:"card_url"`
	Skill   string `json:"skill"`
	// RequireSignature is the contract's require_signed_card.
	RequireSignature bool `json:"require_signature,omitempty"`
}

// ResolvedCard is what the workflow keeps of a resolved card. The
// workflow decides what a missing skill, a missing interface or an
// unverified signature means (first resolution or change detection).
type ResolvedCard struct {
	Agent contracts.AgentInfo `json:"agent"`
	// SkillFound reports whether the card offers the skill.
	SkillFound bool `json:"skill_found"`
	// Skills are the ids of the skills the card offers, when it does not
	// offer the contract's (the first 20, each cut to 100 bytes), so the
	// refusal can name them.
	Skills []string `json:"skills,omitempty"`
	// Interface is the selected interface; InterfaceError says why there
	// is none.
	Interface      contracts.Interface `json:"interface"`
	InterfaceError string              `json:"interface_error,omitempty"`
	Streaming      bool                `json:"streaming"`
	// InputModes are the media types the skill accepts: its inputModes, or
	// the card's defaultInputModes (A2A 1.0 §4.4.5); empty when undeclared.
	InputModes []string `json:"input_modes,omitempty"`
	// Verification is the signature check against the trust store.
	Verification contracts.CardVerification `json:"verification"`
	// SignatureRequired is true when the contract or the trust store
	// requires a verified signature.
	SignatureRequired bool `json:"signature_required"`
}

// Trusted reports whether the card may be used: verified, or no signature
// required.
func (r ResolvedCard) Trusted() bool {
	return !r.SignatureRequired || r.Verification.Status == contracts.SigVerified
}

// ResolveCard fetches the Agent Card through the HTTP guard (or the
// cache), verifies its signatures against the trust store (A2A 1.0
// §8.4.3), looks up the skill, and selects the interface (A2A 1.0 §8.3),
// which must pass the guard. Errors: "transient" (fetch failed, 5xx),
// "card" (refused by the guard, malformed, too large).
func (a *Activities) ResolveCard(ctx context.Context, in ResolveCardInput) (ResolvedCard, error) {
	f := a.fetcher()
	card, err := f.Fetch(ctx, in.CardURL)
	if err != nil {
		var ce *cards.Error
		if errors.As(err, &ce) && ce.Transient() {
			return ResolvedCard{}, a.fail(ctx, "ResolveCard", contracts.CategoryTransient, err)
		}
		return ResolvedCard{}, a.fail(ctx, "ResolveCard", contracts.CategoryCard, err)
	}
	out := ResolvedCard{
		Agent: contracts.AgentInfo{
			Name: card.Parsed.Name, CardURL: card.URL, CardVersion: card.Parsed.Version, CardDigest: card.Digest,
			Signature: card.Verification.Label(),
		},
		Streaming:         card.Parsed.Capabilities.Streaming,
		Verification:      card.Verification,
		SignatureRequired: in.RequireSignature || f.RequireSignature(card.Origin),
	}
	skill, ok := cards.FindSkill(card.Parsed, in.Skill)
	out.SkillFound = ok
	if !ok {
		for _, sk := range card.Parsed.Skills {
			if len(out.Skills) == 20 {
				break
			}
			out.Skills = append(out.Skills, contracts.CutText(sk.ID, 100))
		}
	}
	out.InputModes = skill.InputModes
	if len(out.InputModes) == 0 {
		out.InputModes = card.Parsed.DefaultInputModes
	}
	g := f.Guard()
	iface, err := cards.SelectInterface(card.Parsed, func(u string) error { return g.CheckInterface(u, card.Origin) })
	if err != nil {
		out.InterfaceError = err.Error()
	} else {
		iface.CardOrigin = card.Origin
		iface.Auth = cards.SchemeOf(card.Parsed)
		out.Interface = iface
	}
	a.logger().Info("agent card resolved", "workflow_id", workflowID(ctx), "card_digest", card.Digest,
		"signature", out.Agent.Signature, "from_cache", card.FromCache)
	return out, nil
}

func (a *Activities) fetcher() *cards.Fetcher {
	a.once.Do(func() {
		if a.Fetcher == nil {
			a.Fetcher = &cards.Fetcher{}
		}
	})
	return a.Fetcher
}

// dial makes a client for an interface whose HTTP connections obey the
// guard of the card's origin (unless DialOptions.HTTPClient is set), with
// the credential of the interface's origin from the worker's store, or the
// one named by credentialRef (an operator's answer to AUTH_REQUIRED).
func (a *Activities) dial(ctx context.Context, iface contracts.Interface, credentialRef string, lim contracts.Limits) (*a2aclient.Client, error) {
	opts := a.DialOptions
	if m := int64(lim.WithDefaults().MaxResponseBytes); opts.MaxResponseBytes <= 0 || m < opts.MaxResponseBytes {
		opts.MaxResponseBytes = m
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = a.fetcher().Client(iface.CardOrigin, time.Minute)
	}
	if credentialRef != "" {
		// The secret goes only to an origin the ref is bound to: the
		// interface's URL, which the card on that origin named.
		origin, err := cards.Origin(iface.URL)
		if err != nil {
			return nil, &refError{err: fmt.Errorf("%w: %v", a2aclient.ErrRefNotAllowed, err)}
		}
		secret, err := a.Credentials.ForRef(credentialRef, origin)
		if err != nil {
			return nil, &refError{err: err}
		}
		opts = opts.WithCredential(iface.Auth, secret)
	} else if origin, err := cards.Origin(iface.URL); err == nil {
		if secret, ok := a.Credentials.ForOrigin(origin); ok {
			opts = opts.WithCredential(iface.Auth, secret)
		}
	}
	return a2aclient.Dial(ctx, iface, opts)
}

// SendInput is one outbound message over the selected interface.
type SendInput struct {
	Interface contracts.Interface       `json:"interface"`
	Message   contracts.OutboundMessage `json:"message"`
	// CredentialRef names a credential of the worker's store to use for
	// this call (an answer to AUTH_REQUIRED); the secret never enters
	// history.
	CredentialRef string `json:"credential_ref,omitempty"`
	// Limits bound what the reply may put into history (see bound).
	Limits contracts.Limits `json:"limits"`
}

// SendMessage sends one message (A2A 1.0 §3.1.1). The messageId is chosen
// by the workflow and is the same on every attempt, so a retried send is
// recognised by an agent that deduplicates (A2A 1.0 §3.3.1). Errors:
// "transient" (not sent, or refused with 5xx/429: retried), "unknown_outcome"
// (the request was written and no answer came: not retried),
// "authorization" (401/403), "protocol".
func (a *Activities) SendMessage(ctx context.Context, in SendInput) (contracts.TaskSnapshot, error) {
	c, err := a.dial(ctx, in.Interface, in.CredentialRef, in.Limits)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "SendMessage", err, in.Limits)
	}
	defer c.Close()
	timeout := a.SendTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := keepHeartbeating(sctx, 3*time.Second)
	snap, err := c.SendMessage(sctx, in.Message)
	stop()
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "SendMessage", err, in.Limits)
	}
	snap.Attempt = int(activity.GetInfo(ctx).Attempt)
	snap = a.settle(ctx, c, snap)
	a.logger().Info("a2a message sent", "workflow_id", workflowID(ctx), "message_id", in.Message.MessageID, "task_id", snap.TaskID, "state", snap.State)
	return bound(snap, in.Limits), nil
}

// WatchInput names the task to watch and the state last observed.
type WatchInput struct {
	Interface contracts.Interface `json:"interface"`
	TaskID    string              `json:"task_id"`
	// ContextID is the tracked contextId (empty: not checked).
	ContextID string `json:"context_id,omitempty"`
	// Since is the last state the workflow recorded; WatchTask returns only
	// when the remote state differs from it, or (SinceKey set) when the task
	// waits for input with a status other than SinceKey: a new question.
	Since    contracts.TaskState `json:"since"`
	SinceKey string              `json:"since_key,omitempty"`
	// Within, when set, bounds the watch to that many seconds: the task is
	// then returned as it is, changed or not.
	Within int `json:"within,omitempty"`

	// Stream follows SubscribeToTask (the card declares streaming).
	Stream bool `json:"stream,omitempty"`
	// ReadFirst makes PollTask's first attempt read the task (the
	// workflow has waited an interval already); otherwise the first
	// attempt reads nothing.
	ReadFirst bool `json:"read_first,omitempty"`
	// Limits bound what the result may put into history (see bound).
	Limits contracts.Limits `json:"limits"`
}

// WatchTask follows the task until its state differs from in.Since,
// heartbeating all the while, so that history grows per state change and
// not per poll. When the card declares streaming (in.Stream) it follows
// SubscribeToTask (A2A 1.0 §3.1.6); a stream that drops is followed by a
// GetTask, so no state change is lost, then by a new subscription (after
// three drops in a row it polls). Otherwise, or then, it polls GetTask (A2A
// 1.0 §3.1.3) with backoff from PollInitial doubling to PollMax. A retry
// after a worker crash starts the same way. Transient errors are retried
// inside. Errors: "authorization", "protocol" (for example TaskNotFound).
func (a *Activities) WatchTask(ctx context.Context, in WatchInput) (contracts.TaskSnapshot, error) {
	c, err := a.dial(ctx, in.Interface, "", in.Limits)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "WatchTask", err, in.Limits)
	}
	defer c.Close()
	if in.Within <= 0 {
		return a.watch(ctx, c, in)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(in.Within)*time.Second)
	defer cancel()
	snap, err := a.watch(wctx, c, in)
	if err == nil || ctx.Err() != nil || wctx.Err() == nil {
		return snap, err
	}
	// The window passed with no change: the task as it is now.
	snap, err = c.GetTask(ctx, in.TaskID, in.ContextID)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "WatchTask", err, in.Limits)
	}
	return bound(snap, in.Limits), nil
}

func (a *Activities) watch(ctx context.Context, c *a2aclient.Client, in WatchInput) (contracts.TaskSnapshot, error) {
	hb := heartbeat{}
	if in.Stream {
		for drops := 0; drops < 3; drops++ {
			snap, changed, err := a.follow(ctx, c, in, &hb)
			if err != nil {
				return contracts.TaskSnapshot{}, err
			}
			if changed {
				return bound(snap, in.Limits), nil
			}
			hb.Drops++
			activity.RecordHeartbeat(ctx, hb)
		}
	}
	wait, maxWait := a.PollInitial, a.PollMax
	if wait <= 0 {
		wait = time.Second
	}
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	for {
		snap, changed, err := a.poll(ctx, c, in, &hb)
		if err != nil {
			return contracts.TaskSnapshot{}, err
		}
		if changed {
			return bound(snap, in.Limits), nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return contracts.TaskSnapshot{}, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, maxWait)
	}
}

// poll reads the task once; changed reports a state other than in.Since.
// A transient error counts as no change.
func (a *Activities) poll(ctx context.Context, c *a2aclient.Client, in WatchInput, hb *heartbeat) (contracts.TaskSnapshot, bool, error) {
	snap, err := c.GetTask(ctx, in.TaskID, in.ContextID)
	hb.Polls++
	defer activity.RecordHeartbeat(ctx, *hb)
	if err != nil {
		var ce *a2aclient.CallError
		if errors.As(err, &ce) && ce.Retryable() {
			hb.Failures++
			return contracts.TaskSnapshot{}, false, nil
		}
		if ctx.Err() != nil {
			return contracts.TaskSnapshot{}, false, ctx.Err()
		}
		return contracts.TaskSnapshot{}, false, a.callFail(ctx, "WatchTask", err, in.Limits)
	}
	return snap, changedFrom(in, snap), nil
}

// changedFrom reports whether snap differs from what the workflow last
// recorded (in.Since, in.SinceKey).
func changedFrom(in WatchInput, snap contracts.TaskSnapshot) bool {
	if snap.State != in.Since {
		return true
	}
	return in.SinceKey != "" && snap.State.Interrupted() && snap.StatusKey != in.SinceKey
}

// ErrTypeUnchanged is the ApplicationError type of PollTask when the task
// has not changed: retryable and benign (logged at debug level, not
// counted as a failure), so that Temporal reads the task again after the
// retry interval.
const ErrTypeUnchanged = "task_unchanged"

// PollTask reads the task once (A2A 1.0 §3.1.3) and returns it when it
// differs from in.Since / in.SinceKey; otherwise it fails with
// ErrTypeUnchanged. The workflow runs it with a fixed retry interval (the
// waiting cadence): Temporal's pattern for infrequent polling, which keeps
// no worker slot and adds no history between reads. Transient read errors
// are retried the same way. The first attempt reads nothing, unless
// in.ReadFirst: the workflow has just read the task. Errors: "authorization", "protocol" (for
// example TaskNotFound: the agent no longer knows the task).
func (a *Activities) PollTask(ctx context.Context, in WatchInput) (contracts.TaskSnapshot, error) {
	if activity.GetInfo(ctx).Attempt <= 1 && !in.ReadFirst {
		// The workflow has just read the task: the first read is one
		// interval away.
		return contracts.TaskSnapshot{}, temporal.NewApplicationErrorWithOptions("the first read is one interval away", ErrTypeUnchanged,
			temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
	}
	c, err := a.dial(ctx, in.Interface, "", in.Limits)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "PollTask", err, in.Limits)
	}
	defer c.Close()
	snap, err := c.GetTask(ctx, in.TaskID, in.ContextID)
	if err != nil {
		var ce *a2aclient.CallError
		if errors.As(err, &ce) && ce.Retryable() {
			return contracts.TaskSnapshot{}, temporal.NewApplicationErrorWithOptions(
				contracts.CutText(err.Error(), in.Limits.WithDefaults().MaxTextChars), string(contracts.CategoryTransient),
				temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
		}
		return contracts.TaskSnapshot{}, a.callFail(ctx, "PollTask", err, in.Limits)
	}
	if !changedFrom(in, snap) {
		return contracts.TaskSnapshot{}, temporal.NewApplicationErrorWithOptions("the task is still "+string(snap.State), ErrTypeUnchanged,
			temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
	}
	return bound(snap, in.Limits), nil
}

// follow reads the task, then subscribes to it until a state other than
// in.Since shows (then the full task is read again) or the stream ends;
// after the stream ends the task is read once more, so that a change made
// while the stream was down is seen.
func (a *Activities) follow(ctx context.Context, c *a2aclient.Client, in WatchInput, hb *heartbeat) (contracts.TaskSnapshot, bool, error) {
	if snap, changed, err := a.poll(ctx, c, in, hb); err != nil || changed {
		return snap, changed, err
	}
	var as contracts.Assembly
	chunks := 0
	// A stream that sends nothing (or only comments) must not hold the
	// activity: it heartbeats all the while (so that a cancel from the
	// workflow, which moved on, reaches it and closes the connection), and
	// a stream idle for Activities.StreamIdle is closed and the task read instead.
	sctx, closeStream := context.WithCancel(ctx)
	defer closeStream()
	stop := keepHeartbeating(sctx, 10*time.Second)
	defer stop()
	idle := time.AfterFunc(a.streamIdle(), closeStream)
	defer idle.Stop()
	for ev, err := range c.SubscribeStates(sctx, in.TaskID) {
		if err != nil {
			break
		}
		idle.Reset(a.streamIdle())
		hb.Events++
		activity.RecordHeartbeat(ctx, *hb)
		if ev.Chunk != nil && chunks < maxStreamChunks {
			chunks++
			as.Add(*ev.Chunk)
		}
		if ev.State != "" && changedFrom(in, contracts.TaskSnapshot{State: ev.State, StatusKey: ev.StatusKey}) {
			break
		}
	}
	if ctx.Err() != nil {
		return contracts.TaskSnapshot{}, false, ctx.Err()
	}
	snap, changed, err := a.poll(ctx, c, in, hb)
	return withStreamed(snap, &as), changed, err
}

// DefaultStreamIdle is Activities.StreamIdle when unset.
const DefaultStreamIdle = 2 * time.Minute

func (a *Activities) streamIdle() time.Duration {
	if a.StreamIdle > 0 {
		return a.StreamIdle
	}
	return DefaultStreamIdle
}

// maxStreamChunks bounds the artifact chunks kept from one stream.
const maxStreamChunks = 1024

// withStreamed: a task that completed with no artifacts in its own record,
// while its stream delivered artifact chunks, gets the artifacts assembled
// from the chunks (contracts.Assembly); a chunk that appended to an
// artifact never started becomes a withheld artifact, rejected with its
// reason. The task's own record wins when it has artifacts.
func withStreamed(snap contracts.TaskSnapshot, as *contracts.Assembly) contracts.TaskSnapshot {
	arts := as.Artifacts()
	if snap.State != contracts.TaskStateCompleted || len(snap.Artifacts) > 0 || (len(arts) == 0 && len(as.Rejected) == 0) {
		return snap
	}
	for _, r := range as.Rejected {
		arts = append(arts, contracts.Artifact{ArtifactID: r.ArtifactID, Parts: []contracts.Part{}, Withheld: r.Reason})
	}
	snap.Artifacts = arts
	return snap
}

// keepHeartbeating records a heartbeat every interval until stop is
// called, so that a worker that dies mid-call is noticed by the heartbeat
// timeout while a live one is not timed out.
func keepHeartbeating(ctx context.Context, every time.Duration) (stop func()) {
	done := make(chan struct{})
	activity.RecordHeartbeat(ctx)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

type heartbeat struct {
	Polls    int `json:"polls"`
	Failures int `json:"failures"`
	Events   int `json:"events,omitempty"`
	Drops    int `json:"drops,omitempty"`
}

// settle: a task that is still SUBMITTED or WORKING right after the send
// (returnImmediately) is read again a few times within SettleWindow, so
// that an agent that answers at once costs one activity, not two. A read
// that fails changes nothing: the send has succeeded either way.
// SettleFirstRead is when settle first reads a task the send reply left
// submitted or working; each read after doubles the wait. An agent that
// finishes at once has usually finished by then.
const SettleFirstRead = 2 * time.Millisecond

func (a *Activities) settle(ctx context.Context, c *a2aclient.Client, snap contracts.TaskSnapshot) contracts.TaskSnapshot {
	window := a.SettleWindow
	if window == 0 {
		window = 250 * time.Millisecond
	}
	if window < 0 || snap.TaskID == "" {
		return snap
	}
	deadline := time.Now().Add(window)
	wait := SettleFirstRead
	for (snap.State == contracts.TaskStateSubmitted || snap.State == contracts.TaskStateWorking) && time.Now().Add(wait).Before(deadline) {
		time.Sleep(wait)
		wait *= 2
		next, err := c.GetTask(ctx, snap.TaskID, snap.ContextID)
		if err != nil {
			break
		}
		next.Attempt = snap.Attempt
		snap = next
	}
	return snap
}

// GetTaskInput names a task to read once.
type GetTaskInput struct {
	Interface contracts.Interface `json:"interface"`
	TaskID    string              `json:"task_id"`
	ContextID string              `json:"context_id,omitempty"`
	Limits    contracts.Limits    `json:"limits"`
}

// GetTask reads the task once (A2A 1.0 §3.1.3): for adopting a task after
// an unknown outcome, and for reconciliation. Errors: "transient",
// "authorization", "protocol" (TaskNotFound).
func (a *Activities) GetTask(ctx context.Context, in GetTaskInput) (contracts.TaskSnapshot, error) {
	c, err := a.dial(ctx, in.Interface, "", in.Limits)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "GetTask", err, in.Limits)
	}
	defer c.Close()
	snap, err := c.GetTask(ctx, in.TaskID, in.ContextID)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "GetTask", err, in.Limits)
	}
	return bound(snap, in.Limits), nil
}

// CancelInput names the task to cancel.
type CancelInput struct {
	Interface contracts.Interface `json:"interface"`
	TaskID    string              `json:"task_id"`
	ContextID string              `json:"context_id,omitempty"`
}

// CancelTask asks the agent to cancel the task (A2A 1.0 §3.1.5) and returns
// the task as reported. Errors: "protocol" (TaskNotCancelable,
// TaskNotFound), "authorization", "transient".
func (a *Activities) CancelTask(ctx context.Context, in CancelInput) (contracts.TaskSnapshot, error) {
	c, err := a.dial(ctx, in.Interface, "", contracts.Limits{})
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "CancelTask", err, contracts.Limits{})
	}
	defer c.Close()
	snap, err := c.CancelTask(ctx, in.TaskID, in.ContextID)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "CancelTask", err, contracts.Limits{})
	}
	return snap, nil
}

// ErrTypeCredentialRef is the ApplicationError type of a send whose
// credential_ref is not in the worker's credential store (nothing sent).
const ErrTypeCredentialRef = "credential_ref_unknown"

// ErrTypeCredentialRefNotAllowed is the ApplicationError type of a send
// whose credential_ref may not be sent to the agent's origin (nothing
// sent).
const ErrTypeCredentialRefNotAllowed = "credential_ref_not_allowed"

// refError is a credential_ref that could not be used (nothing sent).
type refError struct{ err error }

func (e *refError) Error() string { return e.err.Error() }
func (e *refError) Unwrap() error { return e.err }

// callFail turns a call's error into the ApplicationError of its category;
// its message (remote text included) is cut to the contract's
// max_text_chars (lim), with the length and sha256 of what was cut.
func (a *Activities) callFail(ctx context.Context, op string, err error, lim contracts.Limits) error {
	var re *refError
	if errors.As(err, &re) {
		a.logger().Warn("credential_ref refused", "activity", op, "workflow_id", workflowID(ctx), "reason", err.Error())
		if errors.Is(err, a2aclient.ErrRefNotAllowed) {
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeCredentialRefNotAllowed, nil)
		}
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeCredentialRef, nil)
	}
	cat := contracts.CategoryProtocol
	var ce *a2aclient.CallError
	if errors.As(err, &ce) {
		cat = ce.Category
	}
	return a.failText(ctx, op, cat, contracts.CutText(err.Error(), lim.WithDefaults().MaxTextChars))
}

// fail logs the failure by id and category and returns the
// ApplicationError the workflow will see, its message cut to the default
// max_text_chars. The error is not wrapped as a cause: the message is all
// that enters history.
func (a *Activities) fail(ctx context.Context, op string, cat contracts.Category, err error) error {
	return a.failText(ctx, op, cat, contracts.CutText(err.Error(), contracts.DefaultLimits.MaxTextChars))
}

func (a *Activities) failText(ctx context.Context, op string, cat contracts.Category, msg string) error {
	a.logger().Warn("activity failed", "activity", op, "workflow_id", workflowID(ctx), "category", string(cat))
	if cat == contracts.CategoryTransient {
		return temporal.NewApplicationError(msg, string(cat))
	}
	return temporal.NewNonRetryableApplicationError(msg, string(cat), nil)
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func workflowID(ctx context.Context) (id string) {
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	return activity.GetInfo(ctx).WorkflowExecution.ID
}

// bound applies the contract's limits to a snapshot before it becomes an
// activity result, that is workflow history: oversize, too deep or surplus
// artifacts are withheld (contracts.ApplyLimits) and remote text is cut
// (contracts.CutText).
func bound(s contracts.TaskSnapshot, l contracts.Limits) contracts.TaskSnapshot {
	lim := l.WithDefaults()
	s.Artifacts = contracts.ApplyLimits(s.Artifacts, lim)
	s.StatusText = contracts.CutText(s.StatusText, lim.MaxTextChars)
	s.Reply = contracts.CutText(s.Reply, lim.MaxTextChars)
	s.RawState = contracts.CutText(s.RawState, 256)
	s.StatusMessageID = contracts.CutText(s.StatusMessageID, 256)
	s.StatusTimestamp = contracts.CutText(s.StatusTimestamp, 64)
	if len(s.StatusData) > lim.MaxArtifactBytes {
		s.StatusData = nil
		s.StatusText += " [status data withheld: over the size limit]"
	}
	// Everything counts toward the encoded size (metadata, names, media
	// types, part counts): the largest artifacts are withheld until the
	// result fits, so that it never exceeds Temporal's payload limit (an
	// activity result over it fails the activity, and a send would be
	// sent again).
	for encodedSize(s) > MaxResultBytes {
		i := largestArtifact(s.Artifacts)
		if i < 0 {
			s.StatusData = nil
			s.StatusText = contracts.CutText(s.StatusText, 1024)
			break
		}
		a := s.Artifacts[i]
		n := encodedSize(a)
		s.Artifacts[i] = contracts.Artifact{ArtifactID: contracts.CutText(a.ArtifactID, 256), Name: contracts.CutText(a.Name, 256), Parts: []contracts.Part{},
			Withheld: fmt.Sprintf("%s: the artifact is %d bytes encoded (metadata and parts included); the task's result must fit in %d", contracts.ReasonTooLarge, n, MaxResultBytes),
			Size:     n, SHA256: a.SHA256}
	}
	return s
}

// MaxResultBytes bounds the encoded size of a snapshot an activity
// returns into history (Temporal refuses payloads over 2 MiB).
const MaxResultBytes = 1 << 20

func encodedSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// largestArtifact is the index of the largest artifact not yet withheld,
// or -1.
func largestArtifact(arts []contracts.Artifact) int {
	best, size := -1, 0
	for i, a := range arts {
		if a.Withheld != "" {
			continue
		}
		if n := encodedSize(a); n > size {
			best, size = i, n
		}
	}
	return best
}
