//go:build linux

package plugins_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// waitGone waits, bounded, until pid is no longer alive.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for range 500 {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s (pid %d) still alive after 10s", what, pid)
}

// result is the outcome of a call made in the background.
type result struct {
	res *mcp.CallToolResult
	err error
}

// TestPluginKilledMidCall kills the plugin with SIGKILL while a call runs in
// it: the call ends at once, the session closes, and Dial works again.
func TestPluginKilledMidCall(t *testing.T) {
	h, _ := testHost("t")
	cs := connect(t, h)
	pid := pidOf(t, cs, "pid")

	started := filepath.Join(t.TempDir(), "started")
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 600, "started": started}})
		done <- result{res, err}
	}()
	waitFile(t, started)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	select {
	case r := <-done:
		switch {
		case r.err != nil:
			t.Logf("call ended with an error: %v", r.err)
		case r.res.IsError:
			t.Logf("call ended with an isError result: %s", text(r.res))
		default:
			t.Errorf("call of a killed plugin succeeded: %s", text(r.res))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("call of a killed plugin still hangs after 20s")
	}
	waited := make(chan error, 1)
	go func() { waited <- cs.Wait() }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		t.Fatal("session still open 20s after the plugin died")
	}
	waitGone(t, pid, "killed plugin")

	// Dialing again starts a new process that works.
	cs2 := connect(t, h)
	if pid2 := pidOf(t, cs2, "pid"); pid2 == pid {
		t.Errorf("new plugin has the old pid %d", pid)
	}
	if got := text(call(t, cs2, "reverse", map[string]any{"text": "again"})); got != `{"text":"niaga"}` {
		t.Errorf("reverse after a restart = %q", got)
	}
}

func TestPluginCrashesMidCall(t *testing.T) {
	h, logs := testHost("t")
	cs := connect(t, h)
	pid := pidOf(t, cs, "pid")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Errorf("call that crashes the plugin succeeded: %s", text(res))
	}
	_ = cs.Wait() // the session ends
	waitGone(t, pid, "crashed plugin")
	_ = cs.Close()
	out := logs.String()
	for _, want := range []string{"panic: deliberate crash", `msg="plugin exited unexpectedly; closing its session"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestCloseStopsPlugin(t *testing.T) {
	h, _ := testHost("t")
	cs := connect(t, h)
	pid := pidOf(t, cs, "pid")
	if !alive(pid) {
		t.Fatalf("plugin %d not alive while connected", pid)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waits for the process: it is gone (and reaped) now.
	if alive(pid) {
		t.Errorf("plugin %d alive after the session was closed", pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("plugin %d not reaped after Close: kill 0 = %v", pid, err)
	}
}
