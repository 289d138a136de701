//go:build unix

package upstream

import (
	"os"
	"syscall"
)

// writeNow writes what the pipe f takes of b without waiting, and returns
// how much that was.
func writeNow(f *os.File, b []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			k, err := syscall.Write(int(fd), b[n:])
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return true // full: the rest is queued
			case err != nil:
				werr = err
				return true
			}
			n += k
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}
