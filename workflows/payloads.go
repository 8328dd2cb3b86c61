package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// maxIgnoredSignals bounds contracts.State.IgnoredSignals (the oldest are dropped;
// IgnoredSignalCount keeps counting).
const maxIgnoredSignals = 20

// receiveRaw receives one signal without decoding it (a converter.RawValue
// never fails to decode, so the SDK never drops it and blocks).
func receiveRaw(ctx workflow.Context, c workflow.ReceiveChannel) converter.RawValue {
	var raw converter.RawValue
	c.Receive(ctx, &raw)
	return raw
}

// sealedEncoding and sealedKeyID are codec.MetadataEncoding and
// codec.MetadataKeyID (workflows does not import codec): a payload still
// sealed reached the workflow because the worker could not open it.
const (
	sealedEncoding = "binary/encrypted"
	sealedKeyID    = "encryption-key-id"
)

// sealed reports whether raw is a payload the worker's codec could not
// open (codec's data converter hands it over as it is).
func sealed(raw converter.RawValue) bool {
	return string(raw.Payload().GetMetadata()[converter.MetadataEncoding]) == sealedEncoding
}

// decodePayload decodes a JSON object payload strictly into v
// (contracts.DecodeObject); required: a missing payload is an error.
func decodePayload(raw converter.RawValue, v any, required bool) error {
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 {
		if required {
			return &contracts.FieldError{Field: "(payload)", Rule: "required: a JSON object"}
		}
		return nil
	}
	if sealed(raw) {
		return &contracts.FieldError{Field: "(payload)", Rule: fmt.Sprintf("sealed with key %q, which the worker does not have (or altered): send it again with the worker's keys", contracts.Truncate(string(p.GetMetadata()[sealedKeyID]), 64))}
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return &contracts.FieldError{Field: "(payload)", Rule: fmt.Sprintf("encoding %q: want %s", contracts.Truncate(enc, 64), converter.MetadataEncodingJSON)}
	}
	if !required && strings.TrimSpace(string(p.GetData())) == "null" {
		return nil
	}
	if err := contracts.DecodeObject(p.GetData(), v); err != nil {
		// Only "not an object" gets the example; malformed JSON keeps its
		// line and column (it read "must be a JSON object" too).
		var fe *contracts.FieldError
		if errors.As(err, &fe) && fe.Field == "(document)" && fe.Rule == "must be a JSON object" {
			return &contracts.FieldError{Field: "(payload)", Rule: "must be a JSON object, such as " + payloadExample(v)}
		}
		return err
	}
	return nil
}

// payloadExample is what a person should type for v.
func payloadExample(v any) string {
	switch v.(type) {
	case *contracts.Answer:
		return `{"text": "...", "answered_by": "your name"}`
	case *contracts.Resolution:
		return `{"action": "resend"}`
	case *contracts.TaskUpdate:
		return `{"task_id": "...", "state": "working", "timestamp": "..."}`
	}
	return `{"reason": "..."}`
}

// invalidInput is the error an Update's validator returns for a payload
// that does not decode or validate: not retryable (the same payload would
// be refused again), type ErrTypeInvalidInput.
func invalidInput(err error) error {
	if err == nil {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidInput, nil)
}

// ErrTypeInvalidInput is the ApplicationError type of an Update refused by
// its validator.
const ErrTypeInvalidInput = "invalid_input"

// ignore records a signal payload that was not applied, and shows it.
func (r *run) ignore(ctx workflow.Context, signal string, err error, raw converter.RawValue) {
	var data []byte
	if p := raw.Payload(); p != nil {
		data = p.GetData()
	}
	rec := contracts.IgnoredSignal{Name: signal, Reason: contracts.Truncate(err.Error(), 500), Size: len(data), Time: workflow.Now(ctx)}
	if len(data) > 0 && !sealed(raw) {
		rec.Excerpt = contracts.Truncate(strings.ToValidUTF8(string(data), "\uFFFD"), 200)
	}
	r.s.IgnoredSignalCount++
	r.s.IgnoredSignals = append(r.s.IgnoredSignals, rec)
	if n := len(r.s.IgnoredSignals); n > maxIgnoredSignals {
		r.s.IgnoredSignals = append([]contracts.IgnoredSignal(nil), r.s.IgnoredSignals[n-maxIgnoredSignals:]...)
	}
	if r.s.Question != nil {
		workflow.SetCurrentDetails(ctx, questionDetails(r.d, r.s, r.wfID))
	} else {
		r.details(ctx)
	}
}
