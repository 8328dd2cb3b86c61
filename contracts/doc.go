// Package contracts holds the data handed into and out of a delegation: the
// Delegation contract a backend (or an operator) starts, the Answer an operator
// gives when the remote agent asks for input, and the Outcome the workflow
// returns. It also validates what the remote agent sends back (Artifacts)
// against the contract before anything becomes local state.
//
// It holds every type that travels through Temporal's history or the
// public API, so that the workflow and its callers share them without
// importing each other: the State of Query "state", the continue-as-new
// Carry, task snapshots, the names of the workflow, its Task Queue,
// Signals, Updates, Queries and search attributes, and the activities'
// names (ActivityNames), inputs and results (activity.go), with the
// decisions both sides make on a resolved card (ResolvedCard.Trusted and
// Usable, CardInUse.WhatChanged).
//
// The package is pure: no Temporal, no network. Decoding is strict: an
// unknown field, a wrong type or a missing required field is an error that
// names the field (see FieldError).
//
// Principles (docs/architecture.md): remote success is a report, so every artifact is
// checked against allowed_outputs; what fails is kept as a rejection with a
// reason. write_authority "none" is the only authority a delegation can carry.
package contracts
