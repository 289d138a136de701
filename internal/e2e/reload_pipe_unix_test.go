//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPipedConfigKeepsServing: a config read from a pipe (--config <(…))
// cannot be read again. SIGHUP must not reload it (read again, the pipe is
// empty, and an empty config would stop every server): the servers keep
// their processes and tools, and the log says why nothing was reloaded.
// The pipe has no lock file of its own: the definitions trusted
// on first use stay in the process, said once at start, not an error per
// server.
func TestPipedConfigKeepsServing(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "proxy.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for manifold to open it
		if err != nil {
			written <- err
			return
		}
		_, err = f.WriteString(withListWait(fixture("alpha", nil) + fixture("beta", nil)))
		written <- errors.Join(err, f.Close())
	}()
	// Should manifold never open the pipe, this end lets the writer go.
	t.Cleanup(func() {
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = r.Close()
		}
	})
	sp := startStdio(t, fifo)
	select {
	case err := <-written:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("manifold did not read its config, a named pipe, within 30 s")
	}
	ctx := testCtx(t)
	before := toolNames(listTools(ctx, t, sp.cs))
	if !slices.Contains(before, "alpha__echo") || !slices.Contains(before, "beta__echo") {
		t.Fatalf("tools before SIGHUP: %v, want alpha's and beta's", before)
	}
	pid := text(call(ctx, t, sp.cs, "alpha__pid", nil))

	if err := syscall.Kill(sp.pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the refused reload in the log", func() bool {
		return strings.Contains(sp.stderr.String(), "reload: not done; the config came through a pipe")
	})
	// A reload, had one run, is done by now: it is logged before it
	// returns, and the refusal comes in its place.
	if after := toolNames(listTools(ctx, t, sp.cs)); !slices.Equal(after, before) {
		t.Errorf("tools after SIGHUP: %v, want %v", after, before)
	}
	if got := text(call(ctx, t, sp.cs, "alpha__pid", nil)); got != pid {
		t.Errorf("alpha's pid changed from %s to %s on SIGHUP", pid, got)
	}
	logs := sp.stderr.String()
	if strings.Contains(logs, "config reloaded") || strings.Contains(logs, "stopping it") {
		t.Errorf("SIGHUP reloaded the piped config:\n%s", logs)
	}
	if !strings.Contains(logs, "which has no lock file of its own") {
		t.Errorf("no warning at start that the trusted definitions are kept by this process only:\n%s", logs)
	}
	if strings.Contains(logs, "cannot record the definitions trusted on first use") {
		t.Errorf("an error per server for the lock file a piped config has not:\n%s", logs)
	}
}

// TestDescriptorConfigInWorkingDir: a config given as a file descriptor
// (--config <(…) names /dev/fd/N) has no folder of its own, so its
// relative paths resolve against the working directory, as the command
// line's do: its policy file is found there and applied, and its stdio
// servers run there. Resolved against /dev/fd, the policy file was "not
// found" and a server ran in /proc/PID/fd.
func TestDescriptorConfigInWorkingDir(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "policy.toml"), []byte("[rules.no_echo]\nmatch = \"a__echo\"\ndeny = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg := `policy_files = ["policy.toml"]` + "\n[servers.a]\ncommand = \"sh\"\nargs = " +
		tomlStrs([]string{"-c", `pwd > started-in && exec "$0" -name a`, fixtureBin}) + "\n"
	if _, err := w.WriteString(cfg); err != nil { // far less than a pipe holds
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, "tools", "--json", "--config", "/dev/fd/3")
	cmd.Dir = wd
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("manifold tools --config /dev/fd/3: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Catalog []struct{ Exposed, Verdict string }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, e := range got.Catalog {
		verdicts[e.Exposed] = e.Verdict
	}
	if verdicts["a__args"] != "exposed" || !strings.HasPrefix(verdicts["a__echo"], "hidden") || !strings.Contains(verdicts["a__echo"], "policy.toml") {
		t.Errorf("verdicts of a__args and a__echo: %q, %q; want exposed and hidden (the working directory's policy.toml)", verdicts["a__args"], verdicts["a__echo"])
	}
	started, err := os.ReadFile(filepath.Join(wd, "started-in"))
	if err != nil {
		t.Fatalf("the server did not write started-in in the working directory: %v", err)
	}
	real, err := filepath.EvalSymlinks(wd)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(started)); got != real && got != wd {
		t.Errorf("the server ran in %q, want the working directory %q", got, wd)
	}
}
