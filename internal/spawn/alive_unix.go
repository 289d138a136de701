//go:build unix

package spawn

import "syscall"

// Alive reports whether a process pid exists that this user may signal.
func Alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }
