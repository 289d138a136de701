//go:build !unix

package reaper

import (
	"errors"
	"syscall"
)

// killGroup cannot signal a process group here: there are none, so the
// reaper ends nothing (the servers' stdin closes with the proxy).
func killGroup(int, syscall.Signal) error { return errors.ErrUnsupported }
