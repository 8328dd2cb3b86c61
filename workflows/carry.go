package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// MaxCarryBytes bounds the encoded contracts.Carry (Temporal refuses a
// continue-as-new whose input is over 2 MiB and ends the workflow).
const MaxCarryBytes = 1 << 20

// trimCarry keeps the carried state under MaxCarryBytes: the records that
// grow with time (transitions, sends, answers' content, card changes,
// resolved unknown outcomes) keep their newest entries; the ids, the
// rounds, the question and the last snapshot always stay.
func trimCarry(c *contracts.Carry) {
	size := func() int { b, _ := json.Marshal(c); return len(b) }
	if size() <= MaxCarryBytes {
		return
	}
	st := &c.State
	keep := func(n, max int) int { return n - min(n, max) }
	st.Transitions = st.Transitions[keep(len(st.Transitions), 50):]
	st.Sends = st.Sends[keep(len(st.Sends), 50):]
	st.CardChanges = st.CardChanges[keep(len(st.CardChanges), 20):]
	st.UnknownHistory = st.UnknownHistory[keep(len(st.UnknownHistory), 20):]
	st.Authorizations = st.Authorizations[keep(len(st.Authorizations), 50):]
	for i := range st.Answers[:keep(len(st.Answers), 5)] {
		st.Answers[i].Text, st.Answers[i].Data = contracts.CutText(st.Answers[i].Text, 200), nil
	}
}

// ErrTypeCarriedState is the ApplicationError type of a run whose carried
// state (its second input) does not decode: the delegation fails loudly
// rather than start again and resend round 0.
const ErrTypeCarriedState = "carried_state"

// carriedInput reads what the previous run handed over: the second input.
// nil when this is the first run.
func carriedInput(raw converter.RawValue) (*contracts.Carry, error) {
	if p := raw.Payload(); p != nil && len(p.GetData()) > 0 {
		if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
			return nil, fmt.Errorf("carried state: payload encoding %q, want %s", enc, converter.MetadataEncodingJSON)
		}
		// A field this code does not know is read past: a run handed over
		// by a newer worker (a rolling deploy) carries fields an older
		// one lacks (docs/versioning.md, "Data"). The carry is
		// authenticated by the run it names and the contract's digest
		// (continues), not by its shape. Data after the object is
		// refused.
		var c contracts.Carry
		dec := json.NewDecoder(bytes.NewReader(p.GetData()))
		err := dec.Decode(&c)
		if err == nil && dec.More() {
			err = errors.New("data after the object")
		}
		if err != nil {
			return nil, fmt.Errorf("carried state (workflow input 2) does not decode: %s", contracts.CutText(err.Error(), 500))
		}
		switch {
		case c.State.LastSnapshot == nil:
			return nil, errors.New("carried state (workflow input 2): state.last_snapshot is missing")
		case c.State.LastSnapshot.State.Terminal():
			return nil, fmt.Errorf("carried state (workflow input 2): state.last_snapshot.state %q is terminal: a run never continues as new from an ended task", c.State.LastSnapshot.State)
		case c.State.InputRounds < 0:
			return nil, fmt.Errorf("carried state (workflow input 2): state.input_rounds %d is negative", c.State.InputRounds)
		case c.State.RemoteTaskID == "":
			return nil, errors.New("carried state (workflow input 2): state.remote_task_id is missing")
		}
		return &c, nil
	}
	return nil, nil
}

// resume applies the intents a previous run carried over.
func (r *run) resume(ctx workflow.Context, c *contracts.Carry) {
	if c.Revoked != nil {
		r.applyRevoke(ctx, *c.Revoked)
	}
	r.box.restore(c)
	if c.Reconcile {
		r.onReconcile(ctx, converter.RawValue{})
	}
}

// shouldContinueAsNew reports (and notes) that this run continues as new
// now: Temporal suggests it or the history is past Options.ContinueAsNewEvents, and
// this run has watched at least once (so that a long chain still makes
// progress). The signals still buffered are applied first, and a revoke or
// the deadline among them is handled in this run instead.
func (r *run) shouldContinueAsNew(ctx workflow.Context) bool {
	if r.watches == 0 || !r.historyFull(ctx) {
		return false
	}
	return r.continueNow(ctx)
}

// MaxRunHistoryBytes is the history size past which a run continues as
// new, well under the server's limits (50 MiB).
const MaxRunHistoryBytes = 8 << 20

// historyFull reports whether this run should hand over to a new one
// between two watches: Temporal suggests it, or the history is past
// Options.ContinueAsNewEvents or MaxRunHistoryBytes.
func (r *run) historyFull(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > r.o.continueAsNewEvents() ||
		info.GetCurrentHistorySize() > MaxRunHistoryBytes
}

// floodedWhileWaiting reports whether signals filled this run while it
// waits: Temporal suggests continuing as new, or the
// history is past Options.WaitingHistoryEvents or MaxRunHistoryBytes. A
// fresh run is far below, so a run never hands over before it waited.
func (r *run) floodedWhileWaiting(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > r.o.waitingHistoryEvents() ||
		info.GetCurrentHistorySize() > MaxRunHistoryBytes
}

// continueNow notes that this run continues as new now, unless a stop
// (revoke, deadline, cancel) delivered meanwhile is to be handled in this
// run.
func (r *run) continueNow(ctx workflow.Context) bool {
	// Let the listener handle what this workflow task delivered (a revoke,
	// the deadline), then take what is still buffered; a cancel, a revoke
	// or the deadline is handled in this run.
	r.settleListener(ctx)
	r.drainSignals(ctx)
	if r.interrupt() != nil || ctx.Err() != nil {
		return false
	}
	r.phase = phaseHandingOver
	return true
}
