// Package contracts holds the data handed into and out of a delegation: the
// Delegation contract a backend (or an operator) starts, the Answer an operator
// gives when the remote agent asks for input, and the Outcome the workflow
// returns. It also validates what the remote agent sends back (Artifacts)
// against the contract before anything becomes local state.
//
// The package is pure: no Temporal, no network. Decoding is strict: an
// unknown field, a wrong type or a missing required field is an error that
// names the field (see FieldError).
//
// Principles (docs/architecture.md): remote success is a report, so every artifact is
// checked against allowed_outputs; what fails is kept as a rejection with a
// reason. write_authority "none" is the only authority a delegation can carry.
package contracts
