//go:build !unix

package reaper

import (
	"errors"
	"syscall"
)

// killGroup cannot signal a process group here: there are none. The proxy
// starts no reaper where it cannot use one (see upstream.Reaper).
func killGroup(int, syscall.Signal) error { return errors.ErrUnsupported }
