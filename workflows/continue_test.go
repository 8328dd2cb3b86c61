package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// lowThreshold makes every run continue as new at its first chance (the
// test environment reports a history length of 0).
func (s *DelegationSuite) lowThreshold() {
	s.opts.ContinueAsNewEvents = -1
}

// carryOf decodes the contracts.Carry of a run that continued as new.
func (s *DelegationSuite) carryOf() contracts.Carry {
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "want continue-as-new, got %v", s.env.GetWorkflowError())
	payloads := can.Input.GetPayloads()
	s.Require().Len(payloads, 2)
	var c contracts.Carry
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayload(payloads[1], &c))
	return c
}

// A revoke that arrives in the same workflow task as the watch result that
// triggers continue-as-new is applied in this run, exactly once.
func (s *DelegationSuite) TestRevokeAtTheContinueAsNewTrigger() {
	s.lowThreshold()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("submitted")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(time.Minute).Return(snap("working"), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "stop now"}) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.Contains(o.Error.Message, "stop now")
	revokes := 0
	for _, a := range s.state().Authorizations {
		if a.Policy == "signal" {
			revokes++
		}
	}
	s.Equal(1, revokes)
}

// Continue-as-new hands the state and the intents over as the second
// input; signals still buffered are applied (or recorded) first.
func (s *DelegationSuite) TestContinueAsNewCarriesStateAndIntents() {
	s.lowThreshold()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("submitted")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(time.Minute).Return(snap("working"), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		// No question is pending: recorded as ignored, carried in the state.
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "too early"})
		s.env.SignalWorkflow(contracts.SignalReconcile, nil)
	}, time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	c := s.carryOf()
	s.Equal("task-1", c.State.RemoteTaskID)
	s.Equal(contracts.TaskStateWorking, c.State.LastSnapshot.State)
	s.Nil(c.Revoked)
	if s.Len(c.State.IgnoredSignals, 1) {
		s.Equal(contracts.ProvideInput, c.State.IgnoredSignals[0].Name)
	}
	s.True(c.Reconcile, "the reconcile asked for is carried")
}

// The next run goes on from the carried state: no resend of round 0, and a
// carried revoke is applied.
func (s *DelegationSuite) TestRunFromCarriedState() {
	st := carriedState()
	st.InputRounds = 1
	reason := "carried revoke"
	s.env.SetContinuedExecutionRunID("run-0")
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.MatchedBy(func(in contracts.CancelInput) bool { return in.TaskID == "task-1" })).
		Return(snap("canceled"), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract(), contracts.Carry{State: st, Revoked: &reason, FromRunID: "run-0", ContractDigest: contractDigest(mustJSON(contract()))})
	o := s.outcome()
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.Contains(o.Error.Message, "carried revoke")
	s.Equal(1, s.state().ContinuedAsNew)
}

// A carried state that does not decode fails the workflow loudly, naming
// it; the delegation never starts again from round 0.
func (s *DelegationSuite) TestCarriedStateThatDoesNotDecode() {
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract(), map[string]any{"state": map[string]any{"input_rounds": "three"}})
	err := s.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "error = %v", err)
	s.Equal(ErrTypeCarriedState, appErr.Type())
	s.Contains(appErr.Message(), "input_rounds")
}

// After WorkflowRetries attempts, the retries are handed over to Temporal
// (one activity), so that an agent down for days adds bounded history.
func (s *DelegationSuite) TestRetriesHandedOverToTemporal() {
	transientErr := temporal.NewApplicationError("SendMessage: transient (HTTP 503)", "transient")
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(contracts.CheckAndSendResult{}, transientErr).Times(WorkflowRetries)
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).After(10*time.Minute).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		if s.NotNil(st.Retrying) {
			s.True(st.Retrying.HandedOver)
			s.Equal(WorkflowRetries, st.Retrying.Attempts)
		}
	}, 5*time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
	s.Nil(s.state().Retrying)
}

// A carried state that cannot be right is refused, naming the field.
func (s *DelegationSuite) TestCarriedStateIsChecked() {
	for name, mutate := range map[string]func(*contracts.State){
		"input_rounds":   func(st *contracts.State) { st.InputRounds = -1 },
		"last_snapshot":  func(st *contracts.State) { done := snap("completed"); st.LastSnapshot = &done },
		"remote_task_id": func(st *contracts.State) { st.RemoteTaskID = "" },
	} {
		s.Run(name, func() {
			s.SetupTest()
			last := snap("working")
			st := contracts.State{LocalWorkflowID: "wf-1", RemoteTaskID: "task-1", ContextID: "ctx-1", A2AState: "working", LastSnapshot: &last}
			mutate(&st)
			s.env.ExecuteWorkflow(contracts.WorkflowType, contract(), contracts.Carry{State: st})
			var appErr *temporal.ApplicationError
			s.Require().True(errors.As(s.env.GetWorkflowError(), &appErr))
			s.Equal(ErrTypeCarriedState, appErr.Type())
			s.Contains(appErr.Message(), name)
		})
	}
}

