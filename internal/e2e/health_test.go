package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestHealthCheck: a server that answers but fails its health check (wrong
// data) is restarted after the configured failures; a server that passes is
// left alone. The other server keeps answering throughout.
func TestHealthCheck(t *testing.T) {
	t.Parallel()
	check := func(expect string) []string {
		return []string{
			"[servers.%s.health]", // placeholder, replaced below
			`tool = "echo"`,
			`arguments = { message = "ping" }`,
			`expect = "` + expect + `"`,
			`interval = "200ms"`,
			`failures = 2`,
		}
	}
	sick := check("something the server never says")
	sick[0] = "[servers.sick.health]"
	well := check("well: ping")
	well[0] = "[servers.well.health]"
	sp := startStdio(t, writeConfig(t, fixture("sick", nil, sick...)+fixture("well", nil, well...)))
	ctx := testCtx(t)
	listTools(ctx, t, sp.cs)
	sickPid := text(call(ctx, t, sp.cs, "sick__pid", nil))
	wellPid := text(call(ctx, t, sp.cs, "well__pid", nil))

	waitFor(t, 20*time.Second, "the unhealthy server's restart", func() bool {
		return strings.Contains(sp.stderr.String(), "server unhealthy; restarting it")
	})
	waitFor(t, 20*time.Second, "the unhealthy server back with a new process", func() bool {
		res := call(ctx, t, sp.cs, "sick__pid", nil)
		return !res.IsError && text(res) != sickPid
	})
	if got := text(call(ctx, t, sp.cs, "well__pid", nil)); got != wellPid {
		t.Errorf("the healthy server was restarted: pid %s, then %s", wellPid, got)
	}
	if s := sp.stderr.String(); !strings.Contains(s, `upstream=sick`) || !strings.Contains(s, "health check failed") {
		t.Errorf("stderr does not log the failed checks of server sick:\n%s", s)
	}
}
