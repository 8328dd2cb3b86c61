package workflows

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// DelegationSuite runs the Delegation workflow (the baseline) in the
// test environment, its activities mocked.
type DelegationSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// opts configure the Delegation workflow of the test (set before
	// ExecuteWorkflow; SetupTest resets them).
	opts Options
	// ownPoll: the test mocks PollTask itself (the default mock, a task
	// that does not change while an operator is asked, stands aside).
	ownPoll bool
}

func TestDelegation(t *testing.T) { suite.Run(t, new(DelegationSuite)) }

func (s *DelegationSuite) SetupTest() {
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	s.ownPoll = false
	s.opts = Options{}
	s.env = s.NewTestWorkflowEnvironment()
	s.env.SetStartTime(t0)
	s.env.RegisterWorkflowWithOptions(func(ctx workflow.Context, input, carried converter.RawValue) (contracts.Outcome, error) {
		return delegation(ctx, input, carried, s.opts)
	}, workflowRegisterOptions())
	// The workflow id is the contract's local_workflow_id (admit).
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: contract().LocalWorkflowID})
	activities.Register(s.env, &activities.Activities{})
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.MatchedBy(func(contracts.WatchInput) bool { return !s.ownPoll })).
		After(72*time.Hour).Return(contracts.TaskSnapshot{}, temporal.NewApplicationError("unchanged", contracts.ErrTypeUnchanged)).Maybe()
}

func (s *DelegationSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func contract() contracts.Delegation {
	return contracts.Delegation{
		LocalWorkflowID: "wf-1", AgentCardURL: "http://agent/.well-known/agent-card.json", Skill: "open-claim",
		Purpose: "open a claim", Message: contracts.MessageSpec{Text: "lost parcel A-1001"},
		AllowedOutputs: []string{"claim_opened"}, Deadline: t0.Add(time.Hour), WriteAuthority: "none",
	}
}

func snap(state contracts.TaskState, arts ...contracts.Artifact) contracts.TaskSnapshot {
	return contracts.TaskSnapshot{TaskID: "task-1", ContextID: "ctx-1", State: state, Artifacts: arts}
}

func claim(name string) contracts.Artifact {
	return contracts.Artifact{ArtifactID: "art-" + name, Name: name, Parts: []contracts.Part{{Kind: contracts.PartData, Data: json.RawMessage(`{"claim_id":"C-1","order_id":"A-1001"}`)}}}
}

// sendIs matches a CheckAndSendInput by round (its messageId) and task id.
func sendIs(round int, taskID string) any {
	return mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.Message.MessageID == MessageID("wf-1", "", round) && in.Send.Message.TaskID == taskID
	})
}

// round matches a CheckAndSendInput by round (its messageId).
func round(n int) any {
	return mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.Message.MessageID == MessageID("wf-1", "", n)
	})
}

// claimsCard is the resolved card of the example claims agent.
func claimsCard() contracts.ResolvedCard {
	return contracts.ResolvedCard{
		Agent:      contracts.AgentInfo{Name: "Claims Agent", CardURL: "http://agent/.well-known/agent-card.json", CardVersion: "1.0.0", CardDigest: "sha256:00"},
		Interface:  contracts.Interface{URL: "http://agent/a2a/jsonrpc", Binding: "JSONRPC", Version: "1.0", CardOrigin: "http://agent"},
		SkillFound: true,
	}
}

func allowed() *contracts.AuthorizationDecision {
	return &contracts.AuthorizationDecision{Allowed: true, Policy: "allow-all"}
}

// sent is a CheckAndSend that sent and got sn back.
func sent(sn contracts.TaskSnapshot) contracts.CheckAndSendResult {
	return contracts.CheckAndSendResult{Card: claimsCard(), Authorization: allowed(), Sent: true, Snapshot: sn}
}

func (s *DelegationSuite) outcome() contracts.Outcome { return outcomeOf(&s.Suite, s.env) }

