package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of the search surface (issue 12): the catalog mode per
// client, the meta-tools, and the policy inside them, through the built
// binary, over stdio and HTTP, for clients of both protocol eras.

// searchSurfaceConfig is a catalog of 36 visible tools (above search_above
// = 20): alpha's echo is labelled write by an override and its whoami is
// rate limited; beta is read_only (only whoami shows); gamma's pid is denied.
func searchSurfaceConfig(t *testing.T, catalog string) string {
	t.Helper()
	body := `policy_files = ["policy/*.toml"]

[audit]
file = "audit.jsonl"

[catalog]
` + catalog + "\n" +
		fixture("alpha", nil, "", "[servers.alpha.overrides.echo]", "annotations = { readOnlyHint = false, destructiveHint = false }") +
		fixture("beta", nil, "read_only = true") +
		fixture("gamma", nil, `tools.deny = ["pid"]`) +
		fixture("delta", nil)
	return policyConfig(t, body, map[string]string{"policy/limits.toml": "[rules.slow]\nmatch = \"alpha__whoami\"\nrate = \"2/minute\"\n"})
}

var searchList = []string{"search_tools", "describe_tools", "call_tool_read", "call_tool_write", "call_tool_destructive"}

func listedNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// checkSearchSurface drives one search-mode session: its list, search,
// describe and the call tools, with hidden tools absent from all three and
// each call tool running its own class only.
func checkSearchSurface(ctx context.Context, t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if diff := cmp.Diff(append(slices.Clone(searchList), "alpha__whoami"), listedNames(ctx, t, cs)); diff != "" {
		t.Errorf("search-mode tools/list (-want +got):\n%s", diff)
	}
	res := call(ctx, t, cs, "search_tools", map[string]any{"query": "echo a message back"})
	if res.IsError || !strings.Contains(text(res), "alpha__echo(") || !strings.Contains(text(res), "[write] → call_tool_write") {
		t.Errorf("search_tools for echo = %q; want alpha__echo marked [write] → call_tool_write", text(res))
	}
	for _, q := range []string{"process id", "gamma__pid", "returns the process id of gamma", "echo beta"} {
		res := call(ctx, t, cs, "search_tools", map[string]any{"query": q, "limit": 20})
		if got := text(res); strings.Contains(got, "gamma__pid") || strings.Contains(got, "beta__echo") {
			t.Errorf("search_tools %q shows a hidden tool:\n%s", q, got)
		}
	}
	res = call(ctx, t, cs, "describe_tools", map[string]any{"names": []string{"gamma__pid", "beta__echo", "no__such", "delta__echo"}})
	got := text(res)
	for _, name := range []string{"gamma__pid", "beta__echo", "no__such"} {
		if !strings.Contains(got, `unknown tool "`+name+`"; search_tools finds the tools for a task`) {
			t.Errorf("describe_tools: no plain unknown-tool answer for %s:\n%s", name, got)
		}
	}
	if !strings.Contains(got, `"name":"delta__echo"`) || !strings.Contains(got, "inputSchema") {
		t.Errorf("describe_tools lacks delta__echo's definition:\n%s", got)
	}
	calls := []struct {
		via, tool, want string
		isError         bool
	}{
		{"call_tool_write", "alpha__echo", "alpha: hi", false},
		{"call_tool_read", "alpha__echo", "call it with call_tool_write", true},
		{"call_tool_destructive", "alpha__echo", "call it with call_tool_write", true},
		{"call_tool_destructive", "delta__echo", "delta: hi", false}, // unannotated: destructive
		{"call_tool_write", "delta__echo", "call it with call_tool_destructive", true},
		{"call_tool_read", "delta__whoami", "delta", false},
		{"call_tool_destructive", "gamma__pid", `unknown tool "gamma__pid"`, true},
		{"call_tool_destructive", "beta__echo", `unknown tool "beta__echo"`, true},
		{"call_tool_read", "beta__whoami", "beta", false},
	}
	for _, c := range calls {
		res := call(ctx, t, cs, c.via, map[string]any{"name": c.tool, "arguments": map[string]any{"message": "hi"}})
		if got := text(res); res.IsError != c.isError || !strings.Contains(got, c.want) {
			t.Errorf("%s %s = %q (isError %v); want %q (isError %v)", c.via, c.tool, got, res.IsError, c.want, c.isError)
		}
	}
}

