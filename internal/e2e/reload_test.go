package e2e

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReload edits proxy.toml while a client is connected: an added server
// starts, a removed one stops, a changed one restarts, an unchanged one keeps
// its process, and the client is told the list changed. An invalid edit is
// rejected and the running config keeps serving.
func TestReload(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, fixture("alpha", nil)+fixture("beta", nil)+fixture("gamma", nil))
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	sp := startStdioClient(t, path, client, protocolVersion)
	ctx := testCtx(t)
	listTools(ctx, t, sp.cs)
	alphaPid := text(call(ctx, t, sp.cs, "alpha__pid", nil))
	betaPid := text(call(ctx, t, sp.cs, "beta__pid", nil))
	for len(changed) > 0 { // drain the notifications of the initial start
		<-changed
	}

	// alpha changes (a tool subset), beta stays, gamma goes, delta comes.
	next := fixture("alpha", []string{"-tools", "echo,pid"}) + fixture("beta", nil) + fixture("delta", nil)
	if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the reloaded catalog", func() bool {
		names := toolNames(listTools(ctx, t, sp.cs))
		return slices.Contains(names, "delta__echo") && !slices.Contains(names, "gamma__echo") && !slices.Contains(names, "alpha__whoami")
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("no notifications/tools/list_changed after the reload")
	}
	if got := text(call(ctx, t, sp.cs, "beta__pid", nil)); got != betaPid {
		t.Errorf("beta's pid changed from %s to %s across a reload that did not change it", betaPid, got)
	}
	if got := text(call(ctx, t, sp.cs, "alpha__pid", nil)); got == alphaPid {
		t.Errorf("alpha's pid %s survived a reload that changed its config", got)
	}
	if got := text(call(ctx, t, sp.cs, "delta__echo", map[string]any{"message": "hi"})); got != "delta: hi" {
		t.Errorf("delta__echo = %q, want %q", got, "delta: hi")
	}

	// An invalid config is rejected; the running one keeps serving.
	if err := os.WriteFile(path, []byte(next+"\n[servers.broken]\ncomand = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the rejection in the log", func() bool {
		return strings.Contains(sp.stderr.String(), "comand")
	})
	if got := text(call(ctx, t, sp.cs, "beta__echo", map[string]any{"message": "still"})); got != "beta: still" {
		t.Errorf("beta__echo after an invalid reload = %q, want %q", got, "beta: still")
	}
	if names := toolNames(listTools(ctx, t, sp.cs)); !slices.Contains(names, "delta__echo") {
		t.Errorf("delta__echo gone after an invalid reload: %v", names)
	}
}

// waitFor polls cond every 100ms until it holds or bound passes.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
