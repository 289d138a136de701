//go:build unix

package outside

import (
	"syscall"
	"time"
)

// clientCPU is this process's CPU time (user and system).
func clientCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
