package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Two clients that list once and quit (issue 40): the MCP Inspector's CLI
// (`npx @modelcontextprotocol/inspector --cli <command> --method tools/list`,
// what server authors are told to test with) and mcporter (`mcporter list
// <server> --json`), both pinned in clients/package.json. Each starts
// Manifold over stdio as its users do: `manifold serve` with the config where
// serve finds it (~/.config/manifold/proxy.toml) and its caches in ~/.cache,
// three npm reference servers run by node. Its first and only list must hold
// the whole catalog, with empty caches and with warm ones.

// listOnceClient is a client CLI that starts `manifold serve` in home (its
// HOME) from work (its folder), lists the tools once and exits; list returns
// the names it listed.
type listOnceClient struct {
	name string
	bin  string
	list func(t *testing.T, c listOnceClient, home, work string) []string
}

// runListClient runs a client CLI and returns its standard output, failing
// the test (with both outputs) on a non-zero exit.
func runListClient(t *testing.T, work string, env []string, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Minute)
	defer cancel()
	cmd := commandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = work, env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %v", filepath.Base(bin), strings.Join(args, " "), time.Since(began).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// inspectorCLI is the MCP Inspector in its CLI mode, as its README runs it:
// the server's command line, then --method tools/list. It prints the
// tools/list result as JSON. The Inspector starts the server with the MCP
// SDK's default environment (HOME, PATH, …), which is why the config and
// caches are found through HOME.
func inspectorCLI(t *testing.T) listOnceClient {
	return listOnceClient{name: "inspector", bin: clientBin(t, "mcp-inspector"), list: func(t *testing.T, c listOnceClient, home, work string) []string {
		out := runListClient(t, work, clientEnv(home), c.bin, "--cli", manifoldBin, "serve", "--method", "tools/list")
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("inspector: output is not a tools/list result (%v):\n%s", err, out)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}}
}

// mcporter is `mcporter list manifold --json` with Manifold in mcporter's
// project config (config/mcporter.json in the folder it runs in).
func mcporter(t *testing.T) listOnceClient {
	return listOnceClient{name: "mcporter", bin: clientBin(t, "mcporter"), list: func(t *testing.T, c listOnceClient, home, work string) []string {
		conf, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"manifold": map[string]any{
			"command": manifoldBin, "args": []string{"serve"},
		}}})
		if err := os.MkdirAll(filepath.Join(work, "config"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "config", "mcporter.json"), conf, 0o644); err != nil {
			t.Fatal(err)
		}
		out := runListClient(t, work, clientEnv(home), c.bin, "list", "manifold", "--json")
		var res struct {
			Status string `json:"status"`
			Tools  []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Status != "ok" {
			t.Fatalf("mcporter: status %q (%v), want ok:\n%s", res.Status, err, out)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}}
}

// npmReferenceConfig returns a proxy.toml with server-filesystem (on a
// folder of its own), server-memory and server-everything, each run by node
// from node_modules; it skips without them. first_list_wait is the default.
func npmReferenceConfig(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, script string, args []string, extra ...string) string {
		s := fmt.Sprintf("\n[servers.%s]\ncommand = \"node\"\nargs = %s\n", name, tomlStrs(append([]string{script}, args...)))
		for _, l := range extra {
			s += l + "\n"
		}
		return s
	}
	return node("fs", nodeScript(t, "mcp-server-filesystem"), []string{dir}) +
		node("memory", nodeScript(t, "mcp-server-memory"), nil,
			fmt.Sprintf("env = { MEMORY_FILE_PATH = %s }", tomlStr(filepath.Join(dir, "memory.jsonl")))) +
		node("everything", nodeScript(t, "mcp-server-everything"), []string{"stdio"})
}

// wholeCatalog returns the tool names a go-sdk client lists from Manifold
// with cfg once every server is up (caches of its own, left behind): once
// each has logged "server up" and the list has tools of each (the line can
// come just before the catalog holds them).
func wholeCatalog(t *testing.T, cfg string, servers []string) []string {
	t.Helper()
	sp := startStdioEnv(t, cfg, e2eClient(), "XDG_CACHE_HOME="+t.TempDir())
	awaitStderr(t, sp.proc, len(servers), "server up")
	ctx := testCtx(t)
	var all []string
	waitFor(t, awaitBound, "a tool of every server listed", func() bool {
		all = toolNames(listTools(ctx, t, sp.cs))
		for _, server := range servers {
			if !slices.ContainsFunc(all, func(n string) bool { return strings.HasPrefix(n, server+"__") }) {
				return false
			}
		}
		return true
	})
	sp.stop()
	return all
}

// testListOnce runs c in one home, with empty caches and then warm ones,
// and checks that each run's one list is the whole catalog.
func testListOnce(t *testing.T, c listOnceClient) {
	t.Parallel()
	body := npmReferenceConfig(t)
	home, work := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, ".config", "manifold", "proxy.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	all := wholeCatalog(t, cfg, []string{"fs", "memory", "everything"})
	t.Logf("a go-sdk client lists %d tools once every server is up", len(all))
	cache := filepath.Join(home, ".cache")
	// The third run shows that the warm list came from the caches: its
	// first list waits 1 ms for servers not known (the cache key is the
	// servers' command, arguments, environment and executable, not this).
	for _, run := range []string{"empty caches", "warm caches", "warm caches, first_list_wait = 1ms"} {
		if run != "empty caches" {
			for _, server := range []string{"fs", "memory", "everything"} {
				if len(cacheFiles(t, cache, server)) == 0 {
					t.Fatalf("before the run with %s, %s holds no catalog of %s", run, cache, server)
				}
			}
		}
		if strings.Contains(run, "1ms") {
			if err := os.WriteFile(cfg, []byte("first_list_wait = \"1ms\"\n"+body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got := c.list(t, c, home, work)
		slices.Sort(got)
		t.Logf("%s, %s: %d tools on its one list", c.name, run, len(got))
		if !slices.Equal(got, all) {
			t.Errorf("%s, %s: listed %d tools %v, want the whole catalog, %d tools %v", c.name, run, len(got), got, len(all), all)
		}
	}
	// The client quit while the servers started, from the era cache: that
	// says nothing of their era, which stays cached (it was dropped, so
	// that every other run probed them again).
	var eras map[string]json.RawMessage
	b, err := os.ReadFile(filepath.Join(cache, "manifold", "eras.json"))
	if err == nil {
		err = json.Unmarshal(b, &eras)
	}
	if err != nil || len(eras) != 3 {
		t.Errorf("after the runs, the era cache holds %d servers (%v): %s; want the 3", len(eras), err, b)
	}
}

func TestInspectorCLIListsAll(t *testing.T) { testListOnce(t, inspectorCLI(t)) }

func TestMcporterListsAll(t *testing.T) { testListOnce(t, mcporter(t)) }
