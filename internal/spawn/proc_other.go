//go:build !linux

package spawn

import (
	"os"
	"os/exec"
	"syscall"
)

// earlyOK is false here: without process groups and Pdeathsig, a proxy that
// died before adopting a server started early would leave it running.
const earlyOK = false

// SetProcAttr does nothing here: process groups and Pdeathsig are wired up
// on Linux only (elsewhere plugins/sdk's parent watchdog ends an orphaned
// plugin).
func SetProcAttr(*exec.Cmd) {}

// setGroup does nothing here.
func setGroup(*exec.Cmd) {}

// startBackground starts cmd: a nice value is per process here, not per
// thread, so it cannot be lowered for the child alone.
func startBackground(cmd *exec.Cmd) error { return cmd.Start() }

// SignalGroup signals the process pid itself: there are no process groups
// to signal here.
func SignalGroup(pid int, sig syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(sig)
	}
}

// WaitExited cannot wait without reaping here.
func WaitExited(int) bool { return false }

// GroupHasOthers cannot tell here: there are no process groups to wait for.
func GroupHasOthers(int, int) bool { return false }
