//go:build !unix

package spawn

import "os"

// Alive reports whether a process pid exists (its handle can be opened).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
