package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// TestBackendClient runs the flow of client.Example against the embedded
// server and the claims agent.
func TestBackendClient(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := client.Start(ctx, e.c, lostParcel("backend-1", e.base))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the question", time.Minute, func() (bool, string) {
		s, err := h.State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return s.Question != nil, s.A2AState
	})
	if round, err := h.Answer(ctx, contracts.Answer{Text: "photo", AnsweredBy: "backend"}); err != nil || round != 1 {
		t.Fatalf("Answer() = %d, %v", round, err)
	}
	out, err := h.Outcome(ctx)
	if err != nil || out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
		t.Fatalf("Outcome() = %+v, %v", out, err)
	}
	// A handle from the id alone sees the same outcome.
	again, err := client.Get(e.c, "backend-1").Outcome(ctx)
	if err != nil || again.RemoteTaskID != out.RemoteTaskID {
		t.Fatalf("Get().Outcome() = %+v, %v", again, err)
	}
	// Cancel through a handle.
	h2, err := client.Start(ctx, e.c, lostParcel("backend-2", e.base))
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.WithNamespace(e.srv.Namespace()).Cancel(ctx, "no longer needed"); err != nil {
		t.Fatal(err)
	}
	if out, err := h2.Outcome(ctx); err != nil || (out.Status != contracts.StatusCanceled && out.Status != contracts.StatusCancelUnconfirmed) {
		t.Fatalf("canceled outcome = %+v, %v", out, err)
	}
}
