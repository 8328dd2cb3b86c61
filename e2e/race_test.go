package e2e

import (
	"context"
	"testing"
	"time"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// An answer and a revoke that reach the delegation in the same workflow
// task (sent while no worker runs, as two operators at the same moment
// would): the revoke wins, nothing is sent, and the answer is recorded as
// not sent. It read as sent (a message id, no refusal) while the agent
// never saw it.
func TestAnswerAndRevokeTogether(t *testing.T) {
	e := setup(t, func(o *options) { o.noWorker = true })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w1 := e.ownWorker(t, e.c)
	d := lostParcel("answer-and-revoke", e.base)
	if _, err := dclient.Start(ctx, e.c, d); err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	w1.Stop()
	if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.ProvideInput, contracts.Answer{Text: "photo attached", AnsweredBy: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.SignalWorkflow(ctx, d.LocalWorkflowID, "", contracts.SignalRevoke, contracts.Revocation{Reason: "second"}); err != nil {
		t.Fatal(err)
	}
	w2 := e.ownWorker(t, e.c)
	defer w2.Stop()
	h := dclient.Get(e.c, d.LocalWorkflowID)
	out, err := h.Outcome(ctx)
	if err != nil || out.Status != contracts.StatusAuthorizationDenied {
		t.Fatalf("outcome = %+v, %v; want authorization_denied", out, err)
	}
	st := stateOf(t, ctx, e.c, d.LocalWorkflowID)
	for _, s := range st.Sends {
		if s.Round > 0 {
			t.Errorf("round %d was sent after the revoke: %+v", s.Round, s)
		}
	}
	if len(st.Answers) != 1 || st.Answers[0].Refused == "" {
		t.Errorf("answers = %+v, want the answer recorded as not sent", st.Answers)
	}
}
