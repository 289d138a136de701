//go:build unix

package e2e

import (
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
// The pipe's folder (/dev/fd) holds no lock file: the definitions trusted
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
	sp := startStdio(t, fifo)
	if err := <-written; err != nil {
		t.Fatal(err)
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
	if !strings.Contains(logs, "whose folder holds no lock file") {
		t.Errorf("no warning at start that the trusted definitions are kept by this process only:\n%s", logs)
	}
	if strings.Contains(logs, "cannot record the definitions trusted on first use") {
		t.Errorf("an error per server for the lock file a piped config has not:\n%s", logs)
	}
}
