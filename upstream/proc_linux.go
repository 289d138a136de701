//go:build linux

package upstream

import (
	"os"
	"syscall"
)

// signalGroup sends sig to the process group led by p.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