// TestCatalogSearchSurface: over stdio and HTTP, for a legacy and a
// 2026-07-28 client, the search surface lists the meta-tools and the always
// tool; hidden tools (denied, or not read-only on a read_only server) are
// never found, described or called; the call tools run their own class
// only; and a rate limit holds through call_tool_read. The audit file
// names the mode and the call tool.
func TestCatalogSearchSurface(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, transport, version string }{
		{"stdio legacy", "stdio", protocolVersion},
		{"stdio 2026-07-28", "stdio", modernVersion},
		{"http legacy", "http", protocolVersion},
		{"http 2026-07-28", "http", modernVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := searchSurfaceConfig(t, `search_above = 20`+"\n"+`always = ["alpha__whoami"]`)
			ctx := testCtx(t)
			client := mcp.NewClient(&mcp.Implementation{Name: "Visual Studio Code", Version: "1.99"}, nil)
			var cs *mcp.ClientSession
			if tc.transport == "stdio" {
				cs = startStdioClient(t, cfg, client, tc.version).cs
			} else {
				cs = connectHTTPClient(t, startHTTP(t, cfg), client, tc.version)
			}
			checkSearchSurface(ctx, t, cs)

			// The rate limit of alpha__whoami holds through call_tool_read.
			for i := range 2 {
				if res := call(ctx, t, cs, "call_tool_read", map[string]any{"name": "alpha__whoami"}); res.IsError {
					t.Errorf("call %d of alpha__whoami: %q", i+1, text(res))
				}
			}
			res := call(ctx, t, cs, "call_tool_read", map[string]any{"name": "alpha__whoami"})
			if !res.IsError || !strings.Contains(text(res), "rate limit") {
				t.Errorf("third call of alpha__whoami through call_tool_read = %q (isError %v); want the rate limit", text(res), res.IsError)
			}

			audit := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
			var lines []auditLine
			waitFor(t, 10*time.Second, "the audit line of the call through call_tool_write", func() bool {
				lines = readAudit(t, audit)
				return slices.ContainsFunc(lines, func(l auditLine) bool {
					return l["exposed"] == "alpha__echo" && l["via"] == "call_tool_write" && l["outcome"] == "ok"
				})
			})
			for _, l := range lines {
				if l["catalog"] != "search" {
					t.Errorf("audit line without catalog \"search\": %v", l)
				}
			}
			if !slices.ContainsFunc(lines, func(l auditLine) bool {
				return l["exposed"] == "alpha__whoami" && l["via"] == "call_tool_read" && l["outcome"] == "rate limited"
			}) {
				t.Errorf("no audit line of the rate-limited call through call_tool_read:\n%v", lines)
			}
			if !slices.ContainsFunc(lines, func(l auditLine) bool {
				return l["exposed"] == "gamma__pid" && l["via"] == "call_tool_destructive" && l["outcome"] == "hidden"
			}) {
				t.Errorf("no audit line of the hidden gamma__pid called through call_tool_destructive:\n%v", lines)
			}
		})
	}
}

// clientsStatus is GET /status/clients.
type clientsStatus struct {
	Clients []struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
		Catalog  string `json:"catalog"`
		Tools    int    `json:"tools"`
	} `json:"clients"`
	Catalog struct {
		Tools       int `json:"tools"`
		FullBytes   int `json:"full_bytes"`
		SearchBytes int `json:"search_bytes"`
	} `json:"catalog"`
}

