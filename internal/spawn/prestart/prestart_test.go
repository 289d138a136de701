package prestart

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	old := grace
	grace = 200 * time.Millisecond
	Start(func() []Spec { return specs })
	<-early.ready
	t.Cleanup(func() {
		Discard()
		grace = old
		early.ready = nil
		early.taken = false
	})
}

// anyPath accepts any program: the caller of Take that does not check it.
func anyPath(string) bool { return true }

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
	reaperProc := early.reaper
	early.mu.Unlock()
	if len(names) != 3 || reaperProc == nil {
		t.Fatalf("started early: %q, reaper %v; want cat, the stubborn sh and the one that leaves a child (not the command that does not exist), and a reaper", names, reaperProc)
	}
	exe, _ := os.Executable()
	if p, _ := TakeReaper(exe + ".other"); p != nil {
		t.Fatal("TakeReaper handed over a reaper of another binary")
	}

	if p := Take(Spec{"cat", nil, []string{"A=1", "B=3"}, dir}, anyPath); p != nil {
		t.Fatal("Take handed over a server whose environment differs")
	}
	if p := Take(Spec{"cat", nil, []string{"B=2", "A=1"}, dir}, anyPath); p != nil {
		t.Fatal("Take handed over a server whose environment is in another order than the proxy's (sorted)")
	}
	if p := Take(Spec{"cat", nil, []string{"A=1", "B=2"}, ""}, anyPath); p != nil {
		t.Fatal("Take handed over a server started in another folder")
	}
	if p := Take(Spec{"cat", []string{"-u"}, []string{"A=1", "B=2"}, dir}, anyPath); p != nil {
		t.Fatal("Take handed over a server started with other arguments")
	}
	cat := Take(Spec{"cat", nil, []string{"A=1", "B=2"}, dir}, anyPath)
	if cat == nil {
		t.Fatal("Take did not hand over the server started early with the same arguments")
	}
	defer func() {
		cat.Stdin.Close()
		_, _ = cat.Process.Wait()
		cat.Stdout.Close()
		cat.Stderr.Close()
	}()
	if again := Take(Spec{"cat", nil, []string{"A=1", "B=2"}, dir}, anyPath); again != nil {
		t.Fatal("Take handed over the same server twice")
	}
	if _, err := cat.Stdin.WriteString("ping\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := cat.Stdout.Read(buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("the taken server's stdout: %q, %v", buf, err)
	}
	if pg, err := syscall.Getpgid(cat.Process.Pid); err != nil || pg != cat.Process.Pid {
		t.Errorf("the server's process group is %d (%v), want its own, %d", pg, err, cat.Process.Pid)
	}

	early.mu.Lock()
	stubbornPid, leaverPid := early.procs[0].Process.Pid, early.procs[1].Process.Pid
	early.mu.Unlock()
	left := waitChild(t, leaverPid, "the server that leaves a child")
	Discard()
	waitDead(t, stubbornPid, "the server not taken, which ignores SIGTERM,")
	waitDead(t, leaverPid, "the server not taken that exits at the end of its input")
	waitDead(t, left, "the child it left in its group")
	if !alive(cat.Process.Pid) {
		t.Error("Discard stopped the server that was taken")
	}
	// The reaper, not taken, is the taken server's: it stays.
	if !alive(reaperProc.Process.Pid) {
		t.Error("Discard stopped the reaper of a server that was taken")
	}
	if p, w := TakeReaper(exe); p != reaperProc {
		t.Error("TakeReaper did not hand over the reaper after Discard")
	} else {
		defer func() {
			_ = w.Close()
			_, _ = p.Process.Wait()
		}()
	}
	if p := Take(stubborn, anyPath); p != nil {
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
	pid := early.procs[0].Process.Pid
	rw, rcmd := early.rw, early.reaper
	early.mu.Unlock()
	sleeper := waitChild(t, pid, "the server")
	// What the proxy's exit does to the reaper: its stdin ends.
	_ = rw.Close()
	_, _ = rcmd.Process.Wait()
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

// TestTakeOtherProgram: a server whose program is not the one the caller
// would run (its same says no) is not handed over, and is stopped.
func TestTakeOtherProgram(t *testing.T) {
	if !earlyOK {
		t.Skip("servers start early on Linux only")
	}
	s := Spec{Command: "cat", Dir: t.TempDir()}
	startTestEarly(t, s)
	early.mu.Lock()
	if len(early.procs) != 1 {
		early.mu.Unlock()
		t.Fatalf("%d servers started early, want 1", len(early.procs))
	}
	p := early.procs[0]
	early.mu.Unlock()
	if p.Path != "/usr/bin/cat" && p.Path != "/bin/cat" {
		t.Errorf("cat found at %q", p.Path)
	}
	var asked string
	if got := Take(s, func(path string) bool { asked = path; return false }); got != nil {
		t.Fatal("Take handed over a server whose program the caller refused")
	}
	if asked != p.Path {
		t.Errorf("same was asked about %q, want %q", asked, p.Path)
	}
	waitDead(t, p.Process.Pid, "the server refused")
	if got := Take(s, anyPath); got != nil {
		t.Fatal("Take handed over the refused server later")
	}
}

// TestLookPathAsExec: the program lookPath finds is the one os/exec's
// LookPath finds, or none where os/exec finds none or refuses the one it
// finds (through a relative PATH entry): files that are not executable,
// folders, names with a '/', empty and relative PATH entries, a missing
// PATH.
func TestLookPathAsExec(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("a/tool", 0o755)
	mk("b/tool", 0o755)
	mk("a/plain", 0o644)
	mk("b/plain", 0o755)
	mk("b/only", 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "a", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	mk("b/sub", 0o755)
	t.Chdir(dir)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, path := range []string{
		a + ":" + b, b + ":" + a, a, "", ":" + b, "a:" + b, b + "::", "/nonexistent:" + b, "b",
	} {
		t.Setenv("PATH", path)
		for _, file := range []string{"tool", "plain", "only", "sub", "missing", a + "/tool", a + "/plain", "./a/tool", "a/tool", ""} {
			want, err := exec.LookPath(file)
			if err != nil {
				want = ""
			}
			got, ok := lookPath(file)
			if !ok {
				got = ""
			}
			if got != want {
				t.Errorf("PATH=%q: lookPath(%q) = %q, %v; exec.LookPath = %q (%v)", path, file, got, ok, want, err)
			}
		}
	}
}

// TestServerEnvAsExec: a server started here gets the environment os/exec
// gives it (spawn.Server): the proxy's, then the server's, the last value
// of each name kept, an entry without '=' kept as it is; an entry with a
// NUL byte, which os/exec refuses, keeps it from starting here.
func TestServerEnvAsExec(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env program")
	}
	t.Setenv("MANIFOLD_TEST_A", "proxy")
	t.Setenv("MANIFOLD_TEST_B", "proxy")
	extra := []string{"MANIFOLD_TEST_A=server", "MANIFOLD_TEST_C=1", "MANIFOLD_TEST_C=2", "NOEQUALS", "MANIFOLD_TEST_D="}
	cmd := exec.Command(env)
	cmd.Env = append(os.Environ(), extra...)
	want, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	p, err := server(Spec{Command: "env", Env: extra})
	if err != nil {
		t.Fatal(err)
	}
	p.Stdin.Close()
	got, _ := io.ReadAll(p.Stdout)
	_, _ = p.Process.Wait()
	p.Stdout.Close()
	p.Stderr.Close()
	if string(got) != string(want) {
		t.Errorf("environment started here:\n%s\nos/exec's:\n%s", got, want)
	}
	for _, s := range []string{"MANIFOLD_TEST_A=server\n", "MANIFOLD_TEST_B=proxy\n", "MANIFOLD_TEST_C=2\n", "NOEQUALS\n", "MANIFOLD_TEST_D=\n"} {
		if !strings.Contains(string(got), s) {
			t.Errorf("environment has no %q", s)
		}
	}
	if strings.Contains(string(got), "MANIFOLD_TEST_C=1") {
		t.Error("the earlier of two values of a name was passed on")
	}
	if p, err := server(Spec{Command: "env", Env: []string{"X=a\x00b"}}); err == nil {
		p.Stdin.Close()
		_, _ = p.Process.Wait()
		t.Error("a server with a NUL byte in its environment started")
	}
}
