package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDualEraServerSpeaksTheClientsEra: a server that speaks both eras is
// spoken to in the era of the client its process serves, so that its own
// initialize-era sampling works for an initialize-era client as it does
// directly (spoken to in 2026-07-28, the SDK refuses a legacy
// sampling/createMessage: "cannot be sent while serving a request on
// protocol version 2026-07-28"). Over stdio the process serves the one
// client; over HTTP a session's own process (isolation = "session") serves
// that session.
func TestDualEraServerSpeaksTheClientsEra(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, got string, isError bool) {
		t.Helper()
		if want := "dual: sampled model=e2e-model text=" + sampleAnswer("e2e"); got != want || isError {
			t.Errorf("dual__sample = %q (isError %v), want %q", got, isError, want)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder("e2e")
		count := filepath.Join(t.TempDir(), "dual")
		cfg := fixture("dual", []string{"-count", count, "-era", "dual", "-tools", "echo", "-extra", "sample"})
		sp := startStdioClient(t, writeConfig(t, cfg), rec.client(), protocolVersion)
		ctx := testCtx(t)
		res := call(ctx, t, sp.cs, "dual__sample", map[string]any{"prompt": "hello"})
		check(t, text(res), res.IsError)
		if log := sp.stderr.String(); !strings.Contains(log, "protocol=2025-11-25") {
			t.Errorf("manifold's log does not say the server runs at 2025-11-25:\n%s", log)
		}
		// Initialized first, on its one process: no server/discover.
		if starts, discovers := eraCounts(t, count); len(starts) != 1 || len(discovers) != 0 {
			t.Errorf("starts %v, discovers %v; want one process and no server/discover", starts, discovers)
		}
	})
	t.Run("http session process", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder("e2e")
		cfg := fixture("dual", []string{"-era", "dual", "-tools", "echo", "-extra", "sample"}, `isolation = "session"`)
		hp := startHTTP(t, writeConfig(t, cfg))
		cs := connectHTTPClient(t, hp, rec.client(), protocolVersion)
		ctx := testCtx(t)
		res := call(ctx, t, cs, "dual__sample", map[string]any{"prompt": "hello"})
		check(t, text(res), res.IsError)
	})
}
