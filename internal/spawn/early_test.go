package spawn

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/internal/reaper"
)

// TestReaperArg: the argument this package starts the reaper with is the
// one that makes the binary run as the reaper.
func TestReaperArg(t *testing.T) {
	if ReaperArg != reaper.Arg {
		t.Fatalf("ReaperArg %q, reaper.Arg %q", ReaperArg, reaper.Arg)
	}
}

// startTestEarly runs the early start of specs, as earlystart's init does
// for `manifold serve`, and undoes it when the test ends. The test binary is
// the reaper: it links internal/reaper.
func startTestEarly(t *testing.T, specs ...Spec) {
	t.Helper()
	grace := earlyGrace
	earlyGrace = 200 * time.Millisecond
	Early(func() []Spec { return specs })
	<-early.ready
	t.Cleanup(func() {
		Discard()
		earlyGrace = grace
		early.ready = nil
		early.taken = false
	})
}

// alive reports whether the process pid runs (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(end) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEarlyTakeAndDiscard: the early start starts the reaper and the
// servers; Take hands over only a server whose spawn arguments are exactly
// the same, once; Discard stops the others, one that ignores the end of its
// input and SIGTERM included, and leaves the taken one, and the reaper that
// is now its, alone.
func TestEarlyTakeAndDiscard(t *testing.T) {
	if !earlyOK {
		t.Skip("servers start early on Linux only")
	}
	dir := t.TempDir()
	stubborn := Spec{Command: "sh", Args: []string{"-c", "trap '' TERM; while :; do sleep 0.05; done"}, Dir: dir}
	// Exits at the end of its input, and leaves a child in its group.
	leaver := Spec{Command: "sh", Args: []string{"-c", "sleep 60 & exec cat"}, Dir: dir}
	startTestEarly(t, Spec{Command: "cat", Env: []string{"A=1", "B=2"}, Dir: dir}, stubborn, leaver,
		Spec{Command: "manifold-test-no-such-command"})
	early.mu.Lock()
	var names []string
	for _, p := range early.procs {
		names = append(names, p.Command+" "+strings.Join(p.Args, " "))
	}
	reaperCmd := early.reaper
	early.mu.Unlock()
	if len(names) != 3 || reaperCmd == nil {
		t.Fatalf("started early: %q, reaper %v; want cat, the stubborn sh and the one that leaves a child (not the command that does not exist), and a reaper", names, reaperCmd)
	}
	exe, _ := os.Executable()
	if cmd, _ := TakeReaper(exe + ".other"); cmd != nil {
		t.Fatal("TakeReaper handed over a reaper of another binary")
	}

	if p := Take("cat", nil, []string{"A=1", "B=3"}, dir); p != nil {
		t.Fatal("Take handed over a server whose environment differs")
	}
	if p := Take("cat", nil, []string{"B=2", "A=1"}, dir); p != nil {
		t.Fatal("Take handed over a server whose environment is in another order than the proxy's (sorted)")
	}
	if p := Take("cat", nil, []string{"A=1", "B=2"}, ""); p != nil {
		t.Fatal("Take handed over a server started in another folder")
	}
	if p := Take("cat", []string{"-u"}, []string{"A=1", "B=2"}, dir); p != nil {
		t.Fatal("Take handed over a server started with other arguments")
	}
	cat := Take("cat", nil, []string{"A=1", "B=2"}, dir)
	if cat == nil {
		t.Fatal("Take did not hand over the server started early with the same arguments")
	}
	defer func() {
		cat.Stdin.Close()
		_ = cat.Cmd.Wait()
		cat.Stdout.Close()
		cat.Stderr.Close()
	}()
	if again := Take("cat", nil, []string{"A=1", "B=2"}, dir); again != nil {
		t.Fatal("Take handed over the same server twice")
	}
	if _, err := cat.Stdin.WriteString("ping\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := cat.Stdout.Read(buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("the taken server's stdout: %q, %v", buf, err)
	}
	if pg, err := syscall.Getpgid(cat.Cmd.Process.Pid); err != nil || pg != cat.Cmd.Process.Pid {
		t.Errorf("the server's process group is %d (%v), want its own, %d", pg, err, cat.Cmd.Process.Pid)
	}

	early.mu.Lock()
	stubbornPid, leaverPid := early.procs[0].Cmd.Process.Pid, early.procs[1].Cmd.Process.Pid
	early.mu.Unlock()
	left := waitChild(t, leaverPid, "the server that leaves a child")
	Discard()
	waitDead(t, stubbornPid, "the server not taken, which ignores SIGTERM,")
	waitDead(t, leaverPid, "the server not taken that exits at the end of its input")
	waitDead(t, left, "the child it left in its group")
	if !alive(cat.Cmd.Process.Pid) {
		t.Error("Discard stopped the server that was taken")
	}
	// The reaper, not taken, is the taken server's: it stays.
	if !alive(reaperCmd.Process.Pid) {
		t.Error("Discard stopped the reaper of a server that was taken")
	}
	if cmd, w := TakeReaper(exe); cmd != reaperCmd {
		t.Error("TakeReaper did not hand over the reaper after Discard")
	} else {
		defer func() {
			_ = w.Close()
			_ = cmd.Wait()
		}()
	}
	if p := Take(stubborn.Command, stubborn.Args, stubborn.Env, stubborn.Dir); p != nil {
		t.Error("Take handed over a server after Discard")
	}
	Discard() // again: nothing left
}

// TestEarlyReaperKillsOnExit: the servers started early are registered with
// the reaper before anyone takes them: when its input ends (the proxy is
// gone, however), it kills their groups, a child that ignores the end of
// its input included.
func TestEarlyReaperKillsOnExit(t *testing.T) {
	if !earlyOK {
		t.Skip("servers start early on Linux only")
	}
	startTestEarly(t, Spec{Command: "sh", Args: []string{"-c", "trap '' TERM; sleep 60 & wait"}})
	early.mu.Lock()
	if len(early.procs) != 1 || early.reaper == nil {
		early.mu.Unlock()
		t.Fatalf("%d servers started early, reaper %v; want 1 and a reaper", len(early.procs), early.reaper)
	}
	pid := early.procs[0].Cmd.Process.Pid
	rw, rcmd := early.rw, early.reaper
	early.mu.Unlock()
	sleeper := waitChild(t, pid, "the server")
	// What the proxy's exit does to the reaper: its stdin ends.
	_ = rw.Close()
	_ = rcmd.Wait()
	waitDead(t, sleeper, "the server's child")
	waitDead(t, pid, "the server")
	early.mu.Lock()
	early.procs, early.reaper = nil, nil // the reaper did it: nothing for Discard
	early.mu.Unlock()
}

// waitChild waits up to 10 s for the process pid (what) to have a child,
// and returns the child's pid.
func waitChild(t *testing.T, pid int, what string) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if c := childOf(pid); c != 0 {
			return c
		}
	}
	t.Fatalf("%s (pid %d) started no child", what, pid)
	return 0
}

// childOf returns a child of pid, 0 if it has none.
func childOf(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(e.Name())
			return n
		}
	}
	return 0
}
