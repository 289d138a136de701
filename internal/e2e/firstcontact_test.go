package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// First contact (issue 40, item 1): a client that lists once, right after
// initialize, gets the whole catalog. A server listed by an earlier run is
// advertised from its cached catalog from the first moment, while it starts;
// a call of one of its tools waits for the start; a live listing that
// differs corrects the catalog with list_changed.

// TestFirstListFromCache: with a first_list_wait far shorter than a slow
// server's start, the second run's first tools/list (right after initialize)
// holds the slow server's tools from its cached catalog; a call of one
// waits for the start and is answered; no list_changed follows when the
// live listing is the cached one. A third run from a cache that no longer
// matches the server (a tool renamed in the file) lists the cached tool
// first, then corrects the catalog with list_changed.
func TestFirstListFromCache(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	env := "XDG_CACHE_HOME=" + cache
	cfg := writeConfig(t, `first_list_wait = "1ms"
pin = "off"
`+fixture("alpha", []string{"-tools", "echo"})+
		fixture("slow", []string{"-mode", "slowstart", "-delay", "3s", "-tools", "echo,pid"}, `startup_timeout = "60s"`))
	ctx := testCtx(t)

	// Run 1: nothing cached; slow joins later (list_changed).
	ch := newChanges("e2e-first-contact")
	sp := startStdioEnv(t, cfg, ch.client(), env)
	if got := toolNames(listTools(ctx, t, sp.cs)); slices.Contains(got, "slow__echo") {
		t.Fatalf("run 1: first tools/list = %v: slow listed before it was ever up (first_list_wait is 1ms, its start 3s)", got)
	}
	if !ch.waitCount("tools", 1, awaitBound) {
		t.Fatalf("run 1: no tools/list_changed within %s of slow's start", awaitBound)
	}
	waitFor(t, 10*time.Second, "slow's catalog cached", func() bool { return len(cacheFiles(t, cache, "slow")) == 1 })
	sp.stop()

	// Run 2: slow is advertised from its cache at once.
	ch = newChanges("e2e-first-contact")
	sp = startStdioEnv(t, cfg, ch.client(), env)
	want := []string{"alpha__echo", "slow__echo", "slow__pid"}
	if got := toolNames(listTools(ctx, t, sp.cs)); !slices.Equal(got, want) {
		t.Fatalf("run 2: first tools/list = %v, want %v (slow from its cached catalog)", got, want)
	}
	if hasServerUp(sp.stderr.String(), "slow") {
		t.Fatalf("run 2: slow was up before the first list; the test shows nothing about the cache (stderr:\n%s)", sp.stderr)
	}
	if got := text(call(ctx, t, sp.cs, "slow__echo", map[string]any{"message": "waited"})); got != "slow: waited" {
		t.Errorf("run 2: a call of slow while it starts = %q, want %q (the call waits for the start)", got, "slow: waited")
	}
	time.Sleep(noNotifyBound)
	if n := ch.counts()["tools"]; n != 0 {
		t.Errorf("run 2: %d tools/list_changed although slow listed what its cache said", n)
	}
	sp.stop()

	// Run 3: the cache says slow has "stale" instead of "pid".
	files := cacheFiles(t, cache, "slow")
	if len(files) != 1 {
		t.Fatalf("slow's cache files = %v, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	stale := strings.Replace(string(c["tools"]), `"name":"pid"`, `"name":"stale"`, 1)
	if stale == string(c["tools"]) {
		t.Fatalf("slow's cached tools have no pid tool: %s", c["tools"])
	}
	c["tools"] = json.RawMessage(stale)
	if data, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	ch = newChanges("e2e-first-contact")
	sp = startStdioEnv(t, cfg, ch.client(), env)
	if got, want := toolNames(listTools(ctx, t, sp.cs)), []string{"alpha__echo", "slow__echo", "slow__stale"}; !slices.Equal(got, want) {
		t.Fatalf("run 3: first tools/list = %v, want %v (the cache as it is)", got, want)
	}
	if !ch.waitCount("tools", 1, awaitBound) {
		t.Fatalf("run 3: no tools/list_changed within %s once slow listed other tools than its cache", awaitBound)
	}
	if got := toolNames(listTools(ctx, t, sp.cs)); !slices.Equal(got, want) {
		t.Errorf("run 3: tools/list after list_changed = %v, want %v", got, want)
	}
}

// e2eClient is the go-sdk client of startStdio.
func e2eClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil)
}

