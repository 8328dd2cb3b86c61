package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// A follow-up that times out (the worker died mid-send: it may have
// reached the agent) and a task the agent then shows completed: the
// agent's result stands, and the answer is recorded as unconfirmed, not
// as "not taken" (the agent may well have taken it: it completed).
func (s *DelegationSuite) TestFollowUpTimedOutAndTheTaskCompleted() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(1)).Return(contracts.CheckAndSendResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Len(o.Outputs, 1)
	a := s.state().Answers[0]
	s.Empty(a.Refused)
	s.Contains(a.Unconfirmed, "whether the agent took this answer is not known")
}