// execute runs the Delegation workflow on d to its end and returns the
// Outcome.
func (s *DelegationSuite) execute(d contracts.Delegation) contracts.Outcome {
	s.env.ExecuteWorkflow(contracts.WorkflowType, d)
	return s.outcome()
}

func (s *DelegationSuite) state() contracts.State { return stateOf(&s.Suite, s.env) }

// outcomeOf is the Outcome of a completed test workflow.
func outcomeOf(s *suite.Suite, env *testsuite.TestWorkflowEnvironment) contracts.Outcome {
	s.True(env.IsWorkflowCompleted())
	s.NoError(env.GetWorkflowError())
	var o contracts.Outcome
	s.NoError(env.GetWorkflowResult(&o))
	return o
}

// stateOf is Query "state" of a test workflow.
func stateOf(s *suite.Suite, env *testsuite.TestWorkflowEnvironment) contracts.State {
	v, err := env.QueryWorkflow(contracts.QueryState)
	s.Require().NoError(err)
	var st contracts.State
	s.Require().NoError(v.Get(&st))
	return st
}

func (s *DelegationSuite) TestHappyPathWithoutInput() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("submitted")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool { return in.Since == "submitted" })).
		Return(snap("working"), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool { return in.Since == "working" })).
		Return(snap("completed", claim("claim_opened")), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Require().Len(o.Outputs, 1)
	s.Equal("claim_opened", o.Outputs[0].Kind)
	s.JSONEq(`{"claim_id":"C-1","order_id":"A-1001"}`, string(o.Outputs[0].Data))
	s.Empty(o.RejectedArtifacts)
	s.Equal("task-1", o.RemoteTaskID)
	s.Equal("ctx-1", o.ContextID)
	s.Equal(contracts.ProtocolInfo{Version: "1.0", Binding: "JSONRPC", URL: "http://agent/a2a/jsonrpc"}, o.Protocol)
	s.Equal(0, o.InputRounds)
	st := s.state()
	var seen []string
	for _, tr := range st.Transitions {
		seen = append(seen, tr.State)
	}
	s.Equal([]string{"resolving", "sending", "submitted", "working", "completed"}, seen)
}

// expectInputRound scripts: first send → input-required; follow-up with the
// same task → working → completed.
func (s *DelegationSuite) expectInputRound(answerText string) {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.Message.MessageID == MessageID("wf-1", "", 1) &&
			in.Send.Message.TaskID == "task-1" && in.Send.Message.ContextID == "ctx-1" && in.Send.Message.Text == answerText
	})).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
}

func (s *DelegationSuite) TestInputRequiredAnsweredBySignal() {
	s.expectInputRound("photo.jpg")
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal("input-required", st.A2AState)
		s.Require().NotNil(st.Question)
		s.Equal(1, st.Question.Round)
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo.jpg", AnsweredBy: "ops"})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(1, o.InputRounds)
	st := s.state()
	s.Require().Len(st.Answers, 1)
	s.Equal("signal", st.Answers[0].Via)
	s.Equal("ops", st.Answers[0].AnsweredBy)
	s.Nil(st.Question)
}

