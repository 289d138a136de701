package spawn

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestAlive: this process is alive; a child that exited and was reaped is
// not, nor are the pids no process has.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Errorf("Alive(own pid %d) = false", os.Getpid())
	}
	for _, pid := range []int{0, -1} {
		if Alive(pid) {
			t.Errorf("Alive(%d) = true", pid)
		}
	}
	if runtime.GOOS == "windows" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if pid := cmd.Process.Pid; Alive(pid) {
		t.Errorf("Alive(%d) = true for a child that exited and was reaped", pid)
	}
}
