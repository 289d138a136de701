//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollable returns f as a file that Go's poller serves, when f is a pipe or a
// socket: a blocking read of stdin parks an OS thread, and waking it costs
// latency on every message. Terminals and regular files are left alone (a
// non-blocking terminal would upset the shell after exit). restore puts the
// descriptor back in blocking mode.
func pollable(f *os.File) (rw io.ReadWriter, restore func()) {
	noop := func() {}
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, noop
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f, noop
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	return nf, func() { _ = syscall.SetNonblock(fd, false) }
}
