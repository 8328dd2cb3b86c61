package workflows

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// The workflow is its own boundary. It is started by the CLI and package
// client, but also by any Temporal client (a TypeScript or Python backend,
// a Schedule, the UI's "Start Workflow" form), which check nothing: so the
// workflow decodes and checks its own input with the CLI's code, before
// anything else happens, and ends at once (non-retryable) on what it
// refuses. admit is that check.
//
//   - workflow input 1, the contract: a JSON payload (json/plain), decoded
//     strictly (contracts.DecodeDelegationStrict: an unknown field in any
//     case such as "requireSignedCard" or "SKILL", a wrong type, trailing
//     data, over MaxContractBytes: refused naming the field and the rule),
//     then validated against the workflow's clock (contracts.Validate: a
//     deadline more than MaxDeadline ahead is refused; one already past is
//     a deadline, not a bad contract);
//   - the workflow id must be the contract's local_workflow_id (status,
//     answer and cancel find a delegation by it);
//   - a delegation runs once, for as long as its deadline: a cron schedule
//     (each tick would send round 0 again) and an execution or run timeout
//     shorter than the deadline (the run would be killed with its remote
//     task working, and a retry would start it over) are refused;
//   - workflow input 2, the carry (contracts.Carry), is accepted only on a
//     run that continues a run of this delegation (continue-as-new: the
//     run's ContinuedExecutionRunID is the carry's FromRunID, which no
//     caller can know before the run exists, and the contract is the
//     same): a carry made up by a caller naming another delegation's
//     remote task would answer that task.
//
// Errors are non-retryable ApplicationErrors of type ErrTypeInvalidContract
// or ErrTypeCarriedState.
func admit(ctx workflow.Context, input, carried converter.RawValue) (contracts.Delegation, *contracts.Carry, error) {
	info := workflow.GetInfo(ctx)
	d, err := decodeContract(input)
	if err != nil {
		return contracts.Delegation{}, nil, err
	}
	// The deadline may have passed between the start and the first
	// workflow task (no worker yet): that is a deadline, not a bad contract.
	now := workflow.Now(ctx)
	if !d.Deadline.After(now) {
		now = d.Deadline.Add(-time.Nanosecond)
	}
	if err := d.Validate(now); err != nil {
		return contracts.Delegation{}, nil, err
	}
	if err := runsOnce(info, d, now); err != nil {
		return contracts.Delegation{}, nil, err
	}
	if id := info.WorkflowExecution.ID; id != d.LocalWorkflowID {
		return contracts.Delegation{}, nil, &contracts.FieldError{Field: "local_workflow_id",
			Rule: fmt.Sprintf("%q is not the workflow id %q: start the workflow with the id local_workflow_id (status, answer and cancel find a delegation by it)",
				contracts.CutText(d.LocalWorkflowID, 200), contracts.CutText(id, 200))}
	}
	carry, err := carriedInput(carried)
	if err != nil {
		return d, nil, err
	}
	if carry != nil {
		if err := continues(info, d, input.Payload().GetData(), carry); err != nil {
			return d, nil, err
		}
	}
	return d, carry, nil
}

// runsOnce refuses what would run a delegation more than once or cut it
// short: a cron schedule, or a workflow execution or run timeout that ends
// before the deadline (now is the workflow's clock).
func runsOnce(info *workflow.Info, d contracts.Delegation, now time.Time) error {
	left := d.Deadline.Sub(now)
	switch {
	case info.CronSchedule != "":
		return &contracts.FieldError{Field: "(cron schedule)", Rule: fmt.Sprintf("%q: a delegation runs once (each run would send its first message again); start it without a cron schedule, and let a Schedule of yours start new delegations with new ids", contracts.CutText(info.CronSchedule, 100))}
	case info.WorkflowExecutionTimeout > 0 && info.WorkflowExecutionTimeout < left:
		return &contracts.FieldError{Field: "(workflow execution timeout)", Rule: fmt.Sprintf("%s ends before the deadline (%s from now): the delegation would be killed with its remote task working; start it without one (the deadline bounds the delegation)", info.WorkflowExecutionTimeout, left.Round(time.Second))}
	case info.WorkflowRunTimeout > 0 && info.WorkflowRunTimeout < left:
		return &contracts.FieldError{Field: "(workflow run timeout)", Rule: fmt.Sprintf("%s ends before the deadline (%s from now): the delegation would be killed with its remote task working; start it without one (the deadline bounds the delegation)", info.WorkflowRunTimeout, left.Round(time.Second))}
	}
	return nil
}

// decodeContract reads workflow input 1. Errors are *contracts.FieldError.
func decodeContract(input converter.RawValue) (contracts.Delegation, error) {
	p := input.Payload()
	if p == nil || len(p.GetData()) == 0 {
		return contracts.Delegation{}, &contracts.FieldError{Field: "(workflow input 1)", Rule: "required: the contract (a JSON object, docs/contracts.md)"}
	}
	switch enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc {
	case converter.MetadataEncodingJSON:
	case "binary/encrypted":
		return contracts.Delegation{}, &contracts.FieldError{Field: "(workflow input 1)", Rule: "sealed with a key this worker lacks (codec): give the worker the key the client sealed it with"}
	default:
		return contracts.Delegation{}, &contracts.FieldError{Field: "(workflow input 1)", Rule: fmt.Sprintf("payload encoding %q: the contract is JSON (%s)", contracts.CutText(enc, 60), converter.MetadataEncodingJSON)}
	}
	return contracts.DecodeDelegationStrict(p.GetData())
}

// contractDigest is the sha256 (hex) of the contract as the run received
// it, workflow input 1, compacted (for contracts.Carry.ContractDigest): a
// run continues as new with those bytes as the next run's input 1, so the
// digest does not depend on the struct the code that reads it has (a
// field added, with or without omitempty, does not change it).
func contractDigest(input []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		b.Reset()
		b.Write(input)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

// continues checks that a carry is the hand-over of the run this one
// continues, of the same delegation.
func continues(info *workflow.Info, d contracts.Delegation, input []byte, c *contracts.Carry) error {
	bad := func(rule string) error {
		return fmt.Errorf("%w: %s", errCarry, rule)
	}
	prev := info.ContinuedExecutionRunID
	switch {
	case prev == "":
		return bad("a carry is accepted only by a run that continues a run of this delegation (continue-as-new); this run was started anew: start a delegation with the contract alone")
	case c.FromRunID != prev:
		// A caller cannot know the id of a run before it exists: only the
		// run that continued as new can name it.
		return bad(fmt.Sprintf("it was handed over by run %q, this run continues run %q", contracts.CutText(c.FromRunID, 100), prev))
	case c.ContractDigest != contractDigest(input):
		return bad("it was handed over by a run of another contract")
	case c.State.LocalWorkflowID != d.LocalWorkflowID || c.State.AgentCardURL != d.AgentCardURL || c.State.Skill != d.Skill:
		return bad(fmt.Sprintf("its state is of delegation %q (%s, skill %q), the contract is %q (%s, skill %q)",
			contracts.CutText(c.State.LocalWorkflowID, 100), contracts.CutText(c.State.AgentCardURL, 200), contracts.CutText(c.State.Skill, 100),
			d.LocalWorkflowID, d.AgentCardURL, d.Skill))
	}
	return nil
}

// errCarry marks a refused carry (ErrTypeCarriedState).
var errCarry = errors.New("carried state (workflow input 2) refused")
