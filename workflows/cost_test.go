package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// cardMovesBeforeRound1 mocks a question at round 0 and, at the follow-up
// (round 1, no change accepted yet), a card whose interface moved: the
// send is refused, waiting for "rediscover". It returns that card and the
// change.
func (s *DelegationSuite) cardMovesBeforeRound1() (contracts.ResolvedCard, string) {
	moved := claimsCard()
	moved.Agent.CardDigest = "sha256:11"
	moved.Interface.URL = "http://agent/v2/jsonrpc"
	change := "interface changed"
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Authorization.Round == 1 && !in.AcceptChange
	})).Return(contracts.CheckAndSendResult{Card: moved, Change: change, Refused: change}, nil).Once()
	return moved, change
}

func (s *DelegationSuite) TestPlainDelegationIsOneActivity() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.InUse == nil && in.Card.Skill == "open-claim" && in.Authorization.Round == 0 && in.Send.Message.Text == "lost parcel A-1001"
	})).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(contracts.ProtocolInfo{Version: "1.0", Binding: "JSONRPC", URL: "http://agent/a2a/jsonrpc"}, o.Protocol)
	st := s.state()
	s.Equal("Claims Agent", st.Agent.Name)
	s.Len(st.Authorizations, 1)
	s.Require().Len(st.Sends, 1)
	s.Equal("sent", st.Sends[0].Result)
	var seen []string
	for _, tr := range st.Transitions {
		seen = append(seen, tr.State)
	}
	s.Equal([]string{"resolving", "sending", "completed"}, seen)
}

// An answer before the first read is due costs no read: the follow-up
// goes out on the card in use, and PollTask never runs.
func (s *DelegationSuite) TestAnswerBeforeTheFirstReadCostsNoRead() {
	s.ownPoll = true
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.Message.MessageID == MessageID("wf-1", "", 1) && in.InUse != nil &&
			in.InUse.Interface.URL == "http://agent/a2a/jsonrpc" && in.Send.Message.TaskID == "task-1" && in.Send.Message.Text == "photo.jpg"
	})).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.Anything).Return(contracts.TaskSnapshot{}, nil).Never()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo.jpg", AnsweredBy: "ops"})
	}, 4*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(1, o.InputRounds)
}

// No answer: the first read comes after the waiting interval, and reads
// at once (ReadFirst); a task the agent ended meanwhile ends the
// delegation with the agent's state.
func (s *DelegationSuite) TestFirstReadAfterTheWaitingInterval() {
	s.ownPoll = true
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool { return in.ReadFirst && in.SinceKey == "msg:q-1" })).
		Return(snap("failed"), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusFailed, o.Status)
	s.Equal(t0.Add(contracts.DefaultWaitingPollSeconds*time.Second), s.env.Now().UTC())
}

// The deadline while a question waits, after the first read: the
// deadline has its own timer from then on.
func (s *DelegationSuite) TestDeadlineAfterTheFirstRead() {
	s.ownPoll = true
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.Anything).
		After(72*time.Hour).Return(contracts.TaskSnapshot{}, temporal.NewApplicationError("unchanged", contracts.ErrTypeUnchanged)).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Equal(t0.Add(time.Hour), s.env.Now().UTC())
}

// A deadline closer than the first read: no read, the deadline ends it.
func (s *DelegationSuite) TestDeadlineBeforeTheFirstRead() {
	s.ownPoll = true
	d := contract()
	d.Deadline = t0.Add(2 * time.Minute)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.Anything).Return(contracts.TaskSnapshot{}, nil).Never()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	o := s.execute(d)
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Equal(t0.Add(2*time.Minute), s.env.Now().UTC())
}

// A send that outlasts a close deadline: the deadline timer is started
// before the send; at the deadline the send is abandoned, the task it made
// is found by its messageId and canceled.
func (s *DelegationSuite) TestCloseDeadlineIsArmedBeforeTheSend() {
	d := contract()
	d.Deadline = t0.Add(30 * time.Second)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).After(40*time.Second).Return(sent(snap("working")), nil).Maybe()
	s.env.OnActivity(contracts.ActivityFindTask, mock.Anything, mock.Anything).Return(contracts.FindTaskResult{Found: true, Snapshot: snap("working")}, nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	o := s.execute(d)
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Equal("task-1", o.RemoteTaskID)
}

