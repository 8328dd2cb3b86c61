// Package layers holds no code: its test checks the import rules of
// docs/architecture.md ("Rooms"), so that a newcomer's import that breaks
// them fails `make test`.
package layers