func getClients(t *testing.T, hp *httpProxy) clientsStatus {
	t.Helper()
	resp, err := http.Get("http://" + hp.addr + "/status/clients")
	if err != nil {
		t.Fatalf("GET /status/clients: %v", err)
	}
	defer resp.Body.Close()
	var cs clientsStatus
	if err := json.NewDecoder(resp.Body).Decode(&cs); err != nil {
		t.Fatalf("GET /status/clients: %v", err)
	}
	return cs
}

// TestCatalogSearchAuto: with mode = "auto", Claude Code and Codex get the
// full list and Visual Studio Code the search surface, in both eras, when
// the catalog is above search_above; below it everyone gets the full list.
// /status/clients and the audit file say which mode each client got.
func TestCatalogSearchAuto(t *testing.T) {
	t.Parallel()
	cfg := searchSurfaceConfig(t, `mode = "auto"`+"\n"+`search_above = 20`)
	hp := startHTTP(t, cfg)
	ctx := testCtx(t)
	clients := []struct {
		name, version, want string
	}{
		{"claude-code", protocolVersion, "full"},
		{"claude-code", modernVersion, "full"},
		{"codex-mcp-client", protocolVersion, "full"},
		{"Visual Studio Code", protocolVersion, "search"},
		{"Visual Studio Code", modernVersion, "search"},
	}
	for _, c := range clients {
		cs := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: c.name, Version: "1"}, nil), c.version)
		names := listedNames(ctx, t, cs)
		got := "full"
		if slices.Equal(names, searchList) {
			got = "search"
		} else if slices.Contains(names, "search_tools") || !slices.Contains(names, "alpha__echo") || len(names) != 36 {
			got = "mixed: " + strings.Join(names, ",")
		}
		if got != c.want {
			t.Errorf("%s (%s) got the %s list; want %s", c.name, c.version, got, c.want)
		}
		// Listing again gives the same list; a 2026-07-28 client is told
		// that no shared cache may serve it to another client.
		again, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var againNames []string
		for _, tool := range again.Tools {
			againNames = append(againNames, tool.Name)
		}
		if !slices.Equal(againNames, names) {
			t.Errorf("%s (%s): a second tools/list differs", c.name, c.version)
		}
		if c.version == modernVersion && again.CacheScope != "private" {
			t.Errorf("%s (%s): tools/list cacheScope %q; want private (the list depends on the client)", c.name, c.version, again.CacheScope)
		}
		if c.want == "full" {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("%s (%s): search_tools in full mode: %v; want unknown tool", c.name, c.version, err)
			}
		}
		if c.want == "search" {
			call(ctx, t, cs, "call_tool_read", map[string]any{"name": "delta__whoami"})
		} else {
			call(ctx, t, cs, "delta__whoami", nil)
		}
	}
	// A client that calls without ever listing is in status too, with the
	// mode a list would have given it.
	silent := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "cursor-vscode", Version: "1"}, nil), protocolVersion)
	call(ctx, t, silent, "delta__whoami", nil)
	st := getClients(t, hp)
	if !slices.ContainsFunc(st.Clients, func(s struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
		Catalog  string `json:"catalog"`
		Tools    int    `json:"tools"`
	}) bool {
		return s.Name == "cursor-vscode" && s.Catalog == "search"
	}) {
		t.Errorf("/status/clients lacks cursor-vscode, which called without listing: %+v", st.Clients)
	}
	for _, c := range clients {
		proto := c.version
		if !slices.ContainsFunc(st.Clients, func(s struct {
			Name     string `json:"name"`
			Protocol string `json:"protocol"`
			Catalog  string `json:"catalog"`
			Tools    int    `json:"tools"`
		}) bool {
			wantTools := 36
			if c.want == "search" {
				wantTools = 5
			}
			return s.Name == c.name && s.Protocol == proto && s.Catalog == c.want && s.Tools == wantTools
		}) {
			t.Errorf("/status/clients lacks %s %s with catalog %s: %+v", c.name, proto, c.want, st.Clients)
		}
	}
	if st.Catalog.Tools != 36 || st.Catalog.SearchBytes <= 0 || st.Catalog.SearchBytes >= st.Catalog.FullBytes {
		t.Errorf("/status/clients catalog = %+v; want 36 tools, a search list smaller than the full one", st.Catalog)
	}
	// `manifold status --url --json` carries the same clients and sizes.
	out, errOut, _ := runCLI(t, "status", "--url", "http://"+hp.addr, "--json")
	var viaURL struct {
		Servers []json.RawMessage `json:"servers"`
		Clients *clientsStatus    `json:"clients"`
	}
	if err := json.Unmarshal([]byte(out), &viaURL); err != nil || viaURL.Clients == nil {
		t.Errorf("status --url --json: %v; want servers and clients:\n%s%s", err, out, errOut)
	} else if len(viaURL.Servers) == 0 || len(viaURL.Clients.Clients) != len(st.Clients) || viaURL.Clients.Catalog != st.Catalog {
		t.Errorf("status --url --json: %d servers, clients %+v, catalog %+v; want the servers and what /status/clients says (%+v, %+v)",
			len(viaURL.Servers), viaURL.Clients.Clients, viaURL.Clients.Catalog, st.Clients, st.Catalog)
	}

	audit := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
	waitFor(t, 10*time.Second, "audit lines of delta__whoami naming each client's mode", func() bool {
		lines := readAudit(t, audit)
		for _, c := range clients {
			if !slices.ContainsFunc(lines, func(l auditLine) bool {
				return l["exposed"] == "delta__whoami" && l["client"] == c.name && l["catalog"] == c.want
			}) {
				return false
			}
		}
		return true
	})

	// Below search_above every client gets the full list.
	small := connectHTTPClient(t, startHTTP(t, searchSurfaceConfig(t, `mode = "auto"`+"\n"+`search_above = 100`)),
		mcp.NewClient(&mcp.Implementation{Name: "Visual Studio Code", Version: "1"}, nil), protocolVersion)
	if names := listedNames(ctx, t, small); slices.Contains(names, "search_tools") || len(names) != 36 {
		t.Errorf("below search_above Visual Studio Code got %v; want the full list of 36", names)
	}
}