func (s *DelegationSuite) TestInputRequiredAnsweredByUpdate() {
	s.expectInputRound("photo.jpg")
	var rejectedEmpty, rejectedEarly error
	var accepted *contracts.ProvideInputResult
	// Before the question: refused.
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(contracts.ProvideInput, "early", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejectedEarly = err },
			OnAccept: func() {}, OnComplete: func(any, error) {},
		}, contracts.Answer{Text: "too early"})
	}, 0)
	var rejectedBare, rejectedUnknown error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(contracts.ProvideInput, "empty", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejectedEmpty = err },
			OnAccept: func() {}, OnComplete: func(any, error) {},
		}, contracts.Answer{Text: "   "})
		// What a person types into the UI's form: refused with the rule.
		s.env.UpdateWorkflow(contracts.ProvideInput, "bare", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejectedBare = err },
			OnAccept: func() {}, OnComplete: func(any, error) {},
		}, "photo attached: box.jpg")
		s.env.UpdateWorkflow(contracts.ProvideInput, "unknown-field", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejectedUnknown = err },
			OnAccept: func() {}, OnComplete: func(any, error) {},
		}, map[string]any{"txt": "photo"})
		s.env.UpdateWorkflow(contracts.ProvideInput, "good", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail("rejected", err.Error()) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				s.NoError(err)
				r := v.(contracts.ProvideInputResult)
				accepted = &r
			},
		}, contracts.Answer{Text: "photo.jpg", AnsweredBy: "ops"})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(1, o.InputRounds)
	s.ErrorContains(rejectedEarly, "no question is pending")
	s.ErrorContains(rejectedBare, "must be a JSON object")
	s.ErrorContains(rejectedUnknown, "txt")
	s.ErrorContains(rejectedEmpty, "an answer needs text or data")
	s.Require().NotNil(accepted)
	s.Equal(1, accepted.Round)
	s.Equal("update", s.state().Answers[0].Via)
}

// TestAnswerForAnotherRound: an answer written for another question round
// (a late elicitation, an old screen) is refused by the Update and dropped
// by the Signal; the pending round's answer is taken.
func (s *DelegationSuite) TestAnswerForAnotherRound() {
	s.expectInputRound("photo.jpg")
	var rejected error
	var accepted *contracts.ProvideInputResult
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "stale by signal", Round: 2})
		s.env.UpdateWorkflow(contracts.ProvideInput, "stale", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejected = err },
			OnAccept: func() {}, OnComplete: func(any, error) {},
		}, contracts.Answer{Text: "stale", Round: 2})
		s.env.UpdateWorkflow(contracts.ProvideInput, "good", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail("rejected", err.Error()) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				s.NoError(err)
				r := v.(contracts.ProvideInputResult)
				accepted = &r
			},
		}, contracts.Answer{Text: "photo.jpg", Round: 1})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.ErrorContains(rejected, "round")
	s.ErrorContains(rejected, "round 1 is pending")
	s.Require().NotNil(accepted)
	s.Equal(1, accepted.Round)
	st := s.state()
	s.Require().Len(st.Answers, 1)
	s.Equal("photo.jpg", st.Answers[0].Text)
	s.Equal(1, st.IgnoredAnswers)
}

func (s *DelegationSuite) TestInvalidArtifactKind() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).
		Return(sent(snap("completed", claim("claim_opened"), claim("refund_issued"))), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusInvalidOutput, o.Status)
	s.Len(o.Outputs, 1)
	s.Require().Len(o.RejectedArtifacts, 1)
	s.Equal("art-refund_issued", o.RejectedArtifacts[0].ArtifactID)
	s.Contains(o.RejectedArtifacts[0].Reason, "kind_not_allowed")
	s.Equal(contracts.CategoryInvalidOutput, o.Error.Category)
}

func (s *DelegationSuite) TestRemoteFailed() {
	failed := snap("failed")
	failed.StatusText = "no shipment found"
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).Return(failed, nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusFailed, o.Status)
	s.Equal(contracts.CategoryRemoteBusiness, o.Error.Category)
	s.Contains(o.Error.Message, "no shipment found")
	s.Empty(o.Outputs)
}

func (s *DelegationSuite) TestRemoteRejected() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("rejected")), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusRejected, s.outcome().Status)
}

func (s *DelegationSuite) TestCancelCancelsRemoteTask() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(10*time.Minute).Return(snap("completed"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, contracts.CancelInput{
		Interface: claimsCard().Interface, TaskID: "task-1", ContextID: "ctx-1",
	}).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Equal(contracts.CategoryCanceled, o.Error.Category)
	s.Equal("canceled", s.state().A2AState)
}