// hasServerUp reports whether log has a "server up" line of server.
func hasServerUp(log, server string) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "server up") && strings.Contains(line, "upstream="+server) {
			return true
		}
	}
	return false
}

// cacheFiles returns the catalog cache files of server under the cache
// home dir.
func cacheFiles(t *testing.T, dir, server string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "manifold", server+"-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRepoConfigFirstList: the repository's own proxy.toml, as a client
// starts it over stdio (its npx servers resolved from the node_modules that
// `npm ci` installed, the iban plugin built into bin/): a client that lists
// once, right after initialize, gets every tool on its first list, with empty
// caches (the first list waits for servers never seen) and with warm ones
// (the servers' cached catalogs); and every server answers a call of the
// client's first turn.
func TestRepoConfigFirstList(t *testing.T) {
	t.Parallel()
	nodeBin(t, "mcp-server-everything") // skips without npm ci
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not installed")
	}
	dir := t.TempDir()
	repoConfig, err := os.ReadFile(filepath.Join(moduleRoot, "proxy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "proxy.toml")
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(moduleRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(moduleRoot, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	build := command(goTool(), "build", "-o", filepath.Join(dir, "bin", "iban"), "./plugins/examples/iban")
	build.Dir = moduleRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build iban: %v\n%s", err, out)
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir}
	ctx := testCtx(t)

	var all []string // the whole catalog, once every server is up
	for _, run := range []string{"empty caches", "warm caches"} {
		body := repoConfig
		if all == nil {
			// How long a first list waits for servers never seen is a
			// bound chosen for clients (first_list_wait); how long npx
			// takes is the machine's. This run shows that the wait is for
			// them; the next one, with proxy.toml as it is, that their
			// catalogs are there from the first moment.
			body = append([]byte("first_list_wait = \"120s\"\n"), repoConfig...)
		}
		if err := os.WriteFile(cfg, body, 0o644); err != nil {
			t.Fatal(err)
		}
		sp := startStdioEnv(t, cfg, e2eClient(), env...)
		got := toolNames(listTools(ctx, t, sp.cs))
		t.Logf("%s: %d tools on the first list", run, len(got))
		for _, server := range []string{"files__", "memory__", "everything__", "iban__"} {
			if !slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, server) }) {
				t.Errorf("%s: the first list has no tool of %s: %v", run, strings.TrimSuffix(server, "__"), got)
			}
		}
		if all == nil {
			awaitStderr(t, sp.proc, 4, "server up") // three npx servers and the plugin
			all = toolNames(listTools(ctx, t, sp.cs))
			t.Logf("%d tools once every server is up", len(all))
		}
		if !slices.Equal(got, all) {
			t.Errorf("%s: the first list = %v, want the whole catalog %v", run, got, all)
		}
		// The first turn: a call to every server.
		for _, c := range []struct {
			name string
			args map[string]any
			want string
		}{
			{"files__list_allowed_directories", map[string]any{}, dir},
			{"memory__read_graph", map[string]any{}, "entities"},
			{"everything__echo", map[string]any{"message": "first turn"}, "first turn"},
			{"iban__iban_check", map[string]any{"ibans": "DE89 3704 0044 0532 0130 00"}, "DE89"},
		} {
			res := call(ctx, t, sp.cs, c.name, c.args)
			if res.IsError || !strings.Contains(text(res), c.want) {
				t.Errorf("%s: %s = %q (error %v), want it to hold %q", run, c.name, text(res), res.IsError, c.want)
			}
		}
		sp.stop()
	}
}

