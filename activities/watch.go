package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
)

// WatchTask follows the task until its state differs from in.Since,
// heartbeating all the while, so that history grows per state change and
// not per poll. When the card declares streaming (in.Stream) it follows
// SubscribeToTask (A2A 1.0 §3.1.6); a stream that drops is followed by a
// GetTask, so no state change is lost, then by a new subscription (after
// three drops in a row it polls). Otherwise, or then, it polls GetTask (A2A
// 1.0 §3.1.3) with backoff from PollInitial doubling to PollMax. A retry
// after a worker crash starts the same way. Transient errors are retried
// inside. Errors: "authorization", "protocol" (for example TaskNotFound).
func (a *Activities) WatchTask(ctx context.Context, in contracts.WatchInput) (contracts.TaskSnapshot, error) {
	ctx = withDelegation(ctx, in.TaskID, in.Interface, "")
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

func (a *Activities) watch(ctx context.Context, c *a2aclient.Client, in contracts.WatchInput) (contracts.TaskSnapshot, error) {
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
func (a *Activities) poll(ctx context.Context, c *a2aclient.Client, in contracts.WatchInput, hb *heartbeat) (contracts.TaskSnapshot, bool, error) {
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
func changedFrom(in contracts.WatchInput, snap contracts.TaskSnapshot) bool {
	if snap.State != in.Since {
		return true
	}
	return in.SinceKey != "" && snap.State.Interrupted() && snap.StatusKey != in.SinceKey
}

// PollTask reads the task once (A2A 1.0 §3.1.3) and returns it when it
// differs from in.Since / in.SinceKey; otherwise it fails with
// contracts.ErrTypeUnchanged. The workflow runs it with a fixed retry interval (the
// waiting cadence): Temporal's pattern for infrequent polling, which keeps
// no worker slot and adds no history between reads. Transient read errors
// are retried the same way. The first attempt reads nothing, unless
// in.ReadFirst: the workflow has just read the task. Errors: "authorization", "protocol" (for
// example TaskNotFound: the agent no longer knows the task).
func (a *Activities) PollTask(ctx context.Context, in contracts.WatchInput) (contracts.TaskSnapshot, error) {
	ctx = withDelegation(ctx, in.TaskID, in.Interface, "")
	if activity.GetInfo(ctx).Attempt <= 1 && !in.ReadFirst {
		// The workflow has just read the task: the first read is one
		// interval away.
		return contracts.TaskSnapshot{}, temporal.NewApplicationErrorWithOptions("the first read is one interval away", contracts.ErrTypeUnchanged,
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
		return contracts.TaskSnapshot{}, temporal.NewApplicationErrorWithOptions("the task is still "+string(snap.State), contracts.ErrTypeUnchanged,
			temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
	}
	return bound(snap, in.Limits), nil
}

// follow reads the task, then subscribes to it until a state other than
// in.Since shows (then the full task is read again) or the stream ends;
// after the stream ends the task is read once more, so that a change made
// while the stream was down is seen.
func (a *Activities) follow(ctx context.Context, c *a2aclient.Client, in contracts.WatchInput, hb *heartbeat) (contracts.TaskSnapshot, bool, error) {
	if snap, changed, err := a.poll(ctx, c, in, hb); err != nil || changed {
		return snap, changed, err
	}
	// An artifact is kept up to the contract's max_artifact_bytes while it
	// streams; past it only its size and sha256 are (an agent streaming
	// without end held it all in the worker's memory: 500 MB in one test).
	lim := in.Limits.WithDefaults()
	as := Assembly{MaxArtifactBytes: lim.MaxArtifactBytes, MaxTotalBytes: lim.MaxTotalBytes}
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
	// Once the subscription is answered, the task is read again: a change
	// between the read above and the subscription is not replayed by every
	// server (A2A 0.3 §7.9; trpc-a2a-go sends only later events).
	var gap struct {
		sync.Mutex
		snap    contracts.TaskSnapshot
		changed bool
	}
	gapDone := make(chan struct{})
	opened := func() {
		go func() {
			defer close(gapDone)
			snap, err := c.GetTask(sctx, in.TaskID, in.ContextID)
			if err == nil && changedFrom(in, snap) {
				gap.Lock()
				gap.snap, gap.changed = snap, true
				gap.Unlock()
				closeStream()
			}
		}()
	}
	var openedOnce sync.Once
	for ev, err := range c.SubscribeStatesOpened(sctx, in.TaskID, func() { openedOnce.Do(opened) }) {
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
	openedOnce.Do(func() { close(gapDone) }) // never opened: no gap read runs
	closeStream()
	<-gapDone
	if ctx.Err() != nil {
		return contracts.TaskSnapshot{}, false, ctx.Err()
	}
	gap.Lock()
	gapSnap, gapChanged := gap.snap, gap.changed
	gap.Unlock()
	if gapChanged {
		hb.Polls++
		return withStreamed(gapSnap, &as), true, nil
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
// from the chunks (Assembly); a chunk that appended to an
// artifact never started becomes a withheld artifact, rejected with its
// reason. The task's own record wins when it has artifacts.
func withStreamed(snap contracts.TaskSnapshot, as *Assembly) contracts.TaskSnapshot {
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
// timeout while a live one is not timed out. The first is one interval
// in, not at once: the SDK sends a first heartbeat synchronously
// (RecordActivityHeartbeat, a write of the workflow's mutable state), so
// one at the start cost every send a server round trip, and the heartbeat
// timeout already runs from the activity's start.
func keepHeartbeating(ctx context.Context, every time.Duration) (stop func()) {
	done := make(chan struct{})
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
