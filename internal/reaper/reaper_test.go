package reaper

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With REAPER_TEST_STUBBORN set, the test binary is a process that ignores
// SIGTERM and sleeps: one that only SIGKILL ends.
func TestMain(m *testing.M) {
	if os.Getenv("REAPER_TEST_STUBBORN") != "" {
		signal.Ignore(syscall.SIGTERM)
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute)
		return
	}
	os.Exit(m.Run())
}

// group starts cmd in a new process group and returns it; the test kills
// the group and waits for it at its end.
func group(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	})
	return cmd
}

// exited waits (bounded) for cmd to end and says whether it did, and by
// which signal.
func exited(cmd *exec.Cmd, within time.Duration) (syscall.Signal, bool) {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		return ws.Signal(), true
	case <-time.After(within):
		return 0, false
	}
}

// TestRun: once its input ends, the reaper sends SIGTERM to the groups
// registered and not unregistered, and SIGKILL after the grace to one that
// ignores SIGTERM; a group unregistered is left alone, and a line it cannot
// read, or longer than any the proxy writes, is skipped.
func TestRun(t *testing.T) {
	polite := group(t, exec.Command("sleep", "60"))
	stubborn := exec.Command(os.Args[0])
	stubborn.Env = append(os.Environ(), "REAPER_TEST_STUBBORN=1")
	out, err := stubborn.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stubborn = group(t, stubborn)
	if _, err := io.ReadFull(out, make([]byte, len("ready\n"))); err != nil {
		t.Fatalf("the stubborn process did not say it ignores SIGTERM: %v", err)
	}
	spared := group(t, exec.Command("sleep", "60"))
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() { Run(r, 300*time.Millisecond); close(done) }()
	for _, line := range []string{
		"+" + itoa(stubborn.Process.Pid) + "\r",
		"+" + itoa(spared.Process.Pid),
		" -" + itoa(spared.Process.Pid) + " ",
		"+" + itoa(spared.Process.Pid) + strings.Repeat(" ", 2*maxLine), // too long: skipped
		"+1", "+x", "?", "",
	} {
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The last line has no newline.
	if _, err := io.WriteString(w, "+"+itoa(polite.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its input ended")
	}
	if sig, ok := exited(polite, 5*time.Second); !ok || sig != syscall.SIGTERM {
		t.Errorf("registered group: exited %v by %v, want by SIGTERM", ok, sig)
	}
	if sig, ok := exited(stubborn, 5*time.Second); !ok || sig != syscall.SIGKILL {
		t.Errorf("group that ignores SIGTERM: exited %v by %v, want by SIGKILL", ok, sig)
	}
	time.Sleep(300 * time.Millisecond) // the grace, again: a signal sent would have landed
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(spared.Process.Pid, &ws, syscall.WNOHANG, nil); err != nil || pid != 0 {
		t.Errorf("an unregistered group was signalled: it ended (%v, %v)", ws.Signal(), err)
	}
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
