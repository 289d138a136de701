package spawn

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/manifold-mcp/manifold/internal/reaper" // the test binary is the reaper
	"github.com/manifold-mcp/manifold/internal/spawn/prestart"
)

// TestTakeAdopts: a server started early is handed over as an exec.Cmd
// that waits for it as one Start made would (its exit status, once), if
// os/exec finds the same program for its command now; one whose command
// os/exec now finds elsewhere (PATH changed) is not handed over. The
// reaper is handed over too. The early start runs once per process: the
// test runs in a process of its own.
func TestTakeAdopts(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	if os.Getenv("MANIFOLD_TEST_TAKE") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTakeAdopts$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "MANIFOLD_TEST_TAKE=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTakeAdopts") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "mytool"), []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", a+":"+b+":"+os.Getenv("PATH"))
	exits := prestart.Spec{Command: "sh", Args: []string{"-c", "read x; exit 3"}, Env: []string{"A=1"}, Dir: dir}
	moved := prestart.Spec{Command: "mytool", Dir: dir}
	prestart.Start(func() []prestart.Spec { return []prestart.Spec{exits, moved} })
	t.Cleanup(prestart.Discard)
	// Take waits for the early start to be done: then PATH changes.
	if p := Take("manifold-test-none", nil, nil, ""); p != nil {
		t.Fatal("Take handed over a server never started")
	}
	t.Setenv("PATH", b+":"+a+":"+os.Getenv("PATH"))
	if p := Take(moved.Command, moved.Args, moved.Env, moved.Dir); p != nil {
		t.Errorf("Take handed over %s, started early as %s: os/exec now finds %s", p.Cmd.Path, filepath.Join(a, "mytool"), filepath.Join(b, "mytool"))
	}
	p := Take(exits.Command, exits.Args, exits.Env, exits.Dir)
	if p == nil {
		t.Fatal("Take did not hand over the server started early")
	}
	if want, _ := exec.LookPath("sh"); p.Cmd.Path != want || p.Cmd.Dir != dir {
		t.Errorf("handed over as %s in %s, want %s in %s", p.Cmd.Path, p.Cmd.Dir, want, dir)
	}
	exe, _ := os.Executable()
	rcmd, rw := TakeReaper(exe)
	if rcmd == nil {
		t.Fatal("TakeReaper did not hand over the reaper started early")
	}
	defer func() {
		_ = rw.Close()
		_ = rcmd.Wait()
	}()
	if _, err := p.Stdin.WriteString("x\n"); err != nil {
		t.Fatal(err)
	}
	err := p.Cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || p.Cmd.ProcessState == nil || p.Cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("Wait = %v, state %v; want exit status 3", err, p.Cmd.ProcessState)
	}
	if err := p.Cmd.Wait(); err == nil {
		t.Error("a second Wait succeeded")
	}
	p.Stdin.Close()
	p.Stdout.Close()
	p.Stderr.Close()
}
