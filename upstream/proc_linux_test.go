//go:build linux

package upstream

import (
	"os/exec"
	"syscall"
	"testing"
)

// startInGroup starts `sleep 60` in the process group pgid (0: a group of
// its own) and stops it at cleanup.
func startInGroup(t testing.TB, pgid int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestGroupHasOthers: the leader alone is not "others"; a live member is;
// a member that has exited (a zombie, not yet reaped) is not, nor one
// reaped; a process of another group does not count.
func TestGroupHasOthers(t *testing.T) {
	leader := startInGroup(t, 0)
	pgid := leader.Process.Pid
	if groupHasOthers(pgid, pgid) {
		t.Fatal("leader alone: groupHasOthers = true")
	}
	other := startInGroup(t, 0) // a group of its own
	if groupHasOthers(pgid, pgid) {
		t.Fatal("a process of another group counted")
	}
	if !groupHasOthers(other.Process.Pid, pgid) {
		t.Fatal("the other group's leader not seen from another pid")
	}
	member := startInGroup(t, pgid)
	if !groupHasOthers(pgid, pgid) {
		t.Fatal("a live member: groupHasOthers = false")
	}
	if err := member.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !waitExited(member.Process.Pid) { // a zombie until reaped
		t.Fatal("waitExited failed")
	}
	if groupHasOthers(pgid, pgid) {
		t.Fatal("a zombie member counted as live")
	}
	_ = member.Wait()
	if groupHasOthers(pgid, pgid) {
		t.Fatal("a reaped member counted")
	}
}

// BenchmarkGroupHasOthers is the scan of /proc that each upstream's exit
// runs (graceGroup), for a group with no other member: every process is
// looked at.
func BenchmarkGroupHasOthers(b *testing.B) {
	leader := startInGroup(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		if groupHasOthers(leader.Process.Pid, leader.Process.Pid) {
			b.Fatal("leader alone: groupHasOthers = true")
		}
	}
}
