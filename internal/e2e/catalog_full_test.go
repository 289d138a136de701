package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Full mode: the lists are byte-stable (for the clients' prompt caches) and
// Manifold's instructions are a summary of its servers under 2 KB.

// fullLists are the lists whose bytes must not change while nothing changed.
var fullLists = []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}

// fullClient speaks raw JSON-RPC to one manifold, over stdio or HTTP, in the
// initialize era or 2026-07-28, and returns results as the bytes that came
// over the wire.
type fullClient struct {
	t      *testing.T
	modern bool
	raw    *rawStdio  // stdio
	hp     *httpProxy // HTTP
	sid    string     // HTTP session of the initialize era
	id     int
	// instructions of the initialize result (initialize era).
	initInstructions string
}

func (c *fullClient) body(method, params string) (int, string) {
	c.id++
	if c.modern {
		return c.id, modernBody(c.id, method, params)
	}
	if params == "" {
		return c.id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, c.id, method)
	}
	return c.id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, c.id, method, params)
}

// request sends method and returns the raw result; an error answer fails
// the test.
func (c *fullClient) request(method, params string) json.RawMessage {
	c.t.Helper()
	id, body := c.body(method, params)
	var m rawMessage
	if c.raw != nil {
		c.raw.send(c.t, body)
		m = c.raw.await(c.t, fmt.Sprint(id))
	} else {
		m = c.post(method, body, id)
	}
	if len(m.Error) > 0 || len(m.Result) == 0 {
		c.t.Fatalf("%s: error %s", method, m.Error)
	}
	return m.Result
}

// post sends body over HTTP and returns the answer with the given id, from
// a JSON body or an SSE stream.
func (c *fullClient) post(method, body string, id int) rawMessage {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.hp.endpoint(), strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.modern {
		req.Header.Set("Mcp-Protocol-Version", modernVersion)
		req.Header.Set("Mcp-Method", method)
	} else if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && c.sid == "" && !c.modern {
		c.sid = sid
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		c.t.Fatalf("POST %s: read: %v", method, err)
	}
	frames := [][]byte{data}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		frames = nil
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				frames = append(frames, bytes.Clone(rest))
			}
		}
	}
	for _, f := range frames {
		var m rawMessage
		if json.Unmarshal(f, &m) == nil && string(m.ID) == fmt.Sprint(id) {
			return m
		}
	}
	c.t.Fatalf("POST %s: status %d, no answer to id %d in %.500s", method, resp.StatusCode, id, data)
	return rawMessage{}
}

// start runs manifold on cfg and, in the initialize era, initializes.
func startFull(t *testing.T, cfg string, overHTTP, modern bool) *fullClient {
	t.Helper()
	c := &fullClient{t: t, modern: modern}
	if overHTTP {
		c.hp = startHTTP(t, cfg)
	} else {
		c.raw = startRaw(t, cfg)
	}
	if !modern {
		c.initialize()
	}
	return c
}