// Refusals of the first send: nothing sent, the outcome says why.
func (s *DelegationSuite) TestRefusedFirstSends() {
	untrusted := claimsCard()
	untrusted.SignatureRequired = true
	untrusted.Verification = contracts.CardVerification{Status: contracts.SigUnsigned}
	noSkill := claimsCard()
	noSkill.SkillFound = false
	for name, tc := range map[string]struct {
		res  contracts.CheckAndSendResult
		want contracts.Status
		msg  string
	}{
		"untrusted": {contracts.CheckAndSendResult{Card: untrusted, Refused: "card"}, contracts.StatusCardUntrusted, "verified card signature is required"},
		"no skill":  {contracts.CheckAndSendResult{Card: noSkill, Refused: "card"}, contracts.StatusProtocolError, `offers no skill "open-claim"`},
		"modes":     {contracts.CheckAndSendResult{Card: claimsCard(), Refused: "input modes: text/plain is not accepted"}, contracts.StatusProtocolError, "text/plain"},
		"denied": {contracts.CheckAndSendResult{Card: claimsCard(), Authorization: &contracts.AuthorizationDecision{Reason: "skill not allowed"}},
			contracts.StatusAuthorizationDenied, "skill not allowed"},
	} {
		s.Run(name, func() {
			s.SetupTest()
			s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(tc.res, nil).Once()
			s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
			o := s.outcome()
			s.Equal(tc.want, o.Status)
			s.Contains(o.Error.Message, tc.msg)
			s.Empty(s.state().Sends, "nothing sent")
			s.env.AssertExpectations(s.T())
		})
	}
}

// A follow-up on a card that changed in a way that matters waits in
// card-changed; rediscover sends it on the new card.
func (s *DelegationSuite) TestCardChangeBeforeAFollowUpWaitsForRediscover() {
	moved, change := s.cardMovesBeforeRound1()
	res := sent(snap("completed", claim("claim_opened")))
	res.Card, res.Change = moved, change
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Authorization.Round == 1 && in.AcceptChange
	})).Return(res, nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.Equal(string(contracts.PhaseCardChanged), s.state().A2AState)
		s.env.SignalWorkflow(contracts.SignalRediscover, nil)
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal("http://agent/v2/jsonrpc", o.Protocol.URL)
	st := s.state()
	s.Require().Len(st.CardChanges, 2)
	s.True(st.CardChanges[0].Matters)
	s.False(st.CardChanges[0].Accepted)
}

// A send whose outcome is unknown still tells the workflow the card it
// went to (the error's details): the operator's abandon then cancels
// nothing it cannot reach, and the interface is known.
func (s *DelegationSuite) TestUnknownOutcomeKeepsTheCard() {
	details := contracts.CheckAndSendResult{Card: claimsCard(), Authorization: allowed()}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(contracts.CheckAndSendResult{},
		temporal.NewApplicationErrorWithOptions("the reply was cut off", string(contracts.CategoryUnknownOutcome),
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{details}})).Once()
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal(string(contracts.PhaseUnknownOutcome), st.A2AState)
		s.Equal("http://agent/a2a/jsonrpc", st.Interface.URL)
		s.Len(st.Authorizations, 1)
		s.env.SignalWorkflow(contracts.ResolveUnknown, contracts.Resolution{Action: contracts.ActionAbandon})
	}, FindTaskPatience+time.Minute) // the look at an agent that never answers gives up first
	o := s.execute(contract())
	s.Equal(contracts.StatusUnknownOutcome, o.Status)
}

// During a rolling deploy an older worker may take CheckAndSend and not
// know it: that is retried (another worker will), not a protocol error.
func (s *DelegationSuite) TestUnknownActivityOnAnOlderWorkerIsRetried() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(contracts.CheckAndSendResult{},
		temporal.NewApplicationError("unable to find activityType=CheckAndSend", "ActivityNotRegisteredError")).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
}
