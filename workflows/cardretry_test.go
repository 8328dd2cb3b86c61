package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// An accepted card change whose send then fails transiently once: the
// retry is built from the state then (the new card in use, nothing to
// accept) and records no change again.
func (s *DelegationSuite) TestCardChangeRecordedPerRetry() {
	moved, change := s.cardMovesBeforeRound1()
	acc := contracts.CheckAndSendResult{Card: moved, Change: change, Authorization: allowed()}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Authorization.Round == 1 && in.AcceptChange
	})).Return(contracts.CheckAndSendResult{}, temporal.NewApplicationErrorWithOptions("503", string(contracts.CategoryTransient),
		temporal.ApplicationErrorOptions{Details: []any{acc}})).Once()
	res := sent(snap("completed", claim("claim_opened")))
	res.Card = moved
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Authorization.Round == 1 && !in.AcceptChange && in.InUse != nil && in.InUse.Interface.URL == moved.Interface.URL
	})).Return(res, nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRediscover, nil) }, 2*time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
	st := s.state()
	s.Len(st.CardChanges, 2, "%+v", st.CardChanges)
}
