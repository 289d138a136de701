//go:build linux

package plugins

import (
	"os/exec"
	"syscall"
	"unsafe"
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

// waitExited blocks until the process pid has exited, without reaping it, and
// reports whether it could. While the zombie is not reaped its pid, and so
// its process group id, cannot be reused.
func waitExited(pid int) bool {
	const pPID = 1      // P_PID
	var info [16]uint64 // siginfo_t, 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}