// initialize opens a session of the initialize era (a new one over HTTP)
// and keeps its instructions.
func (c *fullClient) initialize() {
	c.t.Helper()
	c.sid = ""
	res := c.request("initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
	var ir struct {
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(res, &ir); err != nil {
		c.t.Fatalf("initialize result %s: %v", res, err)
	}
	c.initInstructions = ir.Instructions
	if c.raw != nil {
		c.raw.send(c.t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	} else {
		c.postNotification(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
}

func (c *fullClient) postNotification(body string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodPost, c.hp.endpoint(), strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
}

// instructions returns Manifold's instructions as this client gets them:
// a 2026-07-28 client from server/discover (each call), one of the
// initialize era from its initialize (a new session over HTTP; over stdio
// the one session's).
func (c *fullClient) instructions(fresh bool) string {
	c.t.Helper()
	if c.modern {
		var dr struct {
			Instructions string `json:"instructions"`
		}
		res := c.request("server/discover", "")
		if err := json.Unmarshal(res, &dr); err != nil {
			c.t.Fatalf("discover result %s: %v", res, err)
		}
		return dr.Instructions
	}
	if fresh && c.hp != nil {
		c.initialize()
	}
	return c.initInstructions
}

// lists returns the raw results of every list.
func (c *fullClient) lists() map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, m := range fullLists {
		out[m] = string(c.request(m, ""))
	}
	return out
}

func (c *fullClient) proc() *proc {
	if c.raw != nil {
		return c.raw.proc
	}
	return c.hp.proc
}

// stop ends manifold, as the test's cleanup would.
func (c *fullClient) stop() {
	if c.raw != nil {
		c.raw.stop(c.raw.end)
		return
	}
	c.hp.stop(func() {
		_ = syscall.Kill(c.hp.pid(), syscall.SIGTERM)
		<-c.hp.exited
	})
}

// reloadUnchanged rewrites the config with the same bytes, sends SIGHUP and
// waits for the reload to be logged.
func (c *fullClient) reloadUnchanged(path string) {
	c.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatal(err)
	}
	before := strings.Count(c.proc().stderr.String(), "config reloaded")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := syscall.Kill(c.proc().pid(), syscall.SIGHUP); err != nil {
		c.t.Fatal(err)
	}
	waitFor(c.t, 20*time.Second, "the reload in the log", func() bool {
		return strings.Count(c.proc().stderr.String(), "config reloaded") > before
	})
}

// fullConfig: servers that list in a new random order on every list (and
// write their schemas' members in a random order), one of them 2026-07-28,
// one lazy, one whose every tool is hidden.
func fullConfig() string {
	return fixture("alpha", []string{"-shuffle", "-extra", "renotify"}, `description = "Alpha's tools, for the byte-stability test."`) +
		fixture("beta", []string{"-shuffle", "-era", "dual", "-instructions", "Beta serves echo and friends. It says more here."}, `probe_timeout = "30s"`) +
		fixture("gamma", []string{"-shuffle", "-instructions", "# Gamma\n\nGamma starts on demand! The rest is detail."}, `start = "lazy"`) +
		fixture("hidden", nil, `tools.deny = ["*"]`)
}

// TestFullListsByteStable: tools, prompts, resources and templates lists are
// the same bytes across calls, across an upstream's re-listing in another
// order, across a reload that changes nothing and across a restart of
// manifold (where the lazy server is listed from its cache, not started),
// for a client of the initialize era and a 2026-07-28 one, over stdio and
// HTTP; so are Manifold's instructions, a summary of its servers. Lists are
// compared once every server's first start has ended: before, a 2026-07-28
// list says so with a shorter ttlMs.
func TestFullListsByteStable(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		for _, modern := range []bool{false, true} {
			name := tr.name + "/legacy"
			if modern {
				name = tr.name + "/2026-07-28"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				path := writeConfig(t, fullConfig())

				c := startFull(t, path, tr.http, modern)
				first := c.lists()
				ins := c.instructions(false)
				checkSummary(t, ins)
				if !strings.Contains(first["tools/list"], `"gamma__echo"`) || !strings.Contains(first["tools/list"], `"beta__echo"`) {
					t.Fatalf("tools/list lacks a server's tools: %.400s", first["tools/list"])
				}
				if strings.Contains(first["tools/list"], `"hidden__`) {
					t.Errorf("tools/list shows a hidden tool: %.400s", first["tools/list"])
				}
				compareLists(t, "a second call", first, c.lists())

				if !modern && !tr.http {
					// alpha lists again (in another order) after its
					// list_changed; the list the client gets is the same.
					seen := c.raw.seen()
					c.request("tools/call", `"name":"alpha__renotify","arguments":{"count":3,"delay_ms":20}`)
					awaitNotification(t, c.raw, seen, "notifications/tools/list_changed")
					compareLists(t, "alpha's re-listing", first, c.lists())
				}

				c.reloadUnchanged(path)
				compareLists(t, "a reload that changed nothing", first, c.lists())
				if got := c.instructions(true); got != ins {
					t.Errorf("instructions after a reload that changed nothing:\n%s\nwant\n%s", got, ins)
				}
				c.stop()

				// The restart: gamma is advertised from its cache and
				// described from it, without running.
				c = startFull(t, path, tr.http, modern)
				compareLists(t, "a restart", first, c.lists())
				if got := c.instructions(false); got != ins {
					t.Errorf("instructions after a restart:\n%s\nwant\n%s", got, ins)
				}
				for _, p := range descendants(c.proc().pid()) {
					if strings.Contains(p.cmdline, "gamma") {
						t.Errorf("lazy gamma runs after the restart before any call: %s", p.cmdline)
					}
				}
			})
		}
	}
}

// checkSummary: the instructions are the summary, one line per visible
// server in config order, under 2 KB.
func checkSummary(t *testing.T, ins string) {
	t.Helper()
	want := []string{
		"- alpha: Alpha's tools, for the byte-stability test. (tools alpha__*)",
		"- beta: Beta serves echo and friends. (tools beta__*)",
		"- gamma: Gamma starts on demand! (tools gamma__*)",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(ins[at:], w)
		if i < 0 {
			t.Errorf("instructions lack %q (after byte %d):\n%s", w, at, ins)
			continue
		}
		at += i + len(w)
	}
	if strings.Contains(ins, "hidden") {
		t.Errorf("instructions name the server whose every tool is hidden:\n%s", ins)
	}
	if len(ins) >= 2048 {
		t.Errorf("instructions are %d bytes, want under 2048", len(ins))
	}
}

func compareLists(t *testing.T, when string, want, got map[string]string) {
	t.Helper()
	for _, m := range fullLists {
		if got[m] != want[m] {
			t.Errorf("%s after %s differs from the first:\n%.600s\nwant\n%.600s", m, when, got[m], want[m])
		}
	}
}

// seen returns how many stdout lines r has read so far.
func (r *rawStdio) seen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// awaitNotification waits until r has read, after its first from lines, a
// notification of method (await skips notifications, so they are looked
// for among every line read).
func awaitNotification(t *testing.T, r *rawStdio, from int, method string) {
	t.Helper()
	waitFor(t, testTimeout, method, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, line := range r.all[from:] {
			if m, err := parseFrame(line); err == nil && m.Method == method {
				return true
			}
		}
		return false
	})
}