// TestCatalogSearchLazy: a lazy server's tools are found and described from
// its cached catalog while it does not run (status says idle); a call
// through the call tool starts it.
func TestCatalogSearchLazy(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	setProcEnv(t, "XDG_CACHE_HOME="+cache) // the catalog cache and the status file, the test's own
	cfg := writeConfig(t, "[catalog]\nmode = \"search\"\n"+fixture("alpha", nil)+fixture("gamma", nil, `start = "lazy"`))
	ctx := testCtx(t)

	// First run: gamma starts once to learn its catalog, which is cached.
	sp := startStdio(t, cfg)
	listedNames(ctx, t, sp.cs)
	res := call(ctx, t, sp.cs, "search_tools", map[string]any{"query": "echo message"})
	if !strings.Contains(text(res), "gamma__echo(") {
		t.Fatalf("first run: search_tools does not find gamma__echo:\n%s", text(res))
	}
	sp.stop()

	sp = startStdio(t, cfg)
	res = call(ctx, t, sp.cs, "search_tools", map[string]any{"query": "echo message"})
	if !strings.Contains(text(res), "gamma__echo(") {
		t.Errorf("search_tools does not find the lazy server's gamma__echo:\n%s", text(res))
	}
	res = call(ctx, t, sp.cs, "describe_tools", map[string]any{"names": []string{"gamma__echo"}})
	if !strings.Contains(text(res), `"name":"gamma__echo"`) {
		t.Errorf("describe_tools gamma__echo = %q", text(res))
	}
	gammaRuns := func() bool {
		for _, p := range descendants(sp.pid()) {
			if strings.Contains(p.cmdline, "-name\x00gamma") || strings.Contains(p.cmdline, "-name gamma") {
				return true
			}
		}
		return false
	}
	if gammaRuns() {
		t.Errorf("lazy server gamma runs after search and describe")
	}
	statusFile := filepath.Join(cache, "manifold", "run", strconv.Itoa(sp.pid())+".json")
	var st struct {
		Servers []struct{ Name, State string }   `json:"servers"`
		Clients []struct{ Name, Catalog string } `json:"clients"`
	}
	waitFor(t, 10*time.Second, "the status file with gamma idle and the client in search mode", func() bool {
		b, err := os.ReadFile(statusFile)
		if err != nil || json.Unmarshal(b, &st) != nil {
			return false
		}
		idle := slices.ContainsFunc(st.Servers, func(s struct{ Name, State string }) bool { return s.Name == "gamma" && s.State == "idle" })
		searching := slices.ContainsFunc(st.Clients, func(c struct{ Name, Catalog string }) bool { return c.Name == "e2e" && c.Catalog == "search" })
		return idle && searching
	})
	res = call(ctx, t, sp.cs, "call_tool_destructive", map[string]any{"name": "gamma__echo", "arguments": map[string]any{"message": "lazy"}})
	if text(res) != "gamma: lazy" || res.IsError {
		t.Errorf("call of the lazy gamma__echo = %q (isError %v); want %q", text(res), res.IsError, "gamma: lazy")
	}
	if !gammaRuns() {
		t.Errorf("gamma does not run after a call")
	}
}

