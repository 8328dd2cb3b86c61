package workflows

import (
	"context"
	"time"

	"github.com/stretchr/testify/mock"
	sdk "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// question is an interrupted snapshot whose status has the identity key.
func question(state contracts.TaskState, key, text string) contracts.TaskSnapshot {
	sn := snap(state)
	sn.StatusText, sn.StatusKey = text, key
	return sn
}

// The agent republishes the task as it stood when it was answered (a2a-js
// 1.x replies to a follow-up with the INPUT_REQUIRED task it had): that is
// not a new question; the workflow watches on and completes in one round.
func (s *DelegationSuite) TestRepublishedQuestionIsNotANewRound() {
	q := question("input-required", "msg:q-1", "photo?")
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(q), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(sent(q), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool {
		return in.Since == "input-required" && in.SinceKey == "msg:q-1"
	})).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo attached"}) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Equal(1, o.InputRounds)
	st := s.state()
	s.Equal(1, st.StaleReplies)
	s.Equal("msg:q-1", st.Answers[0].QuestionKey)
}

// A question asked after the answer (another status identity) opens a new
// round.
func (s *DelegationSuite) TestNewQuestionAfterAnswerOpensARound() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(sent(question("input-required", "msg:q-2", "and the receipt?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(2, "task-1")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Require().NotNil(st.Question)
		s.Equal(2, st.Question.Round)
		s.Equal("and the receipt?", st.Question.Text)
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "receipt"})
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(2, o.InputRounds)
}

// The agent ends the task while the operator thinks: the waiting poll sees
// it, and the delegation ends with the agent's state and reason; nothing
// is sent.
func (s *DelegationSuite) TestAgentEndsTheTaskWhileWaiting() {
	s.ownPoll = true
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	ended := snap("canceled")
	ended.StatusText = "the agent gave up waiting"
	d := contract()
	d.WaitingPollSeconds = 5
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool {
		return in.Since == "input-required" && in.SinceKey == "msg:q-1" && in.TaskID == "task-1"
	})).After(10*time.Minute).Return(ended, nil).Once()
	o := s.execute(d)
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Equal(contracts.CategoryRemoteBusiness, o.Error.Category)
	s.Contains(o.Error.Message, "the agent gave up waiting")
	s.Equal(0, o.InputRounds)
}

// A follow-up that fails because the agent had ended the task: the task is
// read, and its own state and reason stand (not protocol_error).
func (s *DelegationSuite) TestFollowUpToAnEndedTaskKeepsTheAgentsReason() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).
		Return(contracts.CheckAndSendResult{}, temporal.NewNonRetryableApplicationError("SendMessage: protocol (JSON-RPC error -32004): task is in a terminal state", "protocol", nil)).Once()
	ended := snap("canceled")
	ended.StatusText = "closed by the agent"
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(ended, nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Equal(contracts.CategoryRemoteBusiness, o.Error.Category)
	s.Contains(o.Error.Message, "closed by the agent")
	st := s.state()
	s.Contains(st.Answers[0].Refused, "terminal state")
}

// A reply naming another task id ends protocol_error naming both ids; the
// tracked id is kept and the remote task is canceled with it.
func (s *DelegationSuite) TestAnotherTaskIDIsNotAdopted() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).
		Return(contracts.TaskSnapshot{}, temporal.NewNonRetryableApplicationError(`GetTask: protocol: the reply names taskId "task-9", the delegation tracks taskId "task-1"`, "protocol", nil)).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.MatchedBy(func(in contracts.CancelInput) bool { return in.TaskID == "task-1" })).
		Return(snap("canceled"), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusProtocolError, o.Status)
	s.Contains(o.Error.Message, "task-9")
	s.Equal("task-1", o.RemoteTaskID)
}

// A send that fails transiently is sent again (same messageId) until it
// goes through; meanwhile the state shows the last error.
func (s *DelegationSuite) TestTransientSendIsRetriedShowingTheLastError() {
	transientErr := temporal.NewApplicationError("SendMessage: transient (HTTP 503): agent overloaded", "transient")
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(contracts.CheckAndSendResult{}, transientErr).Times(3)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		if s.NotNil(st.Retrying) {
			s.Equal("CheckAndSend", st.Retrying.Op)
			s.Contains(st.Retrying.LastError, "agent overloaded")
		}
		// The UI's current details say it in words.
		v, err := s.env.QueryWorkflow("__temporal_workflow_metadata") // the UI's query
		if s.NoError(err) {
			var md sdk.WorkflowMetadata
			s.NoError(v.Get(&md))
			s.Contains(md.GetCurrentDetails(), "**Retrying CheckAndSend** (attempt ")
			s.Contains(md.GetCurrentDetails(), "agent overloaded")
		}
	}, 2*time.Second)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	st := s.state()
	s.Nil(st.Retrying)
	s.Equal(4, st.Sends[0].Attempts)
}

