//go:build unix

package reaper

import "syscall"

// killGroup sends sig to the process group pgid (0 only checks that it exists).
func killGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
