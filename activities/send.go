package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
)

// SendMessage sends one message (A2A 1.0 §3.1.1). The messageId is chosen
// by the workflow and is the same on every attempt, so a retried send is
// recognised by an agent that deduplicates (A2A 1.0 §3.3.1). Errors:
// "transient" (not sent, or refused with 5xx/429: retried), "unknown_outcome"
// (the request was written and no answer came: not retried),
// "authorization" (401/403), "protocol".
func (a *Activities) SendMessage(ctx context.Context, in contracts.SendInput) (contracts.TaskSnapshot, error) {
	ctx = withDelegation(ctx, in.Message.TaskID, in.Interface, "")
	c, err := a.dial(ctx, in.Interface, in.CredentialRef, in.Limits)
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "SendMessage", err, in.Limits)
	}
	defer c.Close()
	timeout := sendTimeout(in, a.SendTimeout)
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := keepHeartbeating(sctx, 3*time.Second)
	var snap contracts.TaskSnapshot
	// The settle window runs from the reply, or, for a stream, from the
	// send: its watch is part of the window.
	var deadline time.Time
	window, readNow := a.settleWindow(), false
	if in.Stream {
		// The card declares streaming: the task id comes with the first
		// event, before the agent's work is done (contracts.SendInput.Stream).
		// The stream is then watched for the settle window: a status update
		// that ends or interrupts the task is read at once, instead of
		// polled for; so is a task whose state moved on during the window
		// (submitted, then working), so that what is recorded is what the
		// stream last said.
		var last contracts.TaskState
		deadline = time.Now().Add(window)
		snap, last, err = c.SendStreamingWatch(sctx, in.Message, window)
		readNow = last != "" && (last != snap.State || last.Terminal() || last.Interrupted())
		if a2aclient.StreamingRefused(err) {
			a.log(ctx).Info("the agent refused a streaming send; sending by SendMessage", "error", err)
			deadline, readNow = time.Time{}, false
			snap, err = c.SendMessage(sctx, in.Message)
		}
	} else {
		snap, err = c.SendMessage(sctx, in.Message)
	}
	stop()
	if err != nil {
		return contracts.TaskSnapshot{}, a.callFail(ctx, "SendMessage", err, in.Limits)
	}
	snap.Attempt = int(activity.GetInfo(ctx).Attempt)
	if deadline.IsZero() {
		deadline = time.Now().Add(window)
	}
	snap = a.settle(ctx, c, snap, deadline, readNow)
	a.log(withDelegation(ctx, snap.TaskID, in.Interface, "")).Info("a2a message sent", "message_id", in.Message.MessageID, "state", snap.State)
	return bound(snap, in.Limits), nil
}

// sendTimeout is how long one send may take: the contract's send_timeout
// (in.Timeout), else the worker's (Activities.SendTimeout), else
// contracts.DefaultSendTimeout; never past the contract's deadline (at
// least a second, so that a send at the deadline's edge is still tried).
func sendTimeout(in contracts.SendInput, worker time.Duration) time.Duration {
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = worker
	}
	if timeout <= 0 {
		timeout = contracts.DefaultSendTimeout
	}
	if !in.Deadline.IsZero() {
		if left := time.Until(in.Deadline); left < timeout {
			timeout = max(left, time.Second)
		}
	}
	return timeout
}

// settle: a task that is still SUBMITTED or WORKING right after the send
// (returnImmediately) is read again a few times until deadline (the settle
// window from the send), so that an agent that answers at once costs one
// activity, not two. readNow: the send's stream reported that the task
// ended or was interrupted, so the first read is at once. A read that fails
// changes nothing: the send has succeeded either way.
// SettleFirstRead is when settle first reads a task the send reply left
// submitted or working; each read after doubles the wait. An agent that
// finishes at once has usually finished by then.
const SettleFirstRead = 2 * time.Millisecond

// settleReadGrace is how long past the settle window a settle read may
// take.
const settleReadGrace = time.Second

// settleWindow is SettleWindow, 250 ms by default; negative: none.
func (a *Activities) settleWindow() time.Duration {
	if a.SettleWindow == 0 {
		return 250 * time.Millisecond
	}
	return a.SettleWindow
}

func (a *Activities) settle(ctx context.Context, c *a2aclient.Client, snap contracts.TaskSnapshot, deadline time.Time, readNow bool) contracts.TaskSnapshot {
	if a.settleWindow() < 0 || snap.TaskID == "" {
		return snap
	}
	wait := SettleFirstRead
	if readNow {
		wait = 0
		if now := time.Now().Add(time.Millisecond); deadline.Before(now) {
			deadline = now
		}
	}
	for (snap.State == contracts.TaskStateSubmitted || snap.State == contracts.TaskStateWorking) && time.Now().Add(wait).Before(deadline) {
		time.Sleep(wait)
		wait = max(2*wait, SettleFirstRead)
		// Each read ends with the window (and a grace second): the send has
		// succeeded, and a read that hangs or trickles must not time the
		// activity out and throw its reply away (the message would be sent
		// again, and the task it created lost).
		rctx, cancel := context.WithDeadline(ctx, deadline.Add(settleReadGrace))
		next, err := c.GetTask(rctx, snap.TaskID, snap.ContextID)
		cancel()
		if err != nil {
			break
		}
		next.Attempt = snap.Attempt
		snap = next
	}
	return snap
}
