//go:build linux

package plugins_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveManifold writes a proxy.toml with the iban and test plugins (by
// relative paths), runs "manifold serve" on it and connects a client to its
// stdio. It returns the session, the manifold command and its stderr.
func serveManifold(t *testing.T) (*mcp.ClientSession, *exec.Cmd, *logBuffer) {
	t.Helper()
	bin := manifoldBinary(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"iban": ibanPlugin, "testplugin": testPlugin} {
		if err := os.Symlink(target, filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "proxy.toml")
	// The first list waits for the plugins (a loaded machine starts them
	// in more than the default first_list_wait): this test is about what
	// they serve, not about a first list that comes before them.
	doc := `first_list_wait = "30s"

[plugins.iban]
path = "bin/iban"

[plugins.test]
path = "bin/testplugin"
call_timeout = "30s"
`
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &logBuffer{}
	cmd := exec.Command(bin, "serve", "--config", config, "--log-level", "debug")
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to manifold serve: %v\nstderr:\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("manifold stderr:\n%s", stderr)
		}
	})
	return cs, cmd, stderr
}

func TestE2EServe(t *testing.T) {
	cs, _, stderr := serveManifold(t)

	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"iban__iban_check", "test__stdin", "test__noise", "test__pid"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}

	checkIBAN := func() {
		t.Helper()
		got := call(t, cs, "iban__iban_check", map[string]any{"ibans": "DE89 3704 0044 0532 0130 00, GB82 WEST 1234 5698 7654 32\nXX12 3456"})
		var out struct{ Valid, Invalid int }
		b, _ := json.Marshal(got.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || out.Valid != 2 || out.Invalid != 1 || got.IsError {
			t.Errorf("iban__iban_check = %s, %s (isError %v); want 2 valid, 1 invalid", b, text(got), got.IsError)
		}
		if txt := text(got); !strings.Contains(txt, `XX12 3456: invalid: unknown country "XX"`) {
			t.Errorf("iban__iban_check text lacks the reason for XX12 3456:\n%s", txt)
		}
	}
	checkIBAN()

	// In stdio mode the proxy's stdin is the client's MCP stream: the plugin
	// must not see it, and the stream must go on unharmed.
	if got := text(call(t, cs, "test__stdin", map[string]any{})); got != "eof after 0 bytes" {
		t.Errorf("plugin read the proxy's stdin: %q, want %q", got, "eof after 0 bytes")
	}
	checkIBAN()

	// What a plugin prints goes to the proxy's log, tagged, never to its stdout.
	if got := text(call(t, cs, "test__noise", map[string]any{})); got != "made noise" {
		t.Errorf("test__noise = %q", got)
	}
	checkIBAN()
	pid := pidOf(t, cs, "test__pid")

	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	waitGone(t, pid, "plugin of a manifold that exited")
	log := stderr.String()
	for _, want := range []string{`plugin=test`, `line="noise on stdout"`, `line="noise on stderr"`, `msg="noise in the log"`} {
		if !strings.Contains(log, want) {
			t.Errorf("manifold's stderr lacks %q", want)
		}
	}
}

// TestE2EPluginDiesWithManifold kills manifold with SIGKILL, which it cannot
// handle: the kernel must take the plugin down with it.
func TestE2EPluginDiesWithManifold(t *testing.T) {
	cs, cmd, _ := serveManifold(t)
	pid := pidOf(t, cs, "test__pid")
	if !alive(pid) {
		t.Fatalf("plugin %d not alive", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "plugin of a manifold killed by SIGKILL")
}
