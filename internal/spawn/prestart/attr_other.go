//go:build !linux

package prestart

import "syscall"

// earlyOK is false here: without process groups and Pdeathsig, a proxy that
// died before adopting a server started early would leave it running.
const earlyOK = false

func serverAttr() *syscall.SysProcAttr { return nil }
func groupAttr() *syscall.SysProcAttr  { return nil }
func lower(int)                        {}

// executable is false here: nothing starts early (earlyOK).
func executable(string) bool { return false }
