package e2e

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
)

// flushFixture is a server that needs 400 ms to save its state when it is
// asked to stop (stdin closed, SIGTERM or SIGINT) and writes marker once it
// has; extra flags go before.
func flushFixture(name, marker string, extra ...string) string {
	return fixture(name, append(extra, "-flush", "400ms", "-marker", marker))
}

// waitMarker reports whether the fixture wrote its marker.
func markerWritten(t *testing.T, marker string) bool {
	t.Helper()
	b, err := os.ReadFile(marker)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b) == "flushed\n"
}

// waitExit waits, up to exitBound, until the process pid is a zombie or gone.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(exitBound)
	for {
		pi, ok := readProc(pid)
		if !ok || pi.state == 'Z' || pi.state == 'X' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("manifold (pid %d) did not exit within %s of the signals", pid, exitBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Claude Code stops a stdio server with SIGINT and, 100 ms later, SIGTERM.
// The second signal must not cut the servers' grace short.
func TestShutdownSecondSignalKeepsGrace(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "flushed")
	sp := startStdio(t, writeConfig(t, flushFixture("slow", marker)))
	ctx := testCtx(t)
	if _, err := sp.cs.ListTools(ctx, nil); err != nil { // the server is up
		t.Fatal(err)
	}
	if err := syscall.Kill(sp.pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(sp.pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, sp.pid()) // on its own: its stdin is still open
	if code := sp.stop(); code != 0 {
		t.Errorf("manifold exited with status %d after SIGINT+SIGTERM, want 0", code)
	}
	if !markerWritten(t, marker) {
		t.Errorf("the server was not given its grace: no marker after manifold exited\nstderr:\n%s", sp.stderr)
	}
}

// A server still starting when the user presses Ctrl-C (npx downloading
// it) is stopped with the whole sequence, never a bare SIGKILL, and the
// command exits 0 without a "context canceled".
func TestShutdownDuringStartKeepsGrace(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"tools", "call"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "flushed")
			cfg := writeConfig(t, flushFixture("installing", marker, "-mode", "slowstart", "-delay", "10m"))
			args := []string{cmd, "--log-level", "info", "--config", cfg}
			if cmd == "call" {
				args = append(args, "installing__echo", `{"message":"hi"}`)
			}
			stderr := &syncBuffer{}
			c := command(manifoldBin, args...)
			c.Stderr = stderr
			c.WaitDelay = 5 * time.Second
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- c.Wait() }()
			deadline := time.After(readyBound)
			for !strings.Contains(stderr.String(), "fixture installing up") {
				select {
				case err := <-exited:
					t.Fatalf("manifold %s exited before the server started: %v\nstderr:\n%s", cmd, err, stderr)
				case <-deadline:
					_ = c.Process.Kill()
					<-exited
					t.Fatalf("the server did not start within %s\nstderr:\n%s", readyBound, stderr)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := c.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(exitBound):
				_ = c.Process.Kill()
				<-exited
				t.Fatalf("manifold %s did not exit within %s of SIGINT\nstderr:\n%s", cmd, exitBound, stderr)
			}
			if err != nil {
				t.Errorf("manifold %s after SIGINT: %v, want exit status 0\nstderr:\n%s", cmd, err, stderr)
			}
			if strings.Contains(stderr.String(), "context canceled") {
				t.Errorf("manifold %s reports the interruption as an error:\n%s", cmd, stderr)
			}
			if !markerWritten(t, marker) {
				t.Errorf("the starting server was killed without its grace: no marker\nstderr:\n%s", stderr)
			}
		})
	}
}

// `manifold serve` stopped before a client connected exits 0.
func TestShutdownServeBeforeClient(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			cache := t.TempDir()
			c := command(manifoldBin, "serve", "--config", writeConfig(t, fixture("alpha", nil)))
			c.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
			stdin, err := c.StdinPipe() // held open: no client, no end of input
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stderr := &syncBuffer{}
			c.Stderr = stderr
			c.WaitDelay = 5 * time.Second
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- c.Wait() }()
			// Its status file says it runs (and has its signal handlers).
			status := filepath.Join(cache, "manifold", "run", strconv.Itoa(c.Process.Pid)+".json")
			deadline := time.After(readyBound)
			for !fileExists(status) {
				select {
				case err := <-exited:
					t.Fatalf("manifold serve exited early: %v\nstderr:\n%s", err, stderr)
				case <-deadline:
					_ = c.Process.Kill()
					<-exited
					t.Fatalf("manifold serve published no status within %s\nstderr:\n%s", readyBound, stderr)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := c.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), exitBound)
			defer cancel()
			select {
			case err = <-exited:
			case <-ctx.Done():
				_ = c.Process.Kill()
				<-exited
				t.Fatalf("manifold serve did not exit within %s of %v", exitBound, sig)
			}
			if err != nil {
				t.Errorf("manifold serve after %v: %v, want exit status 0\nstderr:\n%s", sig, err, stderr)
			}
		})
	}
}

// A server that cannot start because npm's npx cache holds a half-written
// install (an earlier first download was interrupted) fails with a message
// that says what to delete.
func TestShutdownNpxCacheHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, ".npm", "_npx", "0a1b2c3d4e5f6789")
	npx := filepath.Join(dir, "npx")
	script := "#!/bin/sh\n" +
		"echo \"node:internal/modules/esm/resolve:873\" >&2\n" +
		"echo \"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from " + cache + "/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js\" >&2\n" +
		"exit 1\n"
	if err := os.WriteFile(npx, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "[servers.broken]\ncommand = "+tomlStr(npx)+"\nargs = [\"-y\", \"@modelcontextprotocol/server-everything\"]\nrestart.enabled = false\n")
	stdout, stderr, _ := runCLI(t, "tools", "--config", cfg)
	if want := "rm -rf " + cache; !strings.Contains(stdout+stderr, want) {
		t.Errorf("manifold tools does not say to delete the incomplete install (%q):\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
	}
}
