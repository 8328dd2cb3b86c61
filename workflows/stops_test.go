package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/a2adelegate/delegate/contracts"
)

// A deadline already passed when the first workflow task runs (no worker
// until then; Validate accepts it): nothing is sent, and the delegation
// ends deadline_exceeded in state "ended" (not a bad contract).
func (s *DelegationSuite) TestDeadlinePassedAtStartSendsNothing() {
	s.env.SetStartTime(t0.Add(2 * time.Hour)) // contract deadline is t0+1h
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("working")), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Maybe()
	o := s.execute(contract())
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.env.AssertNotCalled(s.T(), "CheckAndSend", mock.Anything, mock.Anything)
	st := s.state()
	s.Empty(st.Sends, "a message was sent after the deadline")
	s.Equal("ended", st.A2AState)
}

// A revoke delivered before an answer is acted on: "nothing more is
// sent": CheckAndSend is not scheduled after a stop.
func (s *DelegationSuite) TestRevokeWithAnswerSendsNothing() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(1)).Return(sent(snap("working")), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Maybe()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "stop"})
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo.jpg", AnsweredBy: "ops"})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.env.AssertNumberOfCalls(s.T(), "CheckAndSend", 1)
	for _, sd := range s.state().Sends {
		s.NotEqual(1, sd.Round, "round 1 sent after revoke: %+v", sd)
	}
}

// Transient send failure then success: one authorization record per round
// and decision, however many attempts checked it.
func (s *DelegationSuite) TestAuthorizationsPerAttempt() {
	res := contracts.CheckAndSendResult{Card: claimsCard(), Authorization: allowed()}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(contracts.CheckAndSendResult{},
		temporal.NewApplicationErrorWithOptions("503", string(contracts.CategoryTransient), temporal.ApplicationErrorOptions{Details: []any{res}})).Times(2)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Len(s.state().Authorizations, 1)
}

// A cancel reason sent ahead of a cancel waits in its channel; the state
// does not list it among the unknown signals ("never applied"), which
// contradicted the cancel that then used it.
func (s *DelegationSuite) TestCancelReasonIsNotAnUnknownSignal() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Maybe()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalCancelReason, map[string]string{"reason": "customer called"})
		s.env.SignalWorkflow("provide_input", map[string]string{"text": "typo'd name"})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.NotContains(st.UnknownSignals, contracts.SignalCancelReason)
		s.Contains(st.UnknownSignals, "provide_input")
		s.env.CancelWorkflow()
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Contains(o.Error.Message, "customer called")
}

// An answer that comes while the delegation is stopping (its task being
// canceled after a revoke) is refused: the Update said accepted, and the
// answer was recorded nowhere and never sent.
func (s *DelegationSuite) TestAnswerWhileStoppingIsRefused() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).After(time.Minute).Return(snap("canceled"), nil).Maybe()
	var refused error
	accepted := false
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "stop"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(contracts.ProvideInput, "late", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { refused = err },
			OnAccept: func() { accepted = true }, OnComplete: func(any, error) {},
		}, contracts.Answer{Text: "late", AnsweredBy: "ops"})
	}, 90*time.Second)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.False(accepted, "an answer was accepted while the delegation stopped")
	s.ErrorContains(refused, "the delegation is stopping")
}
