package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/manifold-mcp/manifold/plugins"
)

// Binaries the tests start, built once by TestMain into a temporary folder.
var (
	binDir     string
	testPlugin string // plugins/internal/testplugin
	ibanPlugin string // plugins/examples/iban
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "manifold-plugins-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// The status files of the manifolds the tests start go under this run's
	// folder, not the user's ~/.cache; go's own build cache, whose default
	// is under XDG_CACHE_HOME too, stays where it was.
	if os.Getenv("GOCACHE") == "" {
		if cache, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(cache, "go-build"))
		}
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	testPlugin = filepath.Join(dir, "testplugin")
	ibanPlugin = filepath.Join(dir, "iban")
	for bin, pkg := range map[string]string{
		testPlugin: "./internal/testplugin",
		ibanPlugin: "./examples/iban",
	} {
		if err := build(bin, pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// build runs go build -o bin pkg.
func build(bin, pkg string) error {
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return nil
}

var (
	manifoldOnce sync.Once
	manifoldBin  string
	manifoldErr  error
)

// manifoldBinary builds cmd/manifold once, for the end-to-end tests.
func manifoldBinary(t *testing.T) string {
	t.Helper()
	manifoldOnce.Do(func() {
		manifoldBin = filepath.Join(binDir, "manifold")
		manifoldErr = build(manifoldBin, "../cmd/manifold")
	})
	if manifoldErr != nil {
		t.Fatal(manifoldErr)
	}
	return manifoldBin
}

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogger returns a debug logger writing to a new buffer.
func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slogTo(b), b
}

// slogTo returns a debug logger writing to b.
func slogTo(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// connect dials the plugin through h and connects an MCP client to it. The
// session is closed when the test ends.
func connect(t *testing.T, h *plugins.Host) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tr, err := h.Dial(ctx)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// testHost returns a Host for the test plugin with env and a logger.
func testHost(name string, env ...string) (*plugins.Host, *logBuffer) {
	log, buf := newLogger()
	return plugins.NewHost(plugins.Options{Name: name, Command: testPlugin, Env: env, Logger: log}), buf
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// text joins the text contents of a result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// pidOf asks the test plugin for its pid.
func pidOf(t *testing.T, cs *mcp.ClientSession, tool string) int {
	t.Helper()
	res := call(t, cs, tool, map[string]any{})
	var out struct {
		PID int `json:"pid"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.PID == 0 {
		t.Fatalf("%s returned %s: no pid", tool, b)
	}
	return out.PID
}

// waitFile waits, bounded, for a file to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for range 500 {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within 10s", path)
}
