package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dieWithTest makes cmd's process get SIGKILL when the test binary dies
// (PR_SET_PDEATHSIG), so that a killed test run leaves no manifold, fixture
// or redis-server behind. The signal follows the thread that started the
// process; Go starts processes from threads that live as long as the
// binary (only a thread locked by LockOSThread ends with its goroutine, and
// none of those starts a process).
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

var childPidRE = regexp.MustCompile(`(?m)^manifold pid (\d+)$`)

// TestOrphanDiesWithTest: a test binary killed with SIGKILL leaves no
// manifold behind. A child test binary starts `manifold serve --http`
// (which, unlike a stdio one, does not end with its input) and prints its
// pid; the child is killed, and manifold must be gone.
func TestOrphanDiesWithTest(t *testing.T) {
	if os.Getenv(childBinsEnv) != "" {
		t.Skip("in the child")
	}
	t.Parallel()
	child := command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.v")
	child.Env = append(os.Environ(), childBinsEnv+"="+manifoldBin+string(os.PathListSeparator)+fixtureBin)
	var out, stderr syncBuffer
	child.Stdout, child.Stderr = &out, &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = child.Wait(); close(exited) }()
	defer func() { _ = child.Process.Kill(); <-exited }()
	waitFor(t, readyBound+10*time.Second, "the child's manifold pid", func() bool {
		return childPidRE.MatchString(out.String())
	})
	pid, _ := strconv.Atoi(childPidRE.FindStringSubmatch(out.String())[1])
	if !isManifold(pid) {
		t.Fatalf("pid %d is not a running %s\nchild stdout:\n%s\nchild stderr:\n%s", pid, manifoldBin, out.String(), stderr.String())
	}
	t.Cleanup(func() { // the orphan, when the test fails
		if isManifold(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	waitFor(t, goneBound, fmt.Sprintf("manifold (pid %d) gone after the test binary that started it was killed", pid), func() bool {
		return !isManifold(pid)
	})
}

// TestOrphanChild is TestOrphanDiesWithTest's child: it starts manifold
// over HTTP, prints its pid and waits to be killed. manifold's stderr is a
// file, as when a person redirects it: a pipe would end it too, at its
// next log line after the child is gone (SIGPIPE).
func TestOrphanChild(t *testing.T) {
	if os.Getenv(childBinsEnv) == "" {
		t.Skip("run by TestOrphanDiesWithTest")
	}
	logFile := filepath.Join(t.TempDir(), "manifold.log")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := command(manifoldBin, "serve", "--config", writeConfig(t, fixture("alpha", nil)), "--http", freePort(t))
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, readyBound, "manifold listening", func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "serving MCP on")
	})
	fmt.Printf("manifold pid %d\n", cmd.Process.Pid)
	select { // killed meanwhile; else its cleanup ends manifold
	case <-time.After(testTimeout):
	case <-t.Context().Done():
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// isManifold reports whether pid is a live (not zombie) process of the
// manifold binary under test.
func isManifold(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may hold
	// spaces: "pid (comm) S ...".
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || strings.HasPrefix(string(stat[i+1:]), " Z") {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.HasPrefix(string(cmdline), manifoldBin+"\x00")
}

// TestCommandsDieWithTest: the tests start processes only through command
// and commandContext, so that each dies with the test binary.
func TestCommandsDieWithTest(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(moduleRoot, "internal", "e2e", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's files: %v, %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "exec."+"Command(") + strings.Count(string(b), "exec."+"CommandContext(")
		if want := map[bool]int{true: 2}[filepath.Base(f) == "harness_test.go"]; n != want {
			t.Errorf("%s calls exec.Command or exec.CommandContext %d times, want %d: use command or commandContext (harness_test.go)", filepath.Base(f), n, want)
		}
	}
}