// A transient failure never ends a delegation as protocol_error: it is
// retried to the deadline, which names the last error.
func (s *DelegationSuite) TestTransientFailureUntilTheDeadline() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).
		Return(contracts.CheckAndSendResult{}, temporal.NewApplicationError("SendMessage: transient: connection refused", "transient"))
	o := s.execute(contract())
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Contains(o.Error.Message, "connection refused")
}

// An agent that is briefly unreachable at start (its card cannot be
// fetched): CheckAndSend is retried with backoff (not ended after seconds
// as protocol_error).
func (s *DelegationSuite) TestCardFetchRetriedWhileTransient() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).
		Return(contracts.CheckAndSendResult{}, temporal.NewApplicationError("ResolveCard: connection refused", "transient")).Times(6)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Equal(7, s.state().Sends[0].Attempts)
}

// A status with no message id and no timestamp cannot tell a republished
// question from the same question asked again: after StaleWindow without
// change it is asked again (a new round), never left waiting unseen.
func (s *DelegationSuite) TestSameQuestionWithoutIdentityIsAskedAgain() {
	weak := question("input-required", contracts.StatusKeyOf("input-required", "", "", "photo?", nil), "photo?")
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(weak), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(sent(weak), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool {
		return in.Within == int(StaleWindow/time.Second)
	})).Return(weak, nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(2, "task-1")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		if s.NotNil(st.Question, "asked again") {
			s.Equal(2, st.Question.Round)
		}
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo, again"})
	}, 5*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Equal(2, o.InputRounds)
}

// A follow-up refused with a transient-looking error because the agent had
// completed the task: the task is read before trying again, and the
// agent's result stands (not retried to the deadline).
func (s *DelegationSuite) TestFollowUpRefusedTransientlyAfterTheTaskEnded() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).
		Return(contracts.CheckAndSendResult{}, temporal.NewApplicationError("SendMessage: transient (JSON-RPC error -32603): task t-1 is already completed", "transient")).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Len(o.Outputs, 1)
}

// A cancel that arrives while the first send is in flight: the cancel does
// not wait for the send (it is abandoned at once); the task the send made
// is looked for by its messageId (FindTask), recorded and canceled, and
// the Outcome names it (the agent's task is not orphaned).
func (s *DelegationSuite) TestCancelDuringTheSendCancelsTheTaskItCreated() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).After(10*time.Minute).Return(sent(snap("working")), nil).Maybe()
	s.env.OnActivity(contracts.ActivityFindTask, mock.Anything, mock.MatchedBy(func(in contracts.FindTaskInput) bool { return in.MessageID == MessageID("wf-1", "", 0) })).
		Return(contracts.FindTaskResult{Found: true, Snapshot: snap("working")}, nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.MatchedBy(func(in contracts.CancelInput) bool { return in.TaskID == "task-1" })).
		Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Second)
	o := s.execute(contract())
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Equal("task-1", o.RemoteTaskID)
	// The cancel took effect at once, not when the send would have ended.
	s.Less(s.env.Now().Sub(t0), time.Minute)
	st := s.state()
	if s.Len(st.Sends, 2) {
		s.Equal("abandoned at the stop", st.Sends[0].Result)
		s.Equal("adopted: found by ListTasks", st.Sends[1].Result)
	}
}

// The same when no task of the abandoned send is found (the agent serves
// no ListTasks, or made none): the Outcome names the messageId as unknown.
// It said "canceled, remote task none", with nothing of a send the agent
// had in fact taken and completed.
func (s *DelegationSuite) TestCancelDuringASendWhoseOutcomeIsUnknown() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).After(10*time.Minute).Return(sent(snap("working")), nil).Maybe()
	s.env.OnActivity(contracts.ActivityFindTask, mock.Anything, mock.Anything).Return(contracts.FindTaskResult{NotOffered: true}, nil).Once()
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Second)
	o := s.execute(contract())
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Contains(o.Error.Message, MessageID("wf-1", "", 0))
	s.Contains(o.Error.Message, "outcome is unknown")
	st := s.state()
	s.Equal(MessageID("wf-1", "", 0), st.SendInFlight)
	if s.Len(st.Sends, 2) {
		s.Equal("abandoned at the stop", st.Sends[0].Result)
		s.Equal("not found: the agent serves no ListTasks", st.Sends[1].Result)
	}
}

