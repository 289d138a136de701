package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The first turn of Codex (`codex exec`) and opencode (`opencode run`),
// as firstturn_test.go's for Claude Code and Gemini CLI. Both clients reach
// for hosts beyond this machine when they start (Codex looks up
// api.github.com and chatgpt.com; opencode looks up registry.npmjs.org and
// connects to it), whatever their config says, so each test runs in a
// network namespace of its own that holds only a loopback interface: the
// test binary runs itself again there (CLONE_NEWNET, so root, as in CI),
// and the whole scenario (scripted model, client, the manifold it starts,
// the servers) runs inside it, where nothing but 127.0.0.1 can be reached.

// netnsEnv marks the test binary that runs inside the namespace.
const netnsEnv = "MANIFOLD_E2E_NETNS"

// inLoopbackNetns reports whether the calling test is the one inside the
// namespace (then it runs the scenario). Outside, it runs the test binary
// again inside a new network namespace for this test only, checks that the
// test passed there (not skipped), and returns false. Without the right to
// make a namespace it skips, unless CI is set.
func inLoopbackNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) != "" {
		loopbackOnly(t)
		return true
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*firstTurnBound+time.Minute)
	defer cancel()
	cmd := commandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	cmd.Env = append(os.Environ(), netnsEnv+"=1",
		childBinsEnv+"="+manifoldBin+string(os.PathListSeparator)+fixtureBin)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot make a network namespace (CI is set; run as root): %v", err)
		}
		t.Skipf("cannot make a network namespace (needs root): %v", err)
	}
	t.Logf("the test inside a network namespace with only loopback:\n%s", out)
	if err != nil {
		t.Fatalf("the test inside the namespace: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the test inside the namespace did not pass")
	}
	return false
}

// loopbackOnly brings the namespace's loopback interface up and fails the
// test unless it is the only interface there.
func loopbackOnly(t *testing.T) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	for _, req := range []uintptr{syscall.SIOCGIFFLAGS, syscall.SIOCSIFFLAGS} {
		if req == syscall.SIOCSIFFLAGS {
			ifr.flags |= syscall.IFF_UP
		}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			t.Fatalf("bringing lo up: ioctl %#x: %v", req, e)
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			t.Fatalf("the network namespace has an interface %s besides loopback", i.Name)
		}
	}
	// 192.0.2.1 (TEST-NET-1, never routed) stands for any address off
	// loopback: with no route there, a connection fails at once.
	if c, err := net.DialTimeout("tcp", "192.0.2.1:9", time.Second); err == nil {
		c.Close()
		t.Fatal("the network namespace reaches 192.0.2.1")
	} else if !errors.Is(err, syscall.ENETUNREACH) {
		t.Fatalf("a connection to 192.0.2.1 from the namespace: %v, want %v", err, syscall.ENETUNREACH)
	}
}

// offLoopbackChecks are the checks a test makes before it runs itself in
// a namespace: the client and the servers are there (else skip as
// clientBin and nodeBin do).
func offLoopbackChecks(t *testing.T, client string) {
	t.Helper()
	clientBin(t, client)
	for _, s := range []string{"mcp-server-filesystem", "mcp-server-memory", "mcp-server-everything"} {
		nodeBin(t, s)
	}
}

// codexFirstTurn is Codex 0.171 `exec`. The model is one Codex has no
// metadata for: with a known one (gpt-5.5) Codex puts MCP tools behind its
// tool_search tool and only names their server in the prompt (the
// `[features] tool_search = false` setting does not change that); with
// the fallback metadata it offers each server's tools in the request, as a
// namespace "mcp__manifold" (fakemodel_openai_test.go).
func codexFirstTurn(t *testing.T) firstTurnClient {
	t.Helper()
	c := firstTurnClient{bin: clientBin(t, "codex")}
	c.configure = func(t *testing.T, home, work, script, cache string) {
		dir := filepath.Join(home, ".codex")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf(`model = "e2e-fake-model"
model_provider = "fake"
approval_policy = "never"
check_for_update_on_startup = false
[analytics]
enabled = false
[feedback]
enabled = false
[model_providers.fake]
name = "fake"
wire_api = "responses"
env_key = "FAKE_API_KEY"
[mcp_servers.manifold]
command = %s
env = { XDG_CACHE_HOME = %s }
default_tools_approval_mode = "approve"
required = true
`, tomlStr(script), tomlStr(cache))
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.args = func(_, url string) []string {
		return []string{"exec", "--skip-git-repo-check", "-c", "model_providers.fake.base_url=" + tomlStr(url+"/v1"),
			"Call one tool of every server."}
	}
	c.env = func(string) []string { return []string{"FAKE_API_KEY=e2e-dummy"} }
	return c
}

// opencodeFirstTurn is opencode 1.18 `run`, with a provider of the
// OpenAI-compatible kind (bundled in opencode) pointed at the scripted
// model; it names Manifold's tools manifold_<tool>.
func opencodeFirstTurn(t *testing.T) firstTurnClient {
	t.Helper()
	c := firstTurnClient{bin: clientBin(t, "opencode")}
	c.configure = func(t *testing.T, home, work, script, cache string) {
		dir := filepath.Join(home, ".config", "opencode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{
			"model": "fake/m", "autoupdate": false, "share": "disabled",
			"provider": map[string]any{"fake": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "fake",
				"options": map[string]any{"baseURL": "{env:FAKE_MODEL_URL}/v1", "apiKey": "e2e-dummy"},
				"models":  map[string]any{"m": map[string]any{"name": "m", "tool_call": true}},
			}},
			"mcp": map[string]any{"manifold": map[string]any{
				"type": "local", "command": []string{script}, "enabled": true,
				"environment": map[string]string{"XDG_CACHE_HOME": cache},
			}},
		})
		if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.args = func(string, string) []string { return []string{"run", "Call one tool of every server."} }
	c.env = func(url string) []string {
		return []string{"FAKE_MODEL_URL=" + url, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1",
			"OPENCODE_DISABLE_CLAUDE_CODE=1", "OPENCODE_DISABLE_EXTERNAL_SKILLS=1"}
	}
	return c
}

// Codex with warm caches only: Codex waits for an MCP server about 1 s
// before its first turn and then starts it without the server's tools
// (measured: a server that answers tools/list 0.5 s after its start is
// offered, one that answers after 1.2 s is not), so with empty caches only
// what starts within about half a second could be offered, which node
// servers under a -race manifold do not. The config marks Manifold
// required (Codex then waits for its first tools/list, up to 30 s, and
// still lists once): what is tested is that this one list holds every
// server's tools, not how fast a -race manifold starts on a loaded
// machine, which could miss the 1 s window a user's plain manifold meets.
func TestCodexFirstTurnWarmCaches(t *testing.T) {
	t.Parallel()
	offLoopbackChecks(t, "codex")
	if inLoopbackNetns(t) {
		testFirstTurn(t, codexFirstTurn(t), true)
	}
}

func TestOpencodeFirstTurnEmptyCaches(t *testing.T) {
	t.Parallel()
	offLoopbackChecks(t, "opencode")
	if inLoopbackNetns(t) {
		testFirstTurn(t, opencodeFirstTurn(t), false)
	}
}

func TestOpencodeFirstTurnWarmCaches(t *testing.T) {
	t.Parallel()
	offLoopbackChecks(t, "opencode")
	if inLoopbackNetns(t) {
		testFirstTurn(t, opencodeFirstTurn(t), true)
	}
}
