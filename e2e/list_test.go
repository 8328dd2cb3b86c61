package e2e

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// A delegation canceled while its first send was still retrying (the
// agent cannot be reached) is listed with how it ended (Outcome status
// canceled; its A2AState is the phase "ended") and with the card URL
// marked as no name: the delegation never recorded a card. It listed
// "ended" and the card URL as if it were the agent's name.
func TestListCanceledWhileRetrying(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	d := lostParcel("list-unreachable", dead)
	h, err := client.Start(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first send retrying", time.Minute, func() (bool, string) {
		s, err := h.State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.Retrying != nil, s.A2AState
	})
	if err := h.WithNamespace(e.srv.Namespace()).Cancel(ctx, "wrong agent"); err != nil {
		t.Fatal(err)
	}
	if out, err := h.Outcome(ctx); err != nil || out.Status != contracts.StatusCanceled {
		t.Fatalf("Outcome() = %+v, %v", out, err)
	}
	// A finished delegation for comparison: its name, its outcome.
	done, err := client.Start(ctx, e.c, lostParcel("list-answered", e.base))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the question", time.Minute, func() (bool, string) {
		s, err := done.State(ctx)
		return err == nil && s.Question != nil, ""
	})
	if _, err := done.Answer(ctx, contracts.Answer{Text: "photo", AnsweredBy: "e2e"}); err != nil {
		t.Fatal(err)
	}
	if out, err := done.Outcome(ctx); err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("Outcome() = %+v, %v", out, err)
	}
	var rows map[string]client.Listed
	waitFor(t, "both listed as ended", 20*time.Second, func() (bool, string) {
		list, err := client.List(ctx, e.c, client.ListOptions{Namespace: e.srv.Namespace(), WithState: true})
		if err != nil {
			return false, err.Error()
		}
		rows = map[string]client.Listed{}
		for _, r := range list {
			rows[r.ID] = r
		}
		return rows["list-unreachable"].Status == "completed" && rows["list-answered"].Status == "completed", ""
	})
	r := rows["list-unreachable"]
	if r.Outcome != contracts.StatusCanceled || r.A2AState != string(contracts.PhaseEnded) || !r.NameUnknown || r.Agent != d.AgentCardURL {
		t.Errorf("list-unreachable listed as %+v, want outcome canceled, A2AState ended, the card URL with no name", r)
	}
	r = rows["list-answered"]
	if r.Outcome != contracts.StatusCompleted || r.NameUnknown || r.Agent != "Claims Agent" {
		t.Errorf("list-answered listed as %+v, want outcome completed by Claims Agent", r)
	}
}
