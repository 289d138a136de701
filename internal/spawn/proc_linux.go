//go:build linux

package spawn

import (
	"os/exec"
	"syscall"
)

// earlyOK is whether servers are started early: only where a server's
// process group and its death signal make a proxy that dies before it
// adopts them take them along.
const earlyOK = true

// backgroundNice is the nice value of the reaper process.
const backgroundNice = 10

// setProcAttr puts the child in its own process group and makes the kernel
// kill it if the proxy dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// setGroup puts the child in its own process group.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// startBackground starts cmd and lowers its priority to nice
// backgroundNice: the reaper, whose start (the proxy's binary initialising
// every package again) then yields the CPU to the servers starting beside
// it; its job waits in its stdin pipe, so a late start loses nothing. On
// Linux a nice value belongs to a thread: the one set is that of the
// child's main thread, which runs the Go runtime's package initialisation
// and from which its later threads inherit it. (Forking from a thread of
// our own lowered for the purpose would not do: that thread would have to
// end, and a server forked from it earlier gets its Pdeathsig when it
// does.) If the nice value cannot be set, cmd runs at ours.
func startBackground(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, backgroundNice)
	return nil
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }

// groupAlive reports whether a process of the group pgid is left.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
