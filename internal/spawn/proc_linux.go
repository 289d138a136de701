//go:build linux

package spawn

import (
	"os/exec"
	"syscall"
)

// backgroundNice is the nice value of the reaper process.
const backgroundNice = 10

// SetProcAttr puts the child in its own process group and makes the kernel
// kill it if the proxy dies, even by SIGKILL.
func SetProcAttr(cmd *exec.Cmd) {
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
