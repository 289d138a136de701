//go:build !unix

package outside

import "time"

// clientCPU is this process's CPU time; zero where getrusage is not
// available (the measurement runs on Linux; this lets the package build
// for the cross builds of CI).
func clientCPU() time.Duration { return 0 }
