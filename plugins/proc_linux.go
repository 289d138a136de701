//go:build linux

package plugins

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the plugin in its own process group and makes the kernel
// kill it when the proxy dies, even by SIGKILL.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
