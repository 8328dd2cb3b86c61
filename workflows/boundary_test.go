package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// refused runs the workflow with input (and carry, when given) and
// asserts it ended at once, non-retryable, of type typ, saying each of
// want; no activity ran (none is mocked: a call would fail the mock).
func (s *DelegationSuite) refused(typ string, want []string, input any, carry ...any) {
	s.T().Helper()
	s.env.ExecuteWorkflow(contracts.WorkflowType, append([]any{input}, carry...)...)
	s.True(s.env.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &appErr), "error = %v", s.env.GetWorkflowError())
	s.Equal(typ, appErr.Type())
	s.True(appErr.NonRetryable(), "a refusal is not retried")
	for _, w := range want {
		s.Contains(appErr.Message(), w)
	}
	if st := s.state(); s.NotEmpty(st.Failure) {
		for _, w := range want {
			s.Contains(st.Failure, w)
		}
	}
}

// rawPayload is a workflow input as a careless client could send it.
func rawPayload(data, encoding string) converter.RawValue {
	return converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encoding)}, Data: []byte(data)})
}

// rawContract is contract() as a JSON object, to be changed as a backend
// in another language would send it.
func rawContract(change func(m map[string]any)) map[string]any {
	b, _ := json.Marshal(contract())
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if change != nil {
		change(m)
	}
	return m
}

// A contract started directly through Temporal (a TypeScript or Python
// backend, a Schedule, the UI's form) gets the CLI's checks, made by the
// workflow: an unknown field in any spelling (a camelCase
// "requireSignedCard" silently turned the signed-card requirement off), a
// key that differs only in case ("SKILL" was taken by Go's
// case-insensitive decoding), a wrong type (the SDK's decode error was
// retryable and named no field), a deadline beyond MaxDeadline (10 years
// ran), a contract over MaxContractBytes (2 MB ran, then its
// continue-as-new input was over Temporal's limit).
func (s *DelegationSuite) TestDirectStartIsCheckedByTheWorkflow() {
	for name, tc := range map[string]struct {
		input any
		want  []string
	}{
		"camelCase field":     {rawContract(func(m map[string]any) { m["requireSignedCard"] = true }), []string{"requireSignedCard", "unknown field"}},
		"key in another case": {rawContract(func(m map[string]any) { m["SKILL"] = m["skill"]; delete(m, "skill") }), []string{"SKILL"}},
		"wrong type":          {rawContract(func(m map[string]any) { m["skill"] = 5 }), []string{"skill"}},
		"deadline 10 years ahead": {rawContract(func(m map[string]any) {
			m["deadline"] = t0.Add(10 * 365 * 24 * time.Hour).Format(time.RFC3339)
		}), []string{"deadline", "at most 366 days ahead"}},
		"2 MB message":  {rawContract(func(m map[string]any) { m["message"] = map[string]any{"text": strings.Repeat("x", 2<<20)} }), []string{"over the 262144-byte limit"}},
		"not an object": {"a contract", []string{"(document)"}},
		"trailing data": {rawPayload(`{"skill":"x"} {}`, "json/plain"), []string{"after"}},
		"not JSON":      {rawPayload(`skill: x`, "binary/plain"), []string{"payload encoding", "binary/plain"}},
	} {
		s.Run(name, func() {
			s.SetupTest()
			s.refused(ErrTypeInvalidContract, tc.want, tc.input)
		})
	}
}

// The workflow id must be the contract's local_workflow_id: a run under
// another id was shown by status with "answer with: delegate answer <the
// other id>", whose answer went to the other delegation.
func (s *DelegationSuite) TestWorkflowIDMustBeLocalWorkflowID() {
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "not-wf-1"})
	s.refused(ErrTypeInvalidContract, []string{"local_workflow_id", `"wf-1" is not the workflow id "not-wf-1"`}, contract())
}

// A carry (workflow input 2) is accepted only on a run that continues a
// run of this delegation: a made-up carry naming another delegation's
// remote task made a fresh run answer that task.
func (s *DelegationSuite) TestMadeUpCarryIsRefused() {
	other := carriedState()
	other.LocalWorkflowID, other.RemoteTaskID = "other-delegation", "their-task"
	digest := contractDigest(mustJSON(contract()))
	for name, tc := range map[string]struct {
		prevRun string
		carry   contracts.Carry
		want    string
	}{
		"on a fresh start":      {"", contracts.Carry{State: carriedState(), FromRunID: "run-0", ContractDigest: digest}, "started anew"},
		"of another delegation": {"run-0", contracts.Carry{State: other, FromRunID: "run-0", ContractDigest: digest}, `delegation "other-delegation"`},
		"from another run":      {"run-0", contracts.Carry{State: carriedState(), FromRunID: "run-9", ContractDigest: digest}, `handed over by run "run-9"`},
		// A caller cannot know the next run's id: a carry it made names
		// none (a cron schedule or a retry gave its next run a previous
		// run to continue).
		"naming no run":       {"run-0", contracts.Carry{State: carriedState(), ContractDigest: digest}, `handed over by run ""`},
		"of another contract": {"run-0", contracts.Carry{State: carriedState(), FromRunID: "run-0", ContractDigest: "00"}, "another contract"},
		"naming no contract":  {"run-0", contracts.Carry{State: carriedState(), FromRunID: "run-0"}, "another contract"},
	} {
		s.Run(name, func() {
			s.SetupTest()
			if tc.prevRun != "" {
				s.env.SetContinuedExecutionRunID(tc.prevRun)
			}
			s.refused(ErrTypeCarriedState, []string{tc.want}, contract(), tc.carry)
		})
	}
}

// A delegation runs for as long as its deadline: a run or execution
// timeout shorter than the deadline killed the run with its remote task
// working (and a retry started it over). The cron schedule is refused
// too: e2e TestDirectStartProbes.
func (s *DelegationSuite) TestRunsOnce() {
	for name, tc := range map[string]struct {
		opts client.StartWorkflowOptions
		want string
	}{
		"execution timeout": {client.StartWorkflowOptions{WorkflowExecutionTimeout: time.Minute}, "(workflow execution timeout): 1m0s ends before the deadline"},
		"run timeout":       {client.StartWorkflowOptions{WorkflowRunTimeout: time.Minute}, "(workflow run timeout): 1m0s ends before the deadline"},
	} {
		s.Run(name, func() {
			s.SetupTest()
			tc.opts.ID = contract().LocalWorkflowID
			s.env.SetStartWorkflowOptions(tc.opts)
			s.refused(ErrTypeInvalidContract, []string{tc.want}, contract())
		})
	}
}

// The carry a run hands over names the run and the contract, and the
// next run of the same contract takes it.
func (s *DelegationSuite) TestCarryNamesItsRunAndContract() {
	c := contracts.Carry{State: carriedState(), FromRunID: "run-0", ContractDigest: contractDigest(mustJSON(contract()))}
	s.env.SetContinuedExecutionRunID("run-0")
	reason := "stop"
	c.Revoked = &reason
	s.env.OnActivity(contracts.ActivityCancelTask, nil, nil).Return(snap("canceled"), nil).Maybe()
	s.env.ExecuteWorkflow(contracts.WorkflowType, contract(), c)
	s.Equal(contracts.StatusAuthorizationDenied, s.outcome().Status)
}

// mustJSON is v as the JSON payload converter writes it (workflow input 1
// of a test run).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