// TestPinStartingCache: pins hold for a cached catalog advertised while its
// server starts as for a live listing: definitions that changed since they
// were approved, learnt by a run that did not pin (pin = "off"), are hidden
// from the first list of the next pinned run while the server is still
// starting, and its unchanged tools are listed at once.
func TestPinStartingCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")
	signal := filepath.Join(dir, "pull")
	body := func(pin string) string {
		return "first_list_wait = \"1ms\"\npin = " + tomlStr(pin) + "\n" + fixture("alpha", []string{"-tools", "echo"}) +
			fixture("evil", []string{"-mode", "slowstart", "-delay", "3s", "-tools", "pid", "-rugpull", signal}, `startup_timeout = "60s"`)
	}
	cfg := writeConfig(t, body("quarantine"))
	lockFile := filepath.Join(filepath.Dir(cfg), "manifold.lock")
	ctx := testCtx(t)

	// Run 1: evil is approved on first sight.
	sp := startStdioEnv(t, cfg, e2eClient(), env)
	waitFor(t, 30*time.Second, "the lock file trusted on first use", func() bool {
		b, _ := os.ReadFile(lockFile)
		return strings.Contains(string(b), `"evil" tool "notes"`)
	})
	sp.stop()

	// Run 2, unpinned: the changed definitions reach the cache.
	if err := os.WriteFile(signal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(body("off")), 0o644); err != nil {
		t.Fatal(err)
	}
	sp = startStdioEnv(t, cfg, e2eClient(), env)
	waitFor(t, 30*time.Second, "the changed tools listed", func() bool { return listedSet(ctx, t, sp.cs)["evil__alpha__echo"] })
	sp.stop()

	// Run 3, pinned again: the cache is advertised at once, its changes held.
	if err := os.WriteFile(cfg, []byte(body("quarantine")), 0o644); err != nil {
		t.Fatal(err)
	}
	sp = startStdioEnv(t, cfg, e2eClient(), env)
	l := listedSet(ctx, t, sp.cs)
	if hasServerUp(sp.stderr.String(), "evil") {
		t.Fatalf("run 3: evil was up before the first list; the test shows nothing about the cache")
	}
	if !l["evil__pid"] {
		t.Errorf("run 3: the first list lacks evil__pid, unchanged in evil's cached catalog: %v", l)
	}
	for _, n := range rugpulled {
		if l[n] {
			t.Errorf("run 3: %s from evil's cached catalog is listed although it changed since approval", n)
		}
	}
}

// TestCacheKeepsWholeListing: a listing cut short (the client quits while a
// server still lists, as a client that quits right after its turn does)
// leaves the server's cached catalog as the last whole listing wrote it;
// before, the empty listing overwrote it and the next run advertised
// nothing of the server.
func TestCacheKeepsWholeListing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stall := filepath.Join(dir, "stall")
	env := "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")
	cfg := writeConfig(t, fixture("alpha", []string{"-tools", "echo,pid", "-stall-lists", stall}))
	ctx := testCtx(t)

	// Run 1: a whole listing is cached.
	sp := startStdioEnv(t, cfg, e2eClient(), env)
	if got := toolNames(listTools(ctx, t, sp.cs)); !slices.Equal(got, []string{"alpha__echo", "alpha__pid"}) {
		t.Fatalf("run 1: tools %v", got)
	}
	waitFor(t, 10*time.Second, "alpha's catalog cached", func() bool {
		files := cacheFiles(t, filepath.Join(dir, "cache"), "alpha")
		if len(files) != 1 {
			return false
		}
		b, _ := os.ReadFile(files[0])
		return strings.Contains(string(b), `"name":"pid"`)
	})
	sp.stop()

	// Run 2: alpha starts but never answers tools/list; the client quits.
	if err := os.WriteFile(stall, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sp = startStdioEnv(t, cfg, e2eClient(), env)
	awaitStderr(t, sp.proc, 1, "upstream started", "upstream=alpha") // initialized; now listing
	sp.stop()
	files := cacheFiles(t, filepath.Join(dir, "cache"), "alpha")
	if len(files) != 1 {
		t.Fatalf("alpha's cache files after run 2: %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"name":"pid"`) || !strings.Contains(string(b), `"name":"echo"`) {
		t.Errorf("after a listing cut short, alpha's cached catalog is %s; want run 1's tools", b)
	}
}