// TestFullDescriptionReload: a server's description key is its line in the
// instructions; a reload that changes only the description changes the line
// (a 2026-07-28 client reads it from every discover) and keeps the server's
// process.
func TestFullDescriptionReload(t *testing.T) {
	t.Parallel()
	cfg := func(desc string) string {
		return fixture("alpha", nil, `description = `+tomlStr(desc)) + fixture("beta", []string{"-instructions", "Beta. More."})
	}
	path := writeConfig(t, cfg("Files of the old project."))
	c := startFull(t, path, false, true)
	pid := string(c.request("tools/call", `"name":"alpha__pid"`))
	if ins := c.instructions(false); !strings.Contains(ins, "- alpha: Files of the old project. (tools alpha__*)\n- beta: Beta. (tools beta__*)") {
		t.Fatalf("instructions lack the described servers:\n%s", ins)
	}
	before := strings.Count(c.proc().stderr.String(), "config reloaded")
	if err := os.WriteFile(path, []byte(withListWait(cfg("Files of the new project."))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(c.proc().pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the reload in the log", func() bool {
		return strings.Count(c.proc().stderr.String(), "config reloaded") > before
	})
	if ins := c.instructions(false); !strings.Contains(ins, "- alpha: Files of the new project. (tools alpha__*)") || strings.Contains(ins, "old project") {
		t.Errorf("instructions after the description changed:\n%s", ins)
	}
	if got := string(c.request("tools/call", `"name":"alpha__pid"`)); got != pid {
		t.Errorf("alpha__pid = %s after a reload that changed only its description, want %s (the same process)", got, pid)
	}
}

// TestToolsClient: `manifold tools --client NAME` flags, through the built
// binary, the names that client would refuse or mangle behind the entry
// given by --entry, and the caps the catalog passes; it exits 1 when it
// flags anything, and an unknown client is a usage error that lists the
// known ones.
func TestToolsClient(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("alpha", []string{"-tools", "echo,pid,whoami"}, `prefix = "a_prefix_that_is_quite_long"`)+
		`[servers.alpha.overrides.pid]
name = "dup-name"
[servers.alpha.overrides.whoami]
name = "dup_name"
`)
	const longEntry = "manifold-with-a-long-entry-name"
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		noStdout []string
	}{
		{name: "claude-code behind a long entry", args: []string{"--client", "claude-code", "--entry", longEntry}, code: 1,
			stdout: []string{`Claude Code, entry "` + longEntry + `": 3 tools exposed; names of up to 26 characters fit (max_name_length = 49).`,
				"a_prefix_that_is_quite_long__echo\n    as mcp__" + longEntry + "__a_prefix_that_is_quite_long__echo\n    71 characters: the model API refuses tool names over 64",
				"set max_name_length = 26"},
			noStdout: []string{"dup-name\n    as"}, // 59: fits
			stderr:   []string{"manifold: tools: 1 problem for Claude Code"}},
		{name: "codex: - and _", args: []string{"--client", "codex"}, code: 1,
			stdout: []string{`Codex writes "-" as "_": dup-name and dup_name are both dup_name to it`},
			stderr: []string{"manifold: tools: 1 problem for Codex"}},
		{name: "vscode: nothing to flag", args: []string{"--client", "VSCode"}, code: 0,
			stdout: []string{"No problem: VS Code takes every name as it is."}},
		{name: "unknown client", args: []string{"--client", "netscape"}, code: 2,
			stderr: []string{`--client "netscape" is not a client Manifold knows; use one of claude-code, codex, gemini, cursor, vscode, windsurf`}},
		{name: "entry without client", args: []string{"--entry", "x"}, code: 2,
			stderr: []string{"--entry goes with --client NAME"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runCLI(t, append([]string{"tools", "--config", cfg}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.noStdout {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		t.Parallel()
		stdout, stderr, code := runCLI(t, "tools", "--config", cfg, "--client", "gemini", "--entry", longEntry, "--json")
		if code != 1 {
			t.Errorf("exit status %d, want 1; stderr:\n%s", code, stderr)
		}
		var got struct {
			Client, Entry string
			Tools, Budget int
			Problems      []struct{ Name, As, Other, Problem string }
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if got.Client != "gemini" || got.Entry != longEntry || got.Tools != 3 || got.Budget != 63-len("mcp__")-len(longEntry) {
			t.Errorf("client %q entry %q tools %d budget %d", got.Client, got.Entry, got.Tools, got.Budget)
		}
		if len(got.Problems) != 1 || got.Problems[0].Name != "a_prefix_that_is_quite_long__echo" || !strings.HasSuffix(got.Problems[0].As, "...") {
			t.Errorf("problems = %+v, want the one name Gemini CLI cuts", got.Problems)
		}
	})
}
