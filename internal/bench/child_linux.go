package bench

import (
	"os/exec"
	"syscall"
)

// parentDeath has the kernel kill cmd when the bench dies (Linux
// PR_SET_PDEATHSIG), so a bench killed with SIGKILL leaves no worker or
// agent behind. The signal is tied to the OS thread that started the
// child; the Go runtime keeps its threads for the life of the process
// unless a goroutine locked to one ends, which the bench never does.
func parentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