// A send whose outcome is unknown (it timed out after the request was
// written) is looked for before anything is sent again: the task found by
// its messageId is adopted, and no resend makes a second task, whatever
// on_unknown_outcome says.
func (s *DelegationSuite) TestUnknownOutcomeFindsTheTaskBeforeAResend() {
	unknown := temporal.NewNonRetryableApplicationError("SendMessage: timed out after the request was written", string(contracts.CategoryUnknownOutcome), nil)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(contracts.CheckAndSendResult{Card: claimsCard()}, unknown).Once()
	s.env.OnActivity(contracts.ActivityFindTask, mock.Anything, mock.MatchedBy(func(in contracts.FindTaskInput) bool {
		return in.MessageID == MessageID("wf-1", "", 0) && in.Since.Before(t0.Add(time.Second))
	})).Return(contracts.FindTaskResult{Found: true, Snapshot: snap("completed", claim("claim_opened"))}, nil).Once()
	d := contract()
	d.OnUnknownOutcome = contracts.OnUnknownResend
	o := s.execute(d)
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Equal("task-1", o.RemoteTaskID)
	st := s.state()
	if s.Len(st.Sends, 2) {
		s.Equal("unknown_outcome", st.Sends[0].Result)
		s.Equal("adopted: found by ListTasks", st.Sends[1].Result)
	}
}

// The same at the deadline, with a send that never finishes: the Outcome
// says a send was in flight, with its messageId.
func (s *DelegationSuite) TestDeadlineWithASendThatNeverFinishes() {
	d := contract()
	d.Deadline = t0.Add(time.Minute)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).After(time.Hour).Return(sent(snap("working")), nil).Maybe()
	o := s.execute(d)
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Contains(o.Error.Message, MessageID("wf-1", "", 0))
	s.Contains(o.Error.Message, "in flight")
}

// A deadline closer than the waiting cadence: the waiting read gives up
// without a change before its next interval; the delegation waits on and
// ends at its deadline (not protocol_error).
func (s *DelegationSuite) TestWaitingReadGivesUpBeforeTheDeadline() {
	s.ownPoll = true
	d := contract()
	d.Deadline = t0.Add(2 * time.Minute)
	d.WaitingPollSeconds = 30 // the first read comes before the deadline
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.Anything).
		Return(contracts.TaskSnapshot{}, temporal.NewNonRetryableApplicationError("the first read is one interval away", contracts.ErrTypeUnchanged, nil)).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	o := s.execute(d)
	s.Equal(contracts.StatusDeadlineExceeded, o.Status, "%+v", o.Error)
}

// A send cut by the agent's outage (the agent down for a minute): the look
// for its task keeps asking while the agent does not answer, finds the task
// when it is back, and adopts it: no operator, no second task. (It gave up
// after three attempts in about 3 s, and the delegation waited in
// unknown-outcome for an operator: make test-cluster, the agent's stop.)
func (s *DelegationSuite) TestTheLookForACutSendOutlastsTheAgentsOutage() {
	unknown := temporal.NewNonRetryableApplicationError("SendMessage: the connection was reset after the request was written", string(contracts.CategoryUnknownOutcome), nil)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(contracts.CheckAndSendResult{Card: claimsCard()}, unknown).Once()
	down := temporal.NewApplicationError("ListTasks: connection refused", string(contracts.CategoryTransient))
	looks := 0
	s.env.OnActivity(contracts.ActivityFindTask, mock.Anything, mock.Anything).Return(func(context.Context, contracts.FindTaskInput) (contracts.FindTaskResult, error) {
		looks++
		if looks <= 6 { // about a minute: 1, 2, 4, 8, 16 and 30 s apart
			return contracts.FindTaskResult{}, down
		}
		return contracts.FindTaskResult{Found: true, Snapshot: snap("completed", claim("claim_opened"))}, nil
	})
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Equal(7, looks)
	st := s.state()
	if s.Len(st.Sends, 2) {
		s.Equal("adopted: found by ListTasks", st.Sends[1].Result)
	}
}
