package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/a2adelegate/delegate/contracts"
)

func (s *DelegationSuite) TestCredentialRefAskedAgain() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("auth-required", "msg:q-1", "login")), nil).Once()
	details := contracts.CheckAndSendResult{Card: claimsCard(), Authorization: allowed()}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.CredentialRef == "bad"
	})).Return(contracts.CheckAndSendResult{}, temporal.NewApplicationErrorWithOptions("no such ref", contracts.ErrTypeCredentialRef,
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{details}})).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.CredentialRef == "good"
	})).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{CredentialRef: "bad"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal("auth-required", st.A2AState)
		s.NotNil(st.Question)
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{CredentialRef: "good"})
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	st := s.state()
	s.Equal(1, o.InputRounds)
	s.Require().Len(st.Answers, 2)
	s.Contains(st.Answers[0].Refused, "not in the worker's credential store")
	// One record per round and decision: round 0, then round 1 (checked
	// twice, allowed both times).
	s.Len(st.Authorizations, 2)
}

// A revoke delivered before a resolve-unknown resend: nothing is resent.
func (s *DelegationSuite) TestRevokeWithResendSendsNothing() {
	details := contracts.CheckAndSendResult{Card: claimsCard(), Authorization: allowed()}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(contracts.CheckAndSendResult{},
		temporal.NewApplicationErrorWithOptions("cut off", string(contracts.CategoryUnknownOutcome),
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{details}})).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(snap("working")), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Maybe()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "stop"})
		s.env.SignalWorkflow(contracts.ResolveUnknown, contracts.Resolution{Action: contracts.ActionResend})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.env.AssertNumberOfCalls(s.T(), "CheckAndSend", 1)
	for _, sd := range s.state().Sends {
		s.NotEqual("sent after the stop", sd.Result)
	}
}

// An Update answer naming a credential_ref the worker does not hold is
// refused by the Update itself (CheckCredential, before it is accepted):
// the caller gets the reason, nothing is recorded or sent, and the
// question stays pending; a good ref is taken.
func (s *DelegationSuite) TestCredentialRefRefusedByTheUpdate() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("auth-required", "msg:q-1", "login")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckCredential, mock.Anything, mock.MatchedBy(func(in contracts.CheckCredentialInput) bool { return in.Ref == "nope" })).
		Return(contracts.CheckCredentialResult{Refused: "credential_ref nope is not in the worker's credential store"}, nil).Once()
	s.env.OnActivity(contracts.ActivityCheckCredential, mock.Anything, mock.MatchedBy(func(in contracts.CheckCredentialInput) bool { return in.Ref == "good" })).
		Return(contracts.CheckCredentialResult{}, nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.CredentialRef == "good"
	})).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	var refused, taken error
	accepted := false
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(contracts.ProvideInput, "bad", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { refused = err }, OnAccept: func() {}, OnComplete: func(_ any, err error) { refused = err },
		}, contracts.Answer{CredentialRef: "nope"})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Empty(st.Answers, "a refused ref is recorded nowhere")
		s.NotNil(st.Question, "the question is still pending")
		s.env.UpdateWorkflow(contracts.ProvideInput, "good", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { taken = err }, OnAccept: func() { accepted = true }, OnComplete: func(_ any, err error) { taken = err },
		}, contracts.Answer{CredentialRef: "good"})
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.ErrorContains(refused, "credential_ref nope is not in the worker's credential store")
	s.NoError(taken)
	s.True(accepted)
	s.Equal(1, o.InputRounds)
}
