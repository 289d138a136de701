package e2e

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestFaultyServersLeftOut(t *testing.T) {
	t.Parallel()
	cfg := `first_list_timeout = "30s"` + "\n" +
		fixture("alpha", nil) +
		fixture("broken", []string{"-mode", "exit"}) +
		fixture("stuck", []string{"-mode", "hang"}, `startup_timeout = "2s"`) +
		fixture("noise", []string{"-mode", "noise"}) +
		"\n[servers.missing]\ncommand = \"/nonexistent/binary\"\n"
	sp := startStdio(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	tools := listTools(ctx, t, sp.cs)
	for _, n := range []string{"alpha__echo", "noise__echo"} {
		if tools[n] == nil {
			t.Errorf("%s not listed; listed: %v", n, toolNames(tools))
		}
	}
	for _, n := range toolNames(tools) {
		if !strings.HasPrefix(n, "alpha__") && !strings.HasPrefix(n, "noise__") {
			t.Errorf("tool %q listed; only alpha's and noise's should be", n)
		}
	}
	for _, server := range []string{"alpha", "noise"} {
		if got, want := text(call(ctx, t, sp.cs, server+"__echo", map[string]any{"message": "still here"})), server+": still here"; got != want {
			t.Errorf("%s__echo = %q, want %q", server, got, want)
		}
	}

	stderr := sp.stderr.String()
	if !strings.Contains(stderr, "fatal: bad config for broken") {
		t.Errorf("the exit server's stderr (%q) is not in the proxy's stderr", "fatal: bad config for broken")
	}
	for _, server := range []string{"broken", "stuck", "missing"} {
		if !hasLine(stderr, "upstream="+server) {
			t.Errorf("no stderr line tagged upstream=%s says why it is left out", server)
		}
	}
	// The noise goes to stderr, tagged with its server; it never reaches
	// stdout (the client would have failed to decode it).
	if !hasLine(stderr, "upstream=noise", "fixture noise before frame") {
		t.Errorf("no stderr line tagged upstream=noise holds the noise it printed on stdout")
	}
}

// hasLine reports whether one line of s contains every one of subs.
func hasLine(s string, subs ...string) bool {
	for line := range strings.Lines(s) {
		all := true
		for _, sub := range subs {
			if !strings.Contains(line, sub) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func TestRequiredServerFailureIsFatal(t *testing.T) {
	t.Parallel()
	cfg := fixture("alpha", nil) + fixture("broken", []string{"-mode", "exit"}, "required = true")
	path := writeConfig(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), exitBound)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, "serve", "--config", path)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	// stdin stays open: manifold must exit because of the server, not EOF.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// In stdio mode the upstreams are initialized when the client is (they are
	// offered the client's capabilities), so initialize like a client does.
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	treec := make(chan []procInfo, 1)
	go func() { treec <- watchTree(cmd.Process.Pid, exited) }()
	err = cmd.Wait()
	close(exited)
	tree := <-treec
	if ctx.Err() != nil {
		t.Fatalf("manifold serve did not exit within %s with a required server failing\nstderr:\n%s", exitBound, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() <= 0 {
		t.Errorf("manifold serve: %v, want a non-zero exit status", err)
	}
	s := stderr.String()
	if !strings.Contains(s, `"broken"`) || !strings.Contains(s, "required") {
		t.Errorf("stderr does not name the required server \"broken\":\n%s", s)
	}
	if left := waitGone(tree, goneBound); len(left) > 0 {
		t.Errorf("processes left after manifold exited:\n%s", describe(left))
		killAll(left)
	}
}

func TestCrashedServer(t *testing.T) {
	t.Parallel()
	sp := startStdio(t, writeConfig(t, twoFixtures()))
	ctx := testCtx(t)
	listTools(ctx, t, sp.cs) // both up
	pidBefore := text(call(ctx, t, sp.cs, "alpha__pid", nil))

	res := call(ctx, t, sp.cs, "alpha__crash", nil)
	if !res.IsError || !strings.Contains(text(res), `"alpha"`) || !strings.Contains(text(res), "exited") {
		t.Errorf("alpha__crash = isError %v, %q; want isError true and a text saying upstream \"alpha\" exited", res.IsError, text(res))
	}
	// The other server answers throughout; alpha is restarted and its tools
	// work again. Until then a call says it is restarting and when to retry.
	deadline := time.Now().Add(20 * time.Second)
	sawRestarting := false
	for {
		if got := text(call(ctx, t, sp.cs, "beta__echo", map[string]any{"message": "x"})); got != "beta: x" {
			t.Errorf("beta__echo after alpha crashed = %q, want %q", got, "beta: x")
		}
		res = call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "x"})
		if !res.IsError {
			break
		}
		if !strings.Contains(text(res), `"alpha"`) || !strings.Contains(text(res), "restart") {
			t.Fatalf("alpha__echo while alpha is down = %q; want a text saying upstream \"alpha\" is restarting", text(res))
		}
		sawRestarting = true
		if time.Now().After(deadline) {
			t.Fatalf("alpha not back within 20s; last answer: %q", text(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := text(res); got != "alpha: x" {
		t.Errorf("alpha__echo after the restart = %q, want %q", got, "alpha: x")
	}
	if pidAfter := text(call(ctx, t, sp.cs, "alpha__pid", nil)); pidAfter == pidBefore {
		t.Errorf("alpha's pid is %s before and after the crash; want a new process", pidAfter)
	}
	t.Logf("saw a restarting answer before alpha came back: %v", sawRestarting)
}
