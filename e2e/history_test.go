package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/a2adelegate/delegate/contracts"
)

// eventTypes lists a workflow's history event types.
func (e *env) eventTypes(t *testing.T, ctx context.Context, id string) []enumspb.EventType {
	t.Helper()
	var types []enumspb.EventType
	it := e.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.GetEventType())
	}
	return types
}

func count(types []enumspb.EventType, want enumspb.EventType) int {
	n := 0
	for _, ty := range types {
		if ty == want {
			n++
		}
	}
	return n
}

// A delegation costs what the protocol needs (issue 13): an agent that
// answers at once costs one activity and 12 history events (a trivial
// workflow with one activity costs 11; the final state is the rest: the
// baseline records no version marker and no TemporalChangeVersion); one
// question answered before the first read costs 26.
func TestHistoryIsLean(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	plain := lostParcel("lean-plain", e.base)
	plain.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"instant"}`)
	if out := e.outcomeOf(t, ctx, plain); out.Status != contracts.StatusCompleted {
		t.Fatalf("plain: status %s (%+v)", out.Status, out.Error)
	}
	types := e.eventTypes(t, ctx, plain.LocalWorkflowID)
	if len(types) > 12 || count(types, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) != 1 ||
		count(types, enumspb.EVENT_TYPE_TIMER_STARTED) != 0 || count(types, enumspb.EVENT_TYPE_MARKER_RECORDED) != 0 {
		t.Errorf("plain delegation: %d events, want <= 12 with one activity, no timer and no marker: %v", len(types), types)
	}

	round := lostParcel("lean-round", e.base)
	run, err := startRun(ctx, e.c, round)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the question", 60*time.Second, func() (bool, string) {
		s, err := dclient.Get(e.c, round.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.Question != nil, s.A2AState
	})
	if _, err := dclient.Get(e.c, round.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo: box.jpg", AnsweredBy: "e2e"}); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("round: %v, status %s (%+v)", err, out.Status, out.Error)
	}
	types = e.eventTypes(t, ctx, round.LocalWorkflowID)
	if len(types) > 26 || count(types, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) != 2 || count(types, enumspb.EVENT_TYPE_MARKER_RECORDED) != 0 {
		t.Errorf("one input round: %d events, want <= 26 with two activities (no read before the first interval) and no marker: %v", len(types), fmt.Sprint(types))
	}
}