func (s *DelegationSuite) TestCancelWhileWaitingForInput() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCanceled, s.outcome().Status)
}

func (s *DelegationSuite) TestDeadlineWhileWaitingForInput() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Equal(contracts.CategoryDeadline, o.Error.Category)
	s.Contains(o.Error.Message, "input-required")
}

func (s *DelegationSuite) TestDeadlineWhileWatching() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(2*time.Hour).Return(snap("completed"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusDeadlineExceeded, s.outcome().Status)
}

func (s *DelegationSuite) TestUnauthorizedSend() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).
		Return(contracts.CheckAndSendResult{}, temporal.NewNonRetryableApplicationError("SendMessage: HTTP 401", string(contracts.CategoryAuthorization), nil)).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.Equal(contracts.CategoryAuthorization, o.Error.Category)
}

func (s *DelegationSuite) TestInvalidContractFailsWorkflow() {
	d := contract()
	d.WriteAuthority = "full"
	s.env.ExecuteWorkflow(contracts.WorkflowType, d)
	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	s.True(strings.Contains(err.Error(), "write_authority"), err.Error())
}

func (s *DelegationSuite) TestSignalWithoutQuestionIsIgnored() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(5*time.Minute).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "unasked"}) }, time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
	st := s.state()
	s.Equal(1, st.IgnoredAnswers)
	s.Empty(st.Answers)
}

func TestMessageIDIsDeterministicPerRound(t *testing.T) {
	a, b := MessageID("wf", "run-1", 0), MessageID("wf", "run-1", 0)
	if a != b {
		t.Fatalf("MessageID not deterministic: %s != %s", a, b)
	}
	if MessageID("wf", "run-1", 1) == a || MessageID("wf2", "run-1", 0) == a || MessageID("wf", "run-2", 0) == a {
		t.Fatalf("MessageID collides across rounds, workflows or runs")
	}
	if a[14] != '5' {
		t.Fatalf("MessageID %s is not a UUIDv5", a)
	}
}

// A follow-up on a card that changed in a way that matters waits in
// card-changed; no rediscover comes, and the deadline ends it naming both
// digests and the change.
func (s *DelegationSuite) TestCardChangedUntilTheDeadline() {
	first := claimsCard()
	first.Agent.CardDigest = "sha256:01"
	changed := first
	changed.Agent.CardDigest = "sha256:02"
	changed.SkillFound = false
	change := `skill "open-claim" is gone`
	res := sent(snap("input-required"))
	res.Card = first
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(res, nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(1)).Return(contracts.CheckAndSendResult{Card: changed, Change: change, Refused: change}, nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal(string(contracts.PhaseCardChanged), st.A2AState)
		s.Require().Len(st.CardChanges, 1)
		s.True(st.CardChanges[0].Matters)
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCardChanged, o.Status)
	s.Contains(o.Error.Message, "sha256:01")
	s.Contains(o.Error.Message, "sha256:02")
	s.Contains(o.Error.Message, `skill "open-claim" is gone`)
}

// An unsigned card when a signature is required: nothing sent, and the
// Outcome names the card's signature status.
func (s *DelegationSuite) TestUntrustedCardSendsNothing() {
	untrusted := contracts.ResolvedCard{SkillFound: true, SignatureRequired: true,
		Agent:        contracts.AgentInfo{Name: "x", Signature: "unsigned", CardDigest: "sha256:0u"},
		Verification: contracts.CardVerification{Status: contracts.SigUnsigned}}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool { return in.Card.RequireSignature })).
		Return(contracts.CheckAndSendResult{Card: untrusted, Refused: "card"}, nil).Once()
	d := contract()
	d.RequireSignedCard = true
	o := s.execute(d)
	s.Equal(contracts.StatusCardUntrusted, o.Status)
	s.Equal("unsigned", o.Agent.Signature)
	s.Empty(s.state().Sends, "nothing sent")
}