// A storm of reconcile requests while a read hangs keeps the state small.
func (s *DelegationSuite) TestReconcileStormIsBounded() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).After(3*time.Hour).Return(question("input-required", "msg:q-1", "photo?"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		for range 500 {
			s.env.SignalWorkflow(contracts.SignalReconcile, nil)
		}
	}, time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusDeadlineExceeded, s.outcome().Status)
	st := s.state()
	s.LessOrEqual(len(st.Reconciliations), maxReconciliations)
	s.Equal(499, st.ReconcileCount, "every folded request is counted")
}

// A reconcile read that returns after the task was observed again is not
// applied: it must not withdraw a newer question.
func (s *DelegationSuite) TestLateReconcileReadIsSuperseded() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(3*time.Minute).Return(question("input-required", "msg:q-1", "photo?"), nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).After(5*time.Minute).Return(snap("working"), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalReconcile, nil) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Require().NotNil(st.Question, "the newer question stands")
		if s.Len(st.Reconciliations, 1) {
			s.Contains(st.Reconciliations[0].Error, "superseded")
		}
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"})
	}, 7*time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
}

// The carried state stays under MaxCarryBytes however long the delegation
// has run.
func (s *DelegationSuite) TestCarryIsTrimmed() {
	c := contracts.Carry{}
	for i := range 40 {
		c.State.Answers = append(c.State.Answers, contracts.AnswerRecord{Round: i + 1, Text: strings.Repeat("a", 60<<10)})
	}
	for range 5000 {
		c.State.Transitions = append(c.State.Transitions, contracts.Transition{State: "working", At: t0})
	}
	trimCarry(&c)
	b, _ := json.Marshal(c)
	s.LessOrEqual(len(b), MaxCarryBytes)
	s.Len(c.State.Answers, 40, "every answer record is kept")
	s.Equal(60<<10, len(c.State.Answers[39].Text), "the newest answers keep their text")
}

// carriedState is the state a run of contract() hands over while its task
// works.
func carriedState() contracts.State {
	c := contract()
	last := snap("working")
	return contracts.State{LocalWorkflowID: c.LocalWorkflowID, AgentCardURL: c.AgentCardURL, Skill: c.Skill, Purpose: c.Purpose,
		RemoteTaskID: "task-1", ContextID: "ctx-1", A2AState: "working", LastSnapshot: &last}
}

// An answer the previous run accepted (the Update said so) and handed
// over before it continued as new at the question is sent by the next
// run. Before, the next run asked the question again and dropped it.
func (s *DelegationSuite) TestCarriedAnswerIsSent() {
	st := carriedState()
	q := snap("input-required")
	st.LastSnapshot, st.A2AState = &q, "input-required"
	s.env.SetContinuedExecutionRunID("run-0")
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.Message.Text == "carried answer" && in.Send.Message.TaskID == "task-1" && in.Send.Message.MessageID == MessageID("wf-1", "", 1)
	})).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract(), contracts.Carry{State: st, FromRunID: "run-0", ContractDigest: contractDigest(mustJSON(contract())),
		Pending: &contracts.Answer{Text: "carried answer", AnsweredBy: "alice"}, PendingVia: "update"})
	o := s.outcome()
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(1, o.InputRounds)
	s.Equal("alice", s.state().Answers[0].AnsweredBy)
}

// A carry written by a newer worker (a rolling deploy) holds fields this
// code does not know, in the carry and in its state: they are read past,
// and the delegation goes on from the state it carries. Refusing them
// failed every run handed over by a newer worker.
func (s *DelegationSuite) TestCarryOfANewerWorkerIsRead() {
	st := carriedState()
	raw, _ := json.Marshal(st)
	var stMap map[string]any
	_ = json.Unmarshal(raw, &stMap)
	stMap["a_field_of_the_next_release"] = map[string]any{"n": 1}
	s.env.SetContinuedExecutionRunID("run-0")
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract(),
		map[string]any{"state": stMap, "from_run_id": "run-0", "contract_digest": contractDigest(mustJSON(contract())), "a_field_of_the_next_release": true})
	o := s.outcome()
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	s.Equal(st.RemoteTaskID, o.RemoteTaskID)
}
