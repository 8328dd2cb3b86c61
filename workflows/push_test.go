package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/a2adelegate/delegate/contracts"
)

// pushedWork mocks a first send that leaves the task working with a push
// config registered, and a contract that reads the task only every hour.
func (s *LeanSuite) pushedWork() contracts.Delegation {
	working := snap("working")
	working.PushConfigured = true
	s.env.OnActivity(acts.CheckAndSend, mock.Anything, round(0)).Return(sent(working), nil).Once()
	s.env.OnActivity(acts.PollTask, mock.Anything, mock.Anything).Return(contracts.TaskSnapshot{}, nil).Never()
	s.env.OnActivity(acts.WatchTask, mock.Anything, mock.Anything).Return(contracts.TaskSnapshot{}, nil).Never()
	d := contract()
	d.WaitingPollSeconds = 3600
	return d
}

func (s *LeanSuite) push(after time.Duration, taskID, state string) {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalTaskUpdate, contracts.TaskUpdate{TaskID: taskID, State: state, Timestamp: s.env.Now().UTC().Format(time.RFC3339)})
	}, after)
}

// A 10-minute remote task followed by push only: nothing is read between
// the send and the push; the push makes one read (GetTask), which ends it.
func (s *LeanSuite) TestPushFollowsATenMinuteTaskWithoutPolling() {
	d := s.pushedWork()
	s.env.OnActivity(acts.GetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
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
func (s *LeanSuite) TestForgedAndReplayedPushesChangeNothing() {
	d := s.pushedWork()
	s.env.OnActivity(acts.GetTask, mock.Anything, mock.Anything).Return(snap("working"), nil).Twice()
	s.env.OnActivity(acts.GetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
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
func (s *LeanSuite) TestNoPushFallsBackToTheWaitingCadence() {
	d := s.pushedWork()
	d.WaitingPollSeconds = 1200
	s.env.OnActivity(acts.GetTask, mock.Anything, mock.Anything).Return(snap("working"), nil).Once()
	s.env.OnActivity(acts.GetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	o := s.execute(d)
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(t0.Add(40*time.Minute), s.env.Now().UTC(), "read at 20 and 40 minutes")
}

// A delegation that does not follow its task by push (the card declares
// no pushNotifications) ignores a task-update and records it.
func (s *LeanSuite) TestPushIgnoredWithoutPush() {
	s.env.OnActivity(acts.CheckAndSend, mock.Anything, round(0)).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(acts.WatchTask, mock.Anything, mock.Anything).After(5*time.Minute).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.push(time.Minute, "task-1", "TASK_STATE_COMPLETED")
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	st := s.state()
	s.Require().Len(st.IgnoredSignals, 1)
	s.Contains(st.IgnoredSignals[0].Reason, "does not follow its task by push")
}
