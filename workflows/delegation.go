package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// Delegation is the workflow. Its input is the contract, its result the
// Outcome. It resolves the card, sends the message with messageId
// MessageID(id, run, 0), follows the remote Task, asks an operator through Signal
// or Update "provide-input" when the Task is INPUT_REQUIRED or
// AUTH_REQUIRED, validates the artifacts of a COMPLETED Task, and cancels
// the remote Task on workflow cancellation or at the deadline.
//
// A run continues as new when Temporal suggests it (or past
// ContinueAsNewEvents history events) while following the task; it drains
// the signals still buffered, and hands its contracts.State and every intent not yet
// acted on to the next run as the workflow's second input (contracts.Carry); the
// next run goes on with the same remote task. A carried state that does
// not decode fails the workflow (ErrTypeCarriedState), never restarts it.
func Delegation(ctx workflow.Context, input converter.RawValue, carried converter.RawValue) (contracts.Outcome, error) {
	return delegation(ctx, input, carried, Options{})
}

// delegation is Delegation configured by o.
func delegation(ctx workflow.Context, input converter.RawValue, carried converter.RawValue, o Options) (contracts.Outcome, error) {
	info := workflow.GetInfo(ctx)
	r := &run{
		o:    o,
		s:    &contracts.State{LocalWorkflowID: info.WorkflowExecution.ID, StartedAt: workflow.Now(ctx), Transitions: []contracts.Transition{}},
		wfID: info.WorkflowExecution.ID, firstRunID: info.FirstRunID,
	}
	if err := r.registerState(ctx); err != nil {
		return contracts.Outcome{}, err
	}
	// The workflow is its own boundary (admit): nothing runs on an input
	// it refuses.
	d, carry, err := admit(ctx, input, carried)
	if err != nil {
		return contracts.Outcome{}, r.refuse(ctx, err)
	}
	r.noteCodeVersion(ctx)
	r.d, r.input = d, json.RawMessage(input.Payload().GetData())
	r.s.Purpose, r.s.Skill, r.s.AgentCardURL, r.s.Deadline = d.Purpose, d.Skill, d.AgentCardURL, d.Deadline
	if carry != nil {
		// carriedInput refuses a carry without a last snapshot.
		st := carry.State
		r.s = &st
		r.s.ContinuedAsNew++
	}
	if err := r.registerInput(ctx); err != nil {
		return contracts.Outcome{}, err
	}
	if err := r.registerFaultHandlers(ctx); err != nil {
		return contracts.Outcome{}, err
	}
	r.listen(ctx)
	if carry != nil {
		r.resume(ctx, carry)
	}
	out := r.main(ctx, carry != nil)
	if r.phase == phaseHandingOver {
		return contracts.Outcome{}, r.handOverRun(ctx, info.WorkflowExecution.RunID)
	}
	r.end(ctx, out)
	return out, nil
}

// registerState registers Query "state".
func (r *run) registerState(ctx workflow.Context) error {
	return workflow.SetQueryHandlerWithOptions(ctx, contracts.QueryState, func() (*contracts.State, error) {
		// A copy: a query never changes the workflow's own state.
		s := *r.s
		// cancel-reason waits in its channel until a cancel reads it: a
		// name the workflow knows, not an unknown one.
		s.UnknownSignals = slices.DeleteFunc(workflow.GetUnhandledSignalNames(ctx), func(n string) bool { return n == contracts.SignalCancelReason })
		if len(s.UnknownSignals) == 0 {
			s.UnknownSignals = nil
		}
		return &s, nil
	},
		workflow.QueryHandlerOptions{Description: "The whole local state of the delegation as JSON."})
}

// refuse records why admit refused the run's input and returns the
// non-retryable error that ends the run.
func (r *run) refuse(ctx workflow.Context, err error) error {
	typ, what := ErrTypeInvalidContract, "invalid contract: "
	if errors.Is(err, errCarry) || !errors.Is(err, contracts.ErrInvalidContract) {
		typ, what = ErrTypeCarriedState, ""
	}
	// Bounded: a contract with thousands of wrong fields made a failure
	// over Temporal's limit, and the server terminated the run instead.
	msg := contracts.CutText(err.Error(), maxRefusalBytes)
	r.s.Failure = what + msg
	// The search attributes a starter set are not the delegation's: a
	// refused run says it ended, and names no remote task (list and the
	// orphan sweep read them).
	_ = workflow.UpsertTypedSearchAttributes(ctx, SearchA2AState.ValueSet(string(contracts.PhaseEnded)), SearchA2ARemoteTaskID.ValueUnset(), SearchDelegationCodeVersion.ValueSet(Newest()))
	return temporal.NewNonRetryableApplicationError(msg, typ, nil)
}

