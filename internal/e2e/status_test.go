package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStatusOfRunningInstance: `manifold status` shows the servers of a
// manifold that a client runs over stdio (found by its status file): state,
// the server's pid and its tool count. With --fresh it starts its own.
func TestStatusOfRunningInstance(t *testing.T) {
	t.Parallel()
	setProcEnv(t, "XDG_CACHE_HOME="+t.TempDir()) // status files, the test's own
	cfg := writeConfig(t, fixture("alpha", nil))
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	listTools(ctx, t, sp.cs)
	serverPid := text(call(ctx, t, sp.cs, "alpha__pid", nil))

	var out string
	waitFor(t, 10*time.Second, "the running instance in manifold status", func() bool {
		b, _ := cmdEnv(commandContext(ctx, manifoldBin, "status", "--config", cfg), procEnviron(t)).Output()
		out = string(b)
		return strings.Contains(out, "manifold pid "+strconv.Itoa(sp.pid())) && strings.Contains(out, " up ")
	})
	if !strings.Contains(out, "alpha") || !strings.Contains(out, " up ") {
		t.Errorf("status of the running instance does not show alpha up:\n%s", out)
	}
	// The proxy's pid column is the server's process group leader, which is
	// the fixture the pid tool reports.
	if !strings.Contains(out, " "+serverPid+" ") {
		t.Errorf("status does not show alpha's pid %s:\n%s", serverPid, out)
	}

	b, err := cmdEnv(commandContext(ctx, manifoldBin, "status", "--fresh", "--config", cfg), procEnviron(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("status --fresh: %v\n%s", err, b)
	}
	if strings.Contains(string(b), "manifold pid") || !strings.Contains(string(b), "alpha") {
		t.Errorf("status --fresh should start its own servers:\n%s", b)
	}

	sp.stop()
	b, _ = cmdEnv(commandContext(ctx, manifoldBin, "status", "--config", cfg), procEnviron(t)).CombinedOutput()
	if strings.Contains(string(b), "manifold pid "+strconv.Itoa(sp.pid())) {
		t.Errorf("status still shows the instance after it exited:\n%s", b)
	}
}
