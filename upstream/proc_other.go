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