// maxRefusalBytes bounds the message of a refused input.
const maxRefusalBytes = 8 << 10

// handOverRun returns the continue-as-new error that hands the state and
// the inbox (contracts.Carry) of this run, runID, to the next one.
func (r *run) handOverRun(ctx workflow.Context, runID string) error {
	r.flushSA(ctx)
	// Handlers may still be running (an update being accepted).
	_ = r.wait(ctx, settling, func() bool { return workflow.AllHandlersFinished(ctx) })
	c := contracts.Carry{State: *r.s, FromRunID: runID, ContractDigest: contractDigest(r.input)}
	r.box.carry(&c)
	rollingNextHandOver(&c)
	trimCarry(&c)
	// The contract goes on as it came (its bytes, not this code's
	// struct), so that the next run, on this worker or another release's,
	// reads what was started and finds the same digest.
	return workflow.NewContinueAsNewError(ctx, contracts.WorkflowType, r.input, c)
}

// end records the Outcome out of a run that ends the delegation.
func (r *run) end(ctx workflow.Context, out contracts.Outcome) {
	if !contracts.TaskState(r.s.A2AState).Terminal() {
		r.setState(ctx, string(contracts.PhaseEnded))
	}
	r.flushSA(ctx)
	r.s.Outcome = &out
	r.closeQuestion()
	workflow.SetCurrentDetails(ctx, finishedDetails(out))
}

type run struct {
	o            Options
	flush        workflow.Channel
	flushed      bool
	observations int
	sig          signals
	// box: what the listener, the Update handlers and the reconcile
	// reads hand to the main coroutine.
	box       inbox
	saPending []temporal.SearchAttributeUpdate
	watches   int
	// phase is where the run stands: following, stopping, handing over.
	phase      phase
	d          contracts.Delegation
	s          *contracts.State
	wfID       string
	firstRunID string
	// input is workflow input 1 as received (the contract's JSON).
	input json.RawMessage
	// deadlineTimer fires at the deadline once armed (arm).
	deadlineTimer workflow.Future
}

// phase is where a run stands. It only moves forward.
type phase int

const (
	// phaseFollowing: the run follows its remote task.
	phaseFollowing phase = iota
	// phaseNotSent: a stop (revoke, cancel, deadline) came before the last
	// send was scheduled: nothing went, and the run ends.
	phaseNotSent
	// phaseStopping: the delegation is ending (failed), canceling its
	// task; an answer is no longer taken.
	phaseStopping
	// phaseHandingOver: the run continues as new (continueNow).
	phaseHandingOver
)

// main runs the delegation and returns its Outcome (or moves the run to
// phaseHandingOver). A carried run goes on from the task the last one saw.
func (r *run) main(ctx workflow.Context, carried bool) contracts.Outcome {
	if carried {
		return r.follow(ctx, *r.s.LastSnapshot)
	}
	r.setState(ctx, string(contracts.PhaseResolving))
	snap, err := r.sendRound(ctx, 0, r.d.Message.Text, r.d.Message.Data, "")
	if err != nil {
		return r.failed(ctx, err)
	}
	return r.follow(ctx, snap)
}

// ErrTypeInvalidContract is the ApplicationError type of a workflow that
// was started with a contract that does not validate.
const ErrTypeInvalidContract = "invalid_contract"

// MessageID returns the deterministic messageId of round n of a delegation:
// a UUIDv5 (RFC 9562, SHA-1, URL namespace) of
// "delegate:<workflowID>/<firstRunID>/<n>". A resend of the same round
// carries the same id, so an agent that deduplicates sees one message (A2A
// 1.0 §3.3.1); a new delegation that reuses the local_workflow_id of an
// ended one gets new ids (its first run id differs), and continue-as-new
// keeps them (the first run id stays).
func MessageID(workflowID, firstRunID string, round int) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "delegate:%s/%s/%d", workflowID, firstRunID, round)).String()
}
