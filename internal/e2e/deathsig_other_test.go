//go:build !linux

package e2e

import "os/exec"

// dieWithTest does nothing: only Linux has a parent-death signal.
func dieWithTest(*exec.Cmd) {}
