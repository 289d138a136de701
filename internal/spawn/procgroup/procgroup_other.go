//go:build !linux

package procgroup

import (
	"os"
	"syscall"
)

// Signal signals the process pid itself: there are no process groups
// to signal here.
func Signal(pid int, sig syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(sig)
	}
}

// WaitExited cannot wait without reaping here.
func WaitExited(int) bool { return false }

// HasOthers cannot tell here: there are no process groups to wait for.
func HasOthers(int, int) bool { return false }
