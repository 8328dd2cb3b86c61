package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
)

func unknownErr() error {
	return temporal.NewNonRetryableApplicationError("SendMessage: unknown_outcome: context deadline exceeded", string(contracts.CategoryUnknownOutcome), nil)
}

func (s *DelegationSuite) TestUnknownOutcomeAskOperatorThenResend() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(contracts.CheckAndSendResult{}, unknownErr()).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	var rejected error
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Equal(string(contracts.PhaseUnknownOutcome), st.A2AState)
		s.Require().NotNil(st.Unknown)
		s.Equal(MessageID("wf-1", "", 0), st.Unknown.MessageID)
		s.env.UpdateWorkflow(contracts.ResolveUnknown, "bad", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejected = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, contracts.Resolution{Action: "adopt"})
		s.env.UpdateWorkflow(contracts.ResolveUnknown, "good", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail(err.Error()) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, contracts.Resolution{Action: contracts.ActionResend, ResolvedBy: "ops"})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.ErrorContains(rejected, "task_id")
	st := s.state()
	s.Require().Len(st.UnknownHistory, 1)
	s.Equal(contracts.ActionResend, st.UnknownHistory[0].Resolution.Action)
	// unknown_outcome, the look for its task (FindTask: nothing found),
	// the resend.
	if s.Len(st.Sends, 3) {
		s.Contains(st.Sends[1].Result, "not found")
		s.Equal("sent", st.Sends[2].Result)
	}
}

func (s *DelegationSuite) TestUnknownOutcomeAutoResendThenAbandon() {
	d := contract()
	d.OnUnknownOutcome = contracts.OnUnknownResend
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(contracts.CheckAndSendResult{}, unknownErr()).Times(4)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Require().NotNil(st.Unknown)
		s.Equal(3, st.Unknown.AutoResends)
		s.env.SignalWorkflow(contracts.ResolveUnknown, contracts.Resolution{Action: contracts.ActionAbandon})
	}, time.Minute)
	o := s.execute(d)
	s.Equal(contracts.StatusUnknownOutcome, o.Status)
	s.Equal(contracts.CategoryUnknownOutcome, o.Error.Category)
}

func (s *DelegationSuite) TestAdoptChecksTheContext() {
	// Round 1 (a follow-up) has an unknown outcome; the operator adopts a
	// task of another context (refused), then the right one.
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(contracts.CheckAndSendResult{}, unknownErr()).Once()
	other := snap("working")
	other.ContextID = "ctx-other"
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(other, nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.ResolveUnknown, contracts.Resolution{Action: contracts.ActionAdopt, TaskID: "task-1"})
	}, 2*time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Require().NotNil(st.Unknown)
		s.Contains(st.Unknown.Error, "contextId")
		s.env.SignalWorkflow(contracts.ResolveUnknown, contracts.Resolution{Action: contracts.ActionAdopt, TaskID: "task-1"})
	}, 3*time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
}

// The authorization is checked again before the follow-up: denied then,
// nothing is sent and the remote task is canceled.
func (s *DelegationSuite) TestDeniedBeforeTheFollowUp() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(1)).Return(contracts.CheckAndSendResult{Card: claimsCard(),
		Authorization: &contracts.AuthorizationDecision{Allowed: false, Reason: "local_workflow_id revoked"}}, nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.Contains(o.Error.Message, "revoked")
	s.Len(s.state().Authorizations, 2)
}

func (s *DelegationSuite) TestRevokeSignalWhileWaiting() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "customer withdrew consent"})
	}, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	s.Contains(o.Error.Message, "customer withdrew consent")
}

func (s *DelegationSuite) TestCancelUnconfirmedRecordsLateResults() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("working")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(time.Hour).Return(snap("working"), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).
		Return(contracts.TaskSnapshot{}, temporal.NewNonRetryableApplicationError("CancelTask: task cannot be canceled", "protocol", nil)).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(time.Minute).Return(snap("completed", claim("claim_opened")), nil).Once()
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCancelUnconfirmed, o.Status)
	s.Empty(o.Outputs)
	s.Require().Len(o.LateResults, 1)
	s.Equal("art-claim_opened", o.LateResults[0].ArtifactID)
}

func (s *DelegationSuite) TestAuthRequiredAnsweredWithAReference() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("auth-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).After(time.Hour).Return(snap("working"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.MatchedBy(func(in contracts.CheckAndSendInput) bool {
		return in.Send.CredentialRef == "claims-prod" && in.Send.Message.TaskID == "task-1"
	})).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckCredential, mock.Anything, mock.Anything).Return(contracts.CheckCredentialResult{}, nil).Once()
	var noRef, refForInput error
	s.env.RegisterDelayedCallback(func() {
		cb := func(dst *error) *testsuite.TestUpdateCallback {
			return &testsuite.TestUpdateCallback{OnReject: func(err error) { *dst = err }, OnAccept: func() {}, OnComplete: func(any, error) {}}
		}
		s.env.UpdateWorkflow(contracts.ProvideInput, "no-ref", cb(&noRef), contracts.Answer{Text: "my password is hunter2"})
		s.env.UpdateWorkflow(contracts.ProvideInput, "ref", cb(&refForInput), contracts.Answer{CredentialRef: "claims-prod"})
	}, time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCompleted, s.outcome().Status)
	s.ErrorContains(noRef, "credential_ref")
	s.NoError(refForInput)
}

