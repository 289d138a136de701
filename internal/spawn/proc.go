package spawn

import (
	"os/exec"

	"github.com/manifold-mcp/manifold/internal/spawn/prestart"
)

// SetProcAttr puts the child in its own process group and (on Linux) makes
// the kernel kill it if the proxy dies, even by SIGKILL: the attributes
// prestart gives the servers it starts (prestart.ServerAttr).
func SetProcAttr(cmd *exec.Cmd) { cmd.SysProcAttr = prestart.ServerAttr() }

// setGroup puts the child in its own process group (prestart.GroupAttr).
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = prestart.GroupAttr() }

// startBackground starts cmd and lowers its priority, as prestart does for
// the reaper it starts (prestart.Lower).
func startBackground(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	prestart.Lower(cmd.Process.Pid)
	return nil
}
