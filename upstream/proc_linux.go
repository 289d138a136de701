//go:build linux

package upstream

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// backgroundNice is the nice value of the reaper process.
const backgroundNice = 10

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

// setProcAttr puts the child in its own process group and makes the kernel
// kill it if the proxy dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group led by p.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}

// waitExited blocks until the process pid has exited, without reaping it, and
// reports whether it could. While the zombie is not reaped its pid, and so its
// process group id, cannot be reused.
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

// groupHasOthers reports whether a live process other than leader is in the
// process group pgid (read from /proc; false when /proc cannot be read).
func groupHasOthers(pgid, leader int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == leader {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}
