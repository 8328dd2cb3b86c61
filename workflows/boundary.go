package workflows

import (
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
//   - workflow input 2, the carry (contracts.Carry), is accepted only on a
//     run that continues a run of this delegation (continue-as-new: the
//     run's ContinuedExecutionRunID, the carry's FromRunID when it names
//     one, and the same contract): a carry made up by a caller naming
//     another delegation's remote task would answer that task.
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
		if err := continues(info, d, carry); err != nil {
			return d, nil, err
		}
	}
	return d, carry, nil
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

// contractDigest is the sha256 (hex) of the contract as the workflow
// encodes it (for contracts.Carry.ContractDigest).
func contractDigest(d contracts.Delegation) string {
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// continues checks that a carry is the hand-over of the run this one
// continues, of the same delegation.
func continues(info *workflow.Info, d contracts.Delegation, c *contracts.Carry) error {
	bad := func(rule string) error {
		return fmt.Errorf("%w: %s", errCarry, rule)
	}
	prev := info.ContinuedExecutionRunID
	switch {
	case prev == "":
		return bad("a carry is accepted only by a run that continues a run of this delegation (continue-as-new); this run was started anew: start a delegation with the contract alone")
	case c.FromRunID != "" && c.FromRunID != prev:
		return bad(fmt.Sprintf("it was handed over by run %q, this run continues run %q", contracts.CutText(c.FromRunID, 100), prev))
	case c.ContractDigest != "" && c.ContractDigest != contractDigest(d):
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
