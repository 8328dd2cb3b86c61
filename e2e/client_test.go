package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// TestBackendClient runs the flow of client.Example against the embedded
// server and the claims agent.
func TestBackendClient(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A backend connects as the Temporal CLI does: here TEMPORAL_ADDRESS.
	t.Setenv("TEMPORAL_CONFIG_FILE", testutil.EmptyFile(t))
	t.Setenv("TEMPORAL_ADDRESS", e.srv.FrontendAddr())
	bc, err := client.Dial(ctx, client.Connection{Namespace: e.srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	h, err := client.Start(ctx, bc, lostParcel("backend-1", e.base))
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
	out2, err := h2.Outcome(ctx)
	if err != nil || (out2.Status != contracts.StatusCanceled && out2.Status != contracts.StatusCancelUnconfirmed) {
		t.Fatalf("canceled outcome = %+v, %v", out2, err)
	}
	// The reason is in the Outcome and the state, not only in history.
	if out2.Error == nil || !strings.Contains(out2.Error.Message, "(reason: no longer needed)") {
		t.Errorf("canceled outcome error = %+v, want the reason", out2.Error)
	}
	if s, err := h2.State(ctx); err != nil || s.CancelReason != "no longer needed" {
		t.Errorf("state cancel_reason = %q, %v; want the reason", s.CancelReason, err)
	}

	// The operator's other moves through the same API: resolve and
	// rediscover are refused when there is nothing to resolve or accept,
	// reconcile reads the task, revoke ends the delegation.
	h3, err := client.Start(ctx, bc, lostParcel("backend-3", e.base))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the question", time.Minute, func() (bool, string) {
		s, err := h3.State(ctx)
		return err == nil && s.Question != nil, fmt.Sprint(err)
	})
	if _, err := h3.Resolve(ctx, contracts.Resolution{Action: contracts.ActionResend}); err == nil {
		t.Error("Resolve with no unknown outcome pending was accepted")
	}
	if err := h3.Rediscover(ctx); !errors.Is(err, client.ErrNotCardChanged) {
		t.Errorf("Rediscover while input-required = %v, want ErrNotCardChanged", err)
	}
	if err := h3.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reconciliation", time.Minute, func() (bool, string) {
		s, err := h3.State(ctx)
		return err == nil && len(s.Reconciliations) == 1 && s.Reconciliations[0].Seen == "input-required", fmt.Sprint(err)
	})
	if err := h3.Revoke(ctx, "policy changed"); err != nil {
		t.Fatal(err)
	}
	if out3, err := h3.Outcome(ctx); err != nil || out3.Status != contracts.StatusAuthorizationDenied || !strings.Contains(out3.Error.Message, "policy changed") {
		t.Errorf("revoked outcome = %+v, %v", out3, err)
	}
}
