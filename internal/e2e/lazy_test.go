package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestLazyStartAndIdleStop: a lazy server with a cached catalog is listed but
// not running until a call needs it; the call waits for the start and
// succeeds. With idle_timeout it is stopped when unused and started again by
// the next call, which loses nothing.
func TestLazyStartAndIdleStop(t *testing.T) {
	t.Parallel()
	setProcEnv(t, "XDG_CACHE_HOME="+t.TempDir()) // the catalog cache, the test's own
	cfg := writeConfig(t, fixture("alpha", nil, `start = "lazy"`, `idle_timeout = "1s"`)+fixture("beta", nil))

	// First run: no cache yet, so alpha starts once to learn its catalog,
	// then stops when idle; the next call starts it again.
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	if names := toolNames(listTools(ctx, t, sp.cs)); !contains(names, "alpha__echo") {
		t.Fatalf("alpha__echo not listed on the first run: %v", names)
	}
	firstPid := text(call(ctx, t, sp.cs, "alpha__pid", nil))
	waitFor(t, 20*time.Second, "alpha stopped for idleness", func() bool {
		return strings.Contains(sp.stderr.String(), "server idle; stopping it")
	})
	if got := text(call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "again"})); got != "alpha: again" {
		t.Errorf("alpha__echo after an idle stop = %q, want %q", got, "alpha: again")
	}
	if pid := text(call(ctx, t, sp.cs, "alpha__pid", nil)); pid == firstPid {
		t.Errorf("alpha kept pid %s across an idle stop", pid)
	}
	sp.stop()

	// Second run: the cached catalog is advertised and alpha does not run
	// until called.
	sp = startStdio(t, cfg)
	names := toolNames(listTools(ctx, t, sp.cs))
	if !contains(names, "alpha__echo") || !contains(names, "beta__echo") {
		t.Fatalf("tools on the second run = %v, want alpha's (from the cache) and beta's", names)
	}
	for _, p := range descendants(sp.pid()) {
		if strings.Contains(p.cmdline, "-name alpha") || strings.Contains(p.cmdline, "-name\x00alpha") {
			t.Errorf("lazy server alpha runs before any call: %+v", p)
		}
	}
	if got := text(call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "lazy"})); got != "alpha: lazy" {
		t.Errorf("first call of a lazy server = %q, want %q", got, "alpha: lazy")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
