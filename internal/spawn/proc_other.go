//go:build !linux

package spawn

import "os/exec"

// SetProcAttr does nothing here: process groups and Pdeathsig are wired up
// on Linux only (elsewhere plugins/sdk's parent watchdog ends an orphaned
// plugin).
func SetProcAttr(*exec.Cmd) {}

// setGroup does nothing here.
func setGroup(*exec.Cmd) {}

// startBackground starts cmd: a nice value is per process here, not per
// thread, so it cannot be lowered for the child alone.
func startBackground(cmd *exec.Cmd) error { return cmd.Start() }
