//go:build !linux

package prestart

import "syscall"

// earlyOK is false here: without process groups and Pdeathsig, a proxy that
// died before adopting a server started early would leave it running.
const earlyOK = false

// ServerAttr is nil here: process groups and Pdeathsig are wired up on
// Linux only (elsewhere plugins/sdk's parent watchdog ends an orphaned
// plugin).
func ServerAttr() *syscall.SysProcAttr { return nil }

// GroupAttr is nil here.
func GroupAttr() *syscall.SysProcAttr { return nil }

// Lower does nothing here: a nice value is per process, not per thread, so
// it cannot be lowered for the child alone.
func Lower(int) {}

// executable is false here: nothing starts early (earlyOK).
func executable(string) bool { return false }
