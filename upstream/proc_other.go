//go:build !linux

package upstream

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr does nothing here: process groups and Pdeathsig are wired up
// on Linux only.
func setProcAttr(*exec.Cmd) {}

// signalGroup signals the process p itself.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return p.Kill()
	}
	return p.Signal(sig)
}

// startBackground starts cmd: a nice value is per process here, not per
// thread, so it cannot be lowered for the child alone.
func startBackground(cmd *exec.Cmd) error { return cmd.Start() }

// waitExited cannot wait without reaping here.
func waitExited(int) bool { return false }

// groupHasOthers cannot tell here: there are no process groups to wait for.
func groupHasOthers(int, int) bool { return false }
