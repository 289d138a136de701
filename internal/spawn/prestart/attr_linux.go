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

// backgroundNice is the nice value of the reaper process (see
// spawn.startBackground).
const backgroundNice = 10

// serverAttr is a server's: its own process group, killed by the kernel if
// the proxy dies (spawn.SetProcAttr).
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAttr is the reaper's: its own process group.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// lower lowers the priority of the reaper's main thread, as
// spawn.startBackground does.
func lower(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, backgroundNice) }

// executable reports whether file is a file (not a folder) that this
// process may execute (access(2) with X_OK, as os/exec asks).
func executable(file string) bool {
	fi, err := os.Stat(file)
	if err != nil || fi.IsDir() {
		return false
	}
	return syscall.Access(file, 1 /* X_OK */) == nil
}
