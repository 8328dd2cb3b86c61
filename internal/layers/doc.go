// Package layers holds no code: its test checks the import rules of
// DESIGN.md ("Rooms (packages) and what may import what"), so that a
// newcomer's import that breaks them fails `make test`.
package layers
