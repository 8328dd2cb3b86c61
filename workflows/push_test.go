package workflows

import (
	"errors"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// pushedWork mocks a first send that leaves the task working with a push
// config registered, and a contract that reads the task only every hour.
func (s *DelegationSuite) pushedWork() contracts.Delegation {
	s.ownPoll = true
	working := snap("working")
	working.PushConfigured = true
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(working), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.Anything).Return(contracts.TaskSnapshot{}, nil).Never()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).Return(contracts.TaskSnapshot{}, nil).Never()
	d := contract()
	d.WaitingPollSeconds = 3600
	return d
}

func (s *DelegationSuite) push(after time.Duration, taskID, state string) {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalTaskUpdate, contracts.TaskUpdate{TaskID: taskID, State: state, Timestamp: s.env.Now().UTC().Format(time.RFC3339)})
	}, after)
}

// A 10-minute remote task followed by push only: nothing is read between
// the send and the push; the push makes one read (GetTask), which ends it.
func (s *DelegationSuite) TestPushFollowsATenMinuteTaskWithoutPolling() {
	d := s.pushedWork()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.push(10*time.Minute, "task-1", "TASK_STATE_COMPLETED")
	o := s.execute(d)
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(t0.Add(10*time.Minute), s.env.Now().UTC(), "the delegation ended at the push, not at a poll")
	s.env.AssertNumberOfCalls(s.T(), "GetTask", 1)
	st := s.state()
	s.True(st.Push)
	s.Equal(1, st.Pushes)
}

// A push for another task, and a push replayed (the task has not changed:
// the read shows it still working), change nothing: the first is
// recorded and ignored without a read, the second costs one read.
func (s *DelegationSuite) TestForgedAndReplayedPushesChangeNothing() {
	d := s.pushedWork()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("working"), nil).Twice()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.push(2*time.Minute, "someone-elses-task", "TASK_STATE_COMPLETED")
	s.push(3*time.Minute, "task-1", "TASK_STATE_COMPLETED")
	s.push(3*time.Minute+time.Second, "task-1", "TASK_STATE_COMPLETED")
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal("working", st.A2AState, "a push is a hint: the task as read stands")
		s.Require().Len(st.IgnoredSignals, 1)
		s.Contains(st.IgnoredSignals[0].Reason, `"someone-elses-task"`)
	}, 5*time.Minute)
	s.push(10*time.Minute, "task-1", "TASK_STATE_COMPLETED")
	o := s.execute(d)
	s.Equal(contracts.StatusCompleted, o.Status)
	s.env.AssertNumberOfCalls(s.T(), "GetTask", 3)
}

// When pushes stop, the waiting cadence takes over: the task is read every
// waiting_poll_seconds.
func (s *DelegationSuite) TestNoPushFallsBackToTheWaitingCadence() {
	d := s.pushedWork()
	d.WaitingPollSeconds = 1200
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("working"), nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	o := s.execute(d)
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(t0.Add(40*time.Minute), s.env.Now().UTC(), "read at 20 and 40 minutes")
}

// A delegation that does not follow its task by push (the card declares
// no pushNotifications) ignores a task-update and records it.
func (s *DelegationSuite) TestPushIgnoredWithoutPush() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(5*time.Minute).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.push(time.Minute, "task-1", "TASK_STATE_COMPLETED")
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	st := s.state()
	s.Require().Len(st.IgnoredSignals, 1)
	s.Contains(st.IgnoredSignals[0].Reason, "does not follow its task by push")
}

// A run whose history is full while it waits for an operator (signals
// flooding it) hands the question over to a new run at once, so that
// Signals, revoke among them, are never refused by the server's per-run
// limits.
func (s *DelegationSuite) TestFullHistoryWhileWaitingContinuesAsNew() {
	s.opts.WaitingHistoryEvents = -1 // the test environment reports a length of 0
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "want continue-as-new, got %v", s.env.GetWorkflowError())
	var d contracts.Delegation
	var c contracts.Carry
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &d, &c))
	s.Require().NotNil(c.State.LastSnapshot)
	s.Equal("msg:q-1", c.State.LastSnapshot.StatusKey, "the question goes to the next run")
	s.Nil(c.State.Question, "the next run asks it")
}

// A cancel that finds the task completed by a send in flight keeps the
// agent's artifacts as late results: cancel_unconfirmed, not canceled
// with the claim lost.
func (s *DelegationSuite) TestCancelAfterTheTaskCompletedKeepsItsArtifacts() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	// The follow-up in flight at the cancel is abandoned; the agent had
	// completed the task with it, and says so to the CancelTask.
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(1)).After(30*time.Second).Return(sent(snap("completed", claim("claim_opened"))), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, time.Minute+10*time.Second)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Require().True(s.env.IsWorkflowCompleted())
	st := s.state()
	s.Require().NotNil(st.Outcome, "err: %v", s.env.GetWorkflowError())
	s.Equal(contracts.StatusCancelUnconfirmed, st.Outcome.Status)
	s.Len(st.LateResults, 1)
}

// A Signal sent under a name the delegation has no handler for (a typo
// in the UI's form) is shown in the state, never applied.
func (s *DelegationSuite) TestUnknownSignalNamesShown() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow("provide_input", contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal([]string{"provide_input"}, st.UnknownSignals)
		s.NotNil(st.Question, "not applied")
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"})
	}, 2*time.Minute)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(1)).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(1, o.InputRounds)
}

// A delegation followed by push publishes where it stands before it
// waits, and a reconcile that sees the task ended moves it on at once: a
// lost push does not leave it waiting an hour.
func (s *DelegationSuite) TestReconcileMovesAPushedDelegationOn() {
	d := s.pushedWork()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.Equal("working", s.state().A2AState)
		s.env.SignalWorkflow(contracts.SignalReconcile, nil)
	}, 5*time.Minute)
	o := s.execute(d)
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(t0.Add(5*time.Minute), s.env.Now().UTC(), "moved on at the reconcile, not at the hour")
	s.Equal(0, s.state().Pushes)
}

// A run flooded by pushes (its history full) continues as new, carrying
// the push, instead of reading the task over and over.
func (s *DelegationSuite) TestPushFloodContinuesAsNew() {
	d := s.pushedWork()
	s.opts.WaitingHistoryEvents = -1 // the test environment reports a length of 0
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("working"), nil).Never()
	s.env.ExecuteWorkflow(contracts.WorkflowType, d)
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "want continue-as-new, got %v", s.env.GetWorkflowError())
}
