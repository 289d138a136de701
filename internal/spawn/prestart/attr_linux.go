//go:build linux

package prestart

import (
	"os"
	"syscall"
)

// earlyOK is whether servers are started early: only where a server's
// process group and its death signal make a proxy that dies before it
// adopts them take them along.
const earlyOK = true

// backgroundNice is the nice value of the reaper process.
const backgroundNice = 10

// ServerAttr is a server's process attributes, here and in spawn: its own
// process group, and killed by the kernel if the proxy dies, even by
// SIGKILL.
func ServerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// GroupAttr is the reaper's: its own process group.
func GroupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Lower lowers the priority of the started reaper pid to nice
// backgroundNice: its start (the proxy's binary initialising again) then
// yields the CPU to the servers starting beside it; its job waits in its
// stdin pipe, so a late start loses nothing. On Linux a nice value belongs
// to a thread: the one set is that of the child's main thread, which runs
// the Go runtime's package initialisation and from which its later threads
// inherit it. (Forking from a thread of our own lowered for the purpose
// would not do: that thread would have to end, and a server forked from it
// earlier gets its Pdeathsig when it does.) If the nice value cannot be
// set, the reaper runs at ours.
func Lower(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, backgroundNice) }

// executable reports whether file is a file (not a folder) that this
// process may execute (access(2) with X_OK, as os/exec asks).
func executable(file string) bool {
	fi, err := os.Stat(file)
	if err != nil || fi.IsDir() {
		return false
	}
	return syscall.Access(file, 1 /* X_OK */) == nil
}