// TestCatalogSearchInputRounds: a call through call_tool_destructive of a
// tool that asks the client for input gets there, in both eras: a
// 2026-07-28 client answers the inner call's input_required result by
// retrying the call tool, a legacy client answers the relayed elicitation.
func TestCatalogSearchInputRounds(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "[catalog]\nmode = \"search\"\n"+fixture("alpha", []string{"-tools", "echo", "-extra", "interview"}))
	for _, tc := range []struct{ name, version string }{{"2026-07-28", ""}, {"legacy", protocolVersion}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bc := &bridgeClient{name: "c"}
			sp := startStdioClient(t, cfg, bc.client(true, allCaps()), tc.version)
			ctx := testCtx(t)
			res, err := callRaw(ctx, sp.cs, "call_tool_destructive", map[string]any{"name": "alpha__interview", "arguments": map[string]any{"steps": "elicit"}}, nil)
			if err != nil {
				t.Fatalf("call_tool_destructive alpha__interview: %v", err)
			}
			want := "alpha: interview\n" + `elicit action=accept content={"answer":"c 1"}`
			if got := text(res); got != want || res.IsError {
				t.Errorf("call_tool_destructive alpha__interview = %q (isError %v), want %q", got, res.IsError, want)
			}
		})
	}
}

// TestCatalogSearchTokens: manifold tools --tokens prints each server's
// share and the totals of both lists; --json has the same figures.
func TestCatalogSearchTokens(t *testing.T) {
	t.Parallel()
	cfg := searchSurfaceConfig(t, `always = ["alpha__whoami"]`)
	out, errOut, code := runCLI(t, "tools", "--tokens", "--config", cfg)
	if code != 0 {
		t.Fatalf("tools --tokens exited %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"SERVER", "FULL TOKENS", "SEARCH TOKENS", "\nalpha ", "\ndelta ", "(search tools)", "\ntotal           36", "tokens are estimated as bytes/4"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools --tokens lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runCLI(t, "tools", "--tokens", "--json", "--config", cfg)
	var size struct {
		Tools       int `json:"tools"`
		FullBytes   int `json:"full_bytes"`
		SearchBytes int `json:"search_bytes"`
		Servers     []struct {
			Server      string `json:"server"`
			Tools       int    `json:"tools"`
			SearchBytes int    `json:"search_bytes"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &size); code != 0 || err != nil {
		t.Fatalf("tools --tokens --json (exit %d): %v\n%s%s", code, err, out, errOut)
	}
	// The fixture's tools are small: the search list is smaller, not tiny.
	if size.Tools != 36 || size.SearchBytes <= 0 || size.SearchBytes >= size.FullBytes || len(size.Servers) != 4 {
		t.Errorf("tools --tokens --json = %+v; want 36 tools in 4 servers, a search list smaller than the full one", size)
	}
	for _, s := range size.Servers {
		if (s.Server == "alpha") != (s.SearchBytes > 0) {
			t.Errorf("server %s has %d bytes in the search list; only alpha's always tool should", s.Server, s.SearchBytes)
		}
	}
}

// searchRanker returns the ranker search_tools reports in its structured
// content and whether its text names want.
func searchRanker(ctx context.Context, t *testing.T, cs *mcp.ClientSession, query, want string) (string, bool) {
	t.Helper()
	res := call(ctx, t, cs, "search_tools", map[string]any{"query": query})
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Ranker string `json:"ranker"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("search_tools structured content %s: %v", b, err)
	}
	return out.Ranker, !res.IsError && strings.Contains(text(res), want+"(")
}

// TestCatalogSearchEncoder: with [catalog] encoder = true, the first search
// is answered at once, lexically, while the tools' embeddings are built in
// the background; later searches are answered with the encoder; the
// embeddings are cached on disk, one 0600 file per tool, and a restart
// with unchanged tools embeds none of them again.
func TestCatalogSearchEncoder(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	setProcEnv(t, "XDG_CACHE_HOME="+cache) // the embedding cache, the test's own
	cfg := writeConfig(t, "[catalog]\nmode = \"search\"\nencoder = true\n"+fixture("alpha", nil))
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	dir := filepath.Join(cache, "manifold", "embed")

	for run, wantLog := range []string{"from_cache=0", "embedded=0"} {
		sp := startStdio(t, cfg)
		tools := 0
		for _, n := range listedNames(ctx, t, sp.cs) {
			if !slices.Contains(searchList, n) {
				t.Fatalf("run %d: search-mode list has %s", run+1, n)
			}
		}
		// The first search of a catalog asks for its embeddings: they are
		// never all ready at that moment, and the search does not wait.
		ranker, found := searchRanker(ctx, t, sp.cs, "echo a message back", "alpha__echo")
		if ranker != "lexical" || !found {
			t.Errorf("run %d: first search: ranker %q, found alpha__echo %v; want lexical, found", run+1, ranker, found)
		}
		waitFor(t, 7*time.Minute, "a search answered with the encoder", func() bool {
			ranker, found = searchRanker(ctx, t, sp.cs, "echo a message back", "alpha__echo")
			return ranker == "encoder"
		})
		if !found {
			t.Errorf("run %d: the encoder's search does not find alpha__echo", run+1)
		}
		log := sp.stderr.String()
		if !strings.Contains(log, "search encoder: embeddings ready") || !strings.Contains(log, wantLog) {
			t.Errorf("run %d: log lacks the ready line with %s:\n%s", run+1, wantLog, log)
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.emb"))
		if err != nil {
			t.Fatal(err)
		}
		// alpha's tools, as the proxy counted them when alpha came up.
		if m := regexp.MustCompile(`msg="server up" upstream=alpha pid=\d+ tools=(\d+)`).FindStringSubmatch(log); m != nil {
			tools, _ = strconv.Atoi(m[1])
		}
		if len(files) < tools || tools == 0 {
			t.Errorf("run %d: %d cached embeddings for alpha's %d tools", run+1, len(files), tools)
		}
		for _, f := range files {
			if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, mode %v; want 0600", f, err, info.Mode().Perm())
			}
		}
		if code := sp.stop(); code != 0 {
			t.Errorf("run %d: manifold exited %d", run+1, code)
		}
	}
}