func (s *DelegationSuite) TestReconcileRecordsWhatItSaw() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("input-required"), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalReconcile, nil) }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.state()
		s.Require().Len(st.Reconciliations, 1)
		s.Equal("input-required", st.Reconciliations[0].Seen)
		s.False(st.Reconciliations[0].Changed)
		s.env.CancelWorkflow()
	}, 2*time.Minute)
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
	s.Equal(contracts.StatusCanceled, s.outcome().Status)
}

func (s *DelegationSuite) TestAuthRequiredResolvedOutOfBand() {
	s.ownPoll = true
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("auth-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityPollTask, mock.Anything, mock.MatchedBy(func(in contracts.WatchInput) bool { return in.Since == "auth-required" })).
		After(time.Minute).Return(snap("completed", claim("claim_opened")), nil).Once()
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	s.Equal(0, o.InputRounds)
}

func (s *DelegationSuite) TestReconcileSeesTheTaskEndedWhileWaiting() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("input-required")), nil).Once()
	ended := snap("canceled")
	ended.StatusText = "canceled at the agent"
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(ended, nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalReconcile, nil) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCanceled, o.Status)
	s.Equal(contracts.CategoryRemoteBusiness, o.Error.Category)
	s.Contains(o.Error.Message, "canceled at the agent")
}

// sealedPayload is a payload sealed with key "k2" (codec), as a worker
// without that key receives it.
func sealedPayload() converter.RawValue {
	return converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{
		converter.MetadataEncoding: []byte(codec.MetadataEncoding), codec.MetadataKeyID: []byte("k2"), codec.MetadataCipher: []byte(codec.CipherAES256GCM)},
		Data: []byte("\x01\x02sealed")})
}

// A revoke whose payload the worker cannot open (sealed with a key it
// lacks, during a rotation) still revokes, and is recorded naming the key;
// so is an answer, which is not taken. The Go SDK used to drop such a
// Signal and leave the listener waiting for the next one on that channel.
func (s *DelegationSuite) TestSealedSignalsAreRefusedByName() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, sealedPayload()) }, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRevoke, sealedPayload()) }, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	st := s.state()
	s.Empty(st.Answers)
	if s.Len(st.IgnoredSignals, 2) {
		for _, ig := range st.IgnoredSignals {
			s.Contains(ig.Reason, `sealed with key "k2", which the worker does not have`)
			s.Empty(ig.Excerpt)
		}
		s.Equal(contracts.SignalRevoke, st.IgnoredSignals[1].Name)
	}
	s.Equal(codec.MetadataEncoding, sealedEncoding)
	s.Equal(codec.MetadataKeyID, sealedKeyID)
}

// An answer whose data is [] is refused (the agent's echo of it could not
// be read: protocol_error after the send).
func (s *DelegationSuite) TestAnswerWithEmptyListDataIsRefused() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, round(0)).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.ProvideInput, map[string]any{"text": "photo", "data": []any{}})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "done"}) }, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusAuthorizationDenied, o.Status)
	st := s.state()
	s.Empty(st.Answers)
	if s.Len(st.IgnoredSignals, 1) {
		s.Contains(st.IgnoredSignals[0].Reason, "must not be an empty list")
	}
}

// A payload that is not an object gets the example of its own Signal (a
// task-update got the revoke's); malformed JSON keeps its position and
// cause (it read "must be a JSON object" too).
func (s *DelegationSuite) TestPayloadErrorsNameTheirRule() {
	jsonPayload := func(text string) converter.RawValue {
		return converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: []byte(text)})
	}
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(snap("input-required")), nil).Once()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.SignalTaskUpdate, "working")
		s.env.SignalWorkflow(contracts.ProvideInput, jsonPayload(`{"text":"a",}`))
		s.env.SignalWorkflow(contracts.ProvideInput, jsonPayload(`{"text":"a"`))
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "done"}) }, 2*time.Minute)
	s.execute(contract())
	ig := s.state().IgnoredSignals
	if s.Len(ig, 3) {
		s.Contains(ig[0].Reason, `"task_id"`)
		s.Contains(ig[1].Reason, "trailing comma")
		s.Contains(ig[2].Reason, "malformed JSON")
	}
}
