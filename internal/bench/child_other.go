//go:build !linux

package bench

import "os/exec"

// parentDeath does nothing outside Linux: a killed bench may leave its
// worker and agent processes running there.
func parentDeath(*exec.Cmd) {}
