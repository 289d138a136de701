//go:build !linux

package upstream

import (
	"os"
	"syscall"
)

// signalGroup signals the process p itself.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return p.Kill()
	}
	return p.Signal(sig)
}

// waitExited cannot wait without reaping here.
func waitExited(int) bool { return false }

// groupHasOthers cannot tell here: there are no process groups to wait for.
func groupHasOthers(int, int) bool { return false }
