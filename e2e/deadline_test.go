package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// An example contract with a relative deadline ("deadline_in": "1h") is
// resolved before the start: the workflow input in history holds the
// absolute "deadline", an hour from the start, and no "deadline_in"; the
// delegation runs to its end.
func TestDeadlineInStoredAbsolute(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw, err := os.ReadFile("../contracts/examples/instant.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"deadline_in": "1h"`) {
		t.Fatalf("contracts/examples/instant.json has no deadline_in:\n%s", raw)
	}
	raw = []byte(strings.Replace(string(raw), "http://127.0.0.1:9999", e.base, 1))
	before := time.Now()
	d, err := contracts.DecodeDelegation(raw, before)
	if err != nil {
		t.Fatal(err)
	}
	h, err := client.Start(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Outcome(ctx); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("Outcome() = %+v, %v", out, err)
	}
	it := e.c.GetWorkflowHistory(ctx, d.LocalWorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	in := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(in) == 0 {
		t.Fatalf("no start input: %v", ev)
	}
	var stored map[string]json.RawMessage
	if err := json.Unmarshal(in[0].GetData(), &stored); err != nil {
		t.Fatal(err)
	}
	if _, has := stored["deadline_in"]; has {
		t.Errorf("the stored contract holds deadline_in: %s", in[0].GetData())
	}
	var at time.Time
	if err := json.Unmarshal(stored["deadline"], &at); err != nil {
		t.Fatalf("stored deadline %s: %v", stored["deadline"], err)
	}
	if lo, hi := before.Add(time.Hour-time.Second), before.Add(time.Hour+time.Second); at.Before(lo) || at.After(hi) {
		t.Errorf("stored deadline %s, want an hour after %s", at, before)
	}
}
