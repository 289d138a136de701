//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollable returns f as a file that Go's poller serves, when f is a pipe or a
// socket: a write the client is slow to read then waits in a goroutine,
// not in an OS thread. Terminals and regular files are left alone (a
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

// sameFile reports whether r is the file f is (the same inode: one socket
// given as both stdin and stdout shares its blocking mode between them).
func sameFile(r io.Reader, f *os.File) bool {
	rf, ok := r.(*os.File)
	if !ok {
		return false
	}
	a, err := rf.Stat()
	if err != nil {
		return true // unknown: leave f alone
	}
	b, err := f.Stat()
	if err != nil {
		return true
	}
	return os.SameFile(a, b)
}
