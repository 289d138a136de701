//go:build linux

package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestHasOthers: the leader alone is not "others"; a live member is;
// a member that has exited (a zombie, not yet reaped) is not, nor one
// reaped; a process of another group does not count.
func TestHasOthers(t *testing.T) {
	leader := startInGroup(t, 0)
	pgid := leader.Process.Pid
	if HasOthers(pgid, pgid) {
		t.Fatal("leader alone: HasOthers = true")
	}
	other := startInGroup(t, 0) // a group of its own
	if HasOthers(pgid, pgid) {
		t.Fatal("a process of another group counted")
	}
	if !HasOthers(other.Process.Pid, pgid) {
		t.Fatal("the other group's leader not seen from another pid")
	}
	member := startInGroup(t, pgid)
	if !HasOthers(pgid, pgid) {
		t.Fatal("a live member: HasOthers = false")
	}
	if err := member.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !WaitExited(member.Process.Pid) { // a zombie until reaped
		t.Fatal("WaitExited failed")
	}
	if HasOthers(pgid, pgid) {
		t.Fatal("a zombie member counted as live")
	}
	_ = member.Wait()
	if HasOthers(pgid, pgid) {
		t.Fatal("a reaped member counted")
	}
}

// BenchmarkHasOthers is the scan of /proc that each upstream's exit
// runs (graceGroup), for a group with no other member: every process is
// looked at.
func BenchmarkHasOthers(b *testing.B) {
	leader := startInGroup(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		if HasOthers(leader.Process.Pid, leader.Process.Pid) {
			b.Fatal("leader alone: HasOthers = true")
		}
	}
}

// TestStatGroupHostileComm: statGroup reads the process group after the
// last ')' of a stat line, so a process that names itself to look like
// other fields (comm may hold spaces and parentheses) cannot move it; a
// zombie, a dead process and a cut or empty line are not live.
func TestStatGroupHostileComm(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		line string
		pgrp int
		live bool
	}{
		{"123 (sleep) S 1 4242 4242 0 -1 4194304\n", 4242, true},
		{"123 (a) R 1 4242) S 1 77 77 0 -1\n", 77, true}, // comm "a) R 1 4242"
		{"123 () Z 1 4242 (x) S 1 77 0\n", 77, true},     // comm ") Z 1 4242 (x"
		{"123 (x) S 1 4242 (y) Z 1 77 0\n", 0, false},    // comm "x) S 1 4242 (y": a zombie of group 77
		{"123 (sleep) Z 1 4242 4242 0\n", 0, false},      // zombie
		{"123 (sleep) X 1 4242 4242 0\n", 0, false},      // dead
		{"123 (sleep) S 1\n", 0, false},                  // cut before pgrp
		{"123 (sleep) S 1 notanumber 0\n", 0, false},     // no number
		{"", 0, false},                       // empty
		{"123 sleep S 1 4242 0\n", 0, false}, // no parenthesis
	} {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(path, []byte(tc.line), 0o600); err != nil {
			t.Fatal(err)
		}
		var buf [512]byte
		g, live := statGroup(path, buf[:])
		if live != tc.live || (live && g != tc.pgrp) {
			t.Errorf("%q: group %d, live %v; want %d, %v", tc.line, g, live, tc.pgrp, tc.live)
		}
	}
	var buf [512]byte
	if _, live := statGroup(filepath.Join(dir, "missing"), buf[:]); live {
		t.Error("a stat file that cannot be opened counts as live")
	}
}
