//go:build !linux

package plugins

import (
	"os"
	"os/exec"
)

// setProcAttr does nothing here: process groups and Pdeathsig are wired up on
// Linux only; elsewhere plugins/sdk's parent watchdog ends an orphaned plugin.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the process pid itself.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
