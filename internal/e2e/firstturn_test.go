package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The first turn (issue 40, part 1): real clients run headless (Claude Code
// -p, Gemini CLI -p), each starting Manifold over stdio as its one MCP
// server, offer their model the tools Manifold lists right after the
// handshake, and start the turn. A scripted model on loopback (fakemodel_test.go)
// calls one tool of every Manifold server in that first turn: each must
// have been offered, run, and answered back to the model. With warm caches
// (the same home, a run before) and with empty ones.

// firstTurnBound bounds one headless client run (its start, the servers'
// start, one turn of four calls and the answer).
const firstTurnBound = 3 * time.Minute

// firstTurnSetup is Manifold's config for the first-turn tests and the
// calls the scripted model makes: four servers, three of them npm reference
// servers run by node directly (as the issue measured them), one a Go
// fixture.
type firstTurnSetup struct {
	cfg  string // proxy.toml
	note string // the file fs's call reads
}

// calls returns the calls of the run'th run, one per server, and per call
// a text its result must hold. The memory server keeps its graph across
// runs, so each run creates an entity of its own.
func (s firstTurnSetup) calls(run int) (plan []plannedCall, wants []string) {
	entity := fmt.Sprintf("FirstTurn%d", run)
	plan = []plannedCall{
		{tool: "fs__read_text_file", args: map[string]any{"path": s.note}},
		{tool: "memory__create_entities", args: map[string]any{"entities": []any{
			map[string]any{"name": entity, "entityType": "test", "observations": []string{"made in the first turn"}},
		}}},
		{tool: "everything__echo", args: map[string]any{"message": "first turn"}},
		{tool: "fx__echo", args: map[string]any{"message": "first turn"}},
	}
	return plan, []string{"first-turn note", entity, "Echo: first turn", "first turn"}
}

// nodeScript returns the JavaScript file an npm server's bin runs, so that
// the config runs it with `node` directly; it skips as nodeBin does.
func nodeScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(nodeBin(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newFirstTurnSetup(t *testing.T) firstTurnSetup {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(note, []byte("first-turn note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := func(name, script string, args []string, extra ...string) string {
		s := fmt.Sprintf("\n[servers.%s]\ncommand = \"node\"\nargs = %s\n", name, tomlStrs(append([]string{script}, args...)))
		for _, l := range extra {
			s += l + "\n"
		}
		return s
	}
	// first_list_wait is left at its default: what a first list holds is
	// what these tests are about.
	cfg := "# first_list_wait is left at its default\n" +
		node("fs", nodeScript(t, "mcp-server-filesystem"), []string{dir}) +
		node("memory", nodeScript(t, "mcp-server-memory"), nil,
			fmt.Sprintf("env = { MEMORY_FILE_PATH = %s }", tomlStr(filepath.Join(t.TempDir(), "memory.jsonl")))) +
		node("everything", nodeScript(t, "mcp-server-everything"), []string{"stdio"}) +
		fixture("fx", []string{"-tools", "echo"})
	return firstTurnSetup{cfg: cfg, note: note}
}

// writeRawConfig writes body as proxy.toml as it is (no first_list_wait
// added) and returns its path.
func writeRawConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// firstTurnClient is one headless client: how to configure it in home
// (with Manifold as its one MCP server) and how to run it for one prompt
// against the model at url.
type firstTurnClient struct {
	bin       string
	configure func(t *testing.T, home, work, script, cache string)
	args      func(home, url string) []string // the prompt run, against the model at url
	env       func(url string) []string
}

func claudeFirstTurn(t *testing.T) firstTurnClient {
	t.Helper()
	c := firstTurnClient{bin: clientBin(t, "claude")}
	c.configure = func(t *testing.T, home, work, script, cache string) {
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"manifold": map[string]any{
			"type": "stdio", "command": script, "env": map[string]string{"XDG_CACHE_HOME": cache},
		}}})
		if err := os.WriteFile(filepath.Join(home, "mcp.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.args = func(home, _ string) []string {
		return []string{"-p", "Call one tool of every server.", "--mcp-config", filepath.Join(home, "mcp.json"),
			"--strict-mcp-config", "--allowedTools", "mcp__manifold"}
	}
	c.env = func(url string) []string {
		// ENABLE_TOOL_SEARCH=false: the MCP tools go in the request's tools
		// (not behind a ToolSearch tool), where the scripted model finds
		// them.
		return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-e2e-dummy", "ENABLE_TOOL_SEARCH=false"}
	}
	return c
}

func geminiFirstTurn(t *testing.T) firstTurnClient {
	t.Helper()
	c := firstTurnClient{bin: clientBin(t, "gemini")}
	c.configure = func(t *testing.T, home, work, script, cache string) {
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
			t.Fatal(err)
		}
		trusted, _ := json.Marshal(map[string]string{work: "TRUST_FOLDER"})
		settings, _ := json.Marshal(map[string]any{
			"mcpServers": map[string]any{"manifold": map[string]any{
				"command": script, "env": map[string]string{"XDG_CACHE_HOME": cache}, "trust": true,
			}},
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		})
		for name, b := range map[string][]byte{"trustedFolders.json": trusted, "settings.json": settings} {
			if err := os.WriteFile(filepath.Join(home, ".gemini", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// -m: a model named on the command line skips Gemini CLI's model router
	// (a classifier call that wants a JSON answer).
	c.args = func(string, string) []string {
		return []string{"-m", "gemini-2.5-flash", "-p", "Call one tool of every server."}
	}
	c.env = func(url string) []string {
		return []string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=e2e-dummy", "GEMINI_TELEMETRY_ENABLED=false"}
	}
	return c
}

// runFirstTurn runs the client once with a new scripted model and returns
// the model (what it was asked) and the client's output.
func runFirstTurn(t *testing.T, c firstTurnClient, plan []plannedCall, home, work string) (*fakeModel, string) {
	t.Helper()
	model := newFakeModel(plan)
	url := serveLoopback(t, model)
	ctx, cancel := context.WithTimeout(t.Context(), firstTurnBound)
	defer cancel()
	args := c.args(home, url)
	cmd := commandContext(ctx, c.bin, args...)
	cmd.Dir = work
	cmd.Env = append(clientEnv(home), c.env(url)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(c.bin), strings.Join(args, " "), err, out)
	}
	return model, string(out)
}

// checkFirstTurn checks that the first request that offered tools offered
// every planned tool, and that every planned call's result came back with
// its text.
func checkFirstTurn(t *testing.T, plan []plannedCall, wants []string, model *fakeModel, out, in, answered string) {
	t.Helper()
	reqs := model.requests()
	first := -1
	for i, r := range reqs {
		if len(r.tools) > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatalf("the client sent the model %d requests, none offering tools; output:\n%s", len(reqs), out)
	}
	var missing, offeredNames []string
	for _, p := range plan {
		if n := offered(reqs[first].tools, p.tool); n == "" {
			missing = append(missing, p.tool)
		} else {
			offeredNames = append(offeredNames, n)
		}
	}
	if len(missing) > 0 {
		var mcpTools []string
		for _, n := range reqs[first].tools {
			if strings.Contains(n, "__") {
				mcpTools = append(mcpTools, n)
			}
		}
		t.Errorf("the model's first request offered %d of the %d servers' tools: missing %v (Manifold's tools offered: %v)",
			len(offeredNames), len(plan), missing, mcpTools)
		logFrames(t, in, answered)
	}
	// The results: every planned call, sent in the first turn, came back.
	results := map[string]string{}
	for _, r := range reqs[first:] {
		for id, text := range r.results {
			if tool, ok := model.sentCalls()[id]; ok {
				results[tool] = text
			}
		}
	}
	for i, p := range plan {
		got, ok := results[p.tool]
		switch {
		case !ok && slices.Contains(missing, p.tool):
			// Reported above: never offered, so never called.
		case !ok:
			t.Errorf("%s was called in the first turn but no result came back to the model", p.tool)
		case !strings.Contains(got, wants[i]):
			t.Errorf("%s's result back to the model = %q, want it to hold %q", p.tool, got, wants[i])
		}
	}
	if len(missing) == 0 && !strings.Contains(out, finalText) {
		t.Errorf("the client did not print the model's final answer %q:\n%s", finalText, out)
	}
}

// logFrames logs the tools/list exchanges between the client and Manifold:
// what the first list held, and when list_changed came.
func logFrames(t *testing.T, in, answered string) {
	t.Helper()
	var methods []string
	for _, f := range frames(t, in) {
		methods = append(methods, method(f))
	}
	var out []string
	for _, f := range frames(t, answered) {
		if m := method(f); m != "" {
			out = append(out, m)
			continue
		}
		var r struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if json.Unmarshal(f["result"], &r) == nil && r.Tools != nil {
			out = append(out, fmt.Sprintf("tools/list result: %d tools", len(r.Tools)))
		}
	}
	t.Logf("the client sent Manifold %v; Manifold sent %v", methods, out)
}

// warmByListing runs Manifold on cfg as the client CLIs run it (the client's
// home, the cache at cache) under a client that lists until the tools of
// every server named in servers are there (bounded), then quits: the
// servers that a client's short run left out are listed, and cached.
func warmByListing(t *testing.T, cfg, home, cache string, servers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, "serve", "--config", cfg)
	cmd.Env = append(clientEnv(home), "XDG_CACHE_HOME="+cache)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "warm", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("warming by listing: %v", err)
	}
	defer func() { _ = cs.Close() }() // Manifold ends once its servers' caches are written
	for {
		left := slices.Clone(servers)
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("warming by listing: %v", err)
			}
			left = slices.DeleteFunc(left, func(name string) bool { return strings.HasPrefix(tool.Name, name+"__") })
		}
		if len(left) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("warming by listing: the tools of %v were not listed within 2m", left)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// testFirstTurn runs one client against the setup, with warm caches (a run
// before in the same home and cache) or empty ones.
func testFirstTurn(t *testing.T, c firstTurnClient, warm bool) {
	setup := newFirstTurnSetup(t)
	cfg := writeRawConfig(t, setup.cfg)
	home, work, cache := t.TempDir(), t.TempDir(), t.TempDir()
	script, in, answered := recordingManifold(t, cfg)
	c.configure(t, home, work, script, cache)
	if warm {
		// Warm: every server has been listed before. A client that quits
		// right after its turn can end Manifold before a slow server (on a
		// loaded machine) was listed, and on a machine loaded enough every
		// such run is as short: after a run that left a server out, the
		// cache is completed by a client that lists until every server is
		// there (warmByListing), and the client's own run is repeated
		// (bounded) until the cache holds every server's catalog.
		for run := 0; ; run++ {
			plan, _ := setup.calls(run - 100) // entities apart from the measured run's
			runFirstTurn(t, c, plan, home, work)
			var cached []string
			_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					cached = append(cached, strings.TrimPrefix(p, cache+string(filepath.Separator)))
				}
				return nil
			})
			t.Logf("after warming run %d, %s holds %v", run+1, cache, cached)
			var missing []string
			for _, name := range []string{"fs", "memory", "everything", "fx"} {
				if !slices.ContainsFunc(cached, func(f string) bool { return strings.HasPrefix(f, "manifold/"+name+"-") }) {
					missing = append(missing, name)
				}
			}
			if len(missing) == 0 {
				break
			}
			if run == 2 {
				t.Fatalf("after %d warming runs, no catalog cached for %v", run+1, missing)
			}
			warmByListing(t, cfg, home, cache, missing)
		}
		for _, f := range []string{in, answered} {
			if err := os.Truncate(f, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	plan, wants := setup.calls(1)
	model, out := runFirstTurn(t, c, plan, home, work)
	checkFirstTurn(t, plan, wants, model, out, in, answered)
}

func TestClaudeCodeFirstTurnEmptyCaches(t *testing.T) {
	t.Parallel()
	testFirstTurn(t, claudeFirstTurn(t), false)
}

func TestClaudeCodeFirstTurnWarmCaches(t *testing.T) {
	t.Parallel()
	testFirstTurn(t, claudeFirstTurn(t), true)
}

func TestGeminiCLIFirstTurnEmptyCaches(t *testing.T) {
	t.Parallel()
	testFirstTurn(t, geminiFirstTurn(t), false)
}

func TestGeminiCLIFirstTurnWarmCaches(t *testing.T) {
	t.Parallel()
	testFirstTurn(t, geminiFirstTurn(t), true)
}
