package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/a2adelegate/delegate/contracts"
)

// badPayloads are what a person may type into the UI's Send Signal form,
// or a script may send: none of them may stall the delegation.
var badPayloads = map[string]any{
	"bare string":       "photo attached: box.jpg",
	"number":            42,
	"null":              nil,
	"array":             []any{"photo", 1},
	"wrong field types": map[string]any{"text": 7, "answered_by": []int{1}},
	"unknown fields":    map[string]any{"txt": "photo", "action": "resend", "reason": "x", "extra": true},
	"1 MB of text":      strings.Repeat("A", 1<<20),
}

// Every signal with every bad payload, then revoke: the revoke still ends
// the delegation authorization_denied, and the bad payload is recorded.
func (s *DelegationSuite) TestBadSignalPayloadsNeverDisarmRevoke() {
	for _, signal := range []string{contracts.ProvideInput, contracts.ResolveUnknown, contracts.SignalRevoke, contracts.SignalReconcile, contracts.SignalRediscover} {
		for name, payload := range badPayloads {
			s.Run(fmt.Sprintf("%s/%s", signal, name), func() {
				s.SetupTest()
				s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
				s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(question("input-required", "msg:q-1", "photo?"), nil).Maybe()
				s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Maybe()
				s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(signal, payload) }, time.Minute)
				if signal != contracts.SignalRevoke {
					s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalRevoke, map[string]string{"reason": "stop"}) }, 2*time.Minute)
				}
				s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
				o := s.outcome()
				s.Equal(contracts.StatusAuthorizationDenied, o.Status, "%+v", o.Error)
				st := s.state()
				if signal == contracts.SignalReconcile || signal == contracts.SignalRediscover {
					return // no payload is read
				}
				if signal == contracts.SignalRevoke && name == "null" {
					return // a revoke without payload is a plain revoke
				}
				if s.NotEmpty(st.IgnoredSignals, "the bad payload is recorded") {
					last := st.IgnoredSignals[0]
					s.Equal(signal, last.Name)
					s.NotEmpty(last.Reason)
					s.LessOrEqual(len(last.Excerpt), 204)
				}
			})
		}
	}
}

// With no revoke, the deadline still ends the delegation after any bad
// payload.
func (s *DelegationSuite) TestBadSignalPayloadsNeverDisarmTheDeadline() {
	for name, payload := range badPayloads {
		s.Run(name, func() {
			s.SetupTest()
			s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
			s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
			s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, payload) }, time.Minute)
			s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
			o := s.outcome()
			s.Equal(contracts.StatusDeadlineExceeded, o.Status)
			s.Equal(1, s.state().IgnoredSignalCount)
		})
	}
}

// After a bad payload, a good answer is still taken.
func (s *DelegationSuite) TestGoodAnswerAfterABadOne() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, "photo attached: box.jpg") }, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "alice"})
	}, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status)
	st := s.state()
	s.Equal(1, st.IgnoredSignalCount)
	s.Contains(st.IgnoredSignals[0].Reason, "JSON object")
	s.Equal(`"photo attached: box.jpg"`, st.IgnoredSignals[0].Excerpt)
}

// A reconcile read that hangs (an agent whose GetTask never answers) runs
// beside the listener: an answer and the deadline are still handled.
func (s *DelegationSuite) TestSlowReconcileHoldsNothing() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).After(3*time.Hour).Return(question("input-required", "msg:q-1", "photo?"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(1, "task-1")).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalReconcile, nil) }, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalReconcile, nil) }, 90*time.Second)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.ProvideInput, contracts.Answer{Text: "photo"}) }, 2*time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusCompleted, o.Status, "%+v", o.Error)
	st := s.state()
	s.Len(st.Reconciliations, 1, "the second request is folded into the running read")
}

// The same with no answer: the deadline ends the delegation on time.
func (s *DelegationSuite) TestSlowReconcileDoesNotHoldTheDeadline() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, sendIs(0, "")).Return(sent(question("input-required", "msg:q-1", "photo?")), nil).Once()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).After(3*time.Hour).Return(question("input-required", "msg:q-1", "photo?"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalReconcile, nil) }, time.Minute)
	o := s.execute(contract())
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.True(s.env.Now().Before(t0.Add(time.Hour+5*time.Minute)), "ended at %s, deadline %s", s.env.Now(), t0.Add(time.Hour))
}

// A cancel's reason (Signal cancel-reason, then the cancel) is in the
// state and the Outcome; a payload that does not read is recorded and
// the cancel stands; the last readable reason wins.
func (s *DelegationSuite) TestCancelReasonShown() {
	for name, tc := range map[string]struct {
		payloads []any
		want     string
		ignored  int
	}{
		"reason":              {payloads: []any{map[string]string{"reason": "customer withdrew"}}, want: "customer withdrew"},
		"bare string":         {payloads: []any{"customer withdrew"}, ignored: 1},
		"bad then good":       {payloads: []any{42, map[string]string{"reason": "second"}}, want: "second", ignored: 1},
		"unknown field":       {payloads: []any{map[string]string{"why": "x"}}, ignored: 1},
		"1 MB reason is cut":  {payloads: []any{map[string]string{"reason": strings.Repeat("R", 1<<20)}}, want: strings.Repeat("R", 1000) + "…"},
		"no signal at all":    {},
		"blank reason is not": {payloads: []any{map[string]string{"reason": "   "}}},
	} {
		s.Run(name, func() {
			s.SetupTest()
			s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("input-required")), nil).Once()
			s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("input-required"), nil).Maybe()
			s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
			for _, p := range tc.payloads {
				s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(contracts.SignalCancelReason, p) }, time.Minute)
			}
			s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, time.Minute+time.Second)
			s.env.ExecuteWorkflow(contracts.WorkflowType, contract())
			o := s.outcome()
			s.Equal(contracts.StatusCanceled, o.Status)
			st := s.state()
			s.Equal(tc.want, st.CancelReason)
			if tc.want != "" {
				s.Contains(o.Error.Message, "(reason: "+tc.want+")")
			} else {
				s.NotContains(o.Error.Message, "reason:")
			}
			s.Len(st.IgnoredSignals, tc.ignored)
		})
	}
}
