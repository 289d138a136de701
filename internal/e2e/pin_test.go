package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of pinned definitions (issue 14, item 1): a server that
// changes its definitions while Manifold runs (the fixture's -rugpull) is
// caught, its changed tools are hidden under pin = "quarantine" from the
// full list, the search surface and calls by name until `manifold approve`,
// and the fixture's record shows that no call went through.

// rugpulled are the evil server's tools that the rug pull changes (or adds)
// as clients see them.
var rugpulled = []string{"evil__alpha__echo", "evil__fetch", "evil__notes", "evil__wipe"}

// pinSetup writes a config of the fixture alpha and the rug-pulling fixture
// evil (pin as given, "" for the default) and returns it, the signal file
// that pulls the rug and the record of evil's calls.
func pinSetup(t *testing.T, pin string) (cfg, signal, record string) {
	t.Helper()
	dir := t.TempDir()
	signal, record = filepath.Join(dir, "pull"), filepath.Join(dir, "record")
	top := ""
	if pin != "" {
		top = "pin = " + tomlStr(pin) + "\n"
	}
	body := top + `
[catalog]
mode = "full"
[catalog.clients]
"e2e-search" = "search"
` + fixture("alpha", []string{"-tools", "echo"}) +
		fixture("evil", []string{"-tools", "pid", "-rugpull", signal, "-record", record})
	return writeConfig(t, body), signal, record
}

// manifoldCmd runs manifold with args and returns its combined output and
// exit error.
func manifoldCmd(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := commandContext(ctx, manifoldBin, args...)
	cmd.Env = append(procEnviron(t), "HOME="+t.TempDir(), "MANIFOLD_CONFIG=")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func listedSet(ctx context.Context, t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, n := range listedNames(ctx, t, cs) {
		out[n] = true
	}
	return out
}

func readRecord(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestPinQuarantine: under the default pin (quarantine), a definition that
// changes while Manifold runs (an instruction in a description, a
// readOnlyHint flip, a parameter added, a rename that shadows another
// server's tool) is hidden from tools/list and from the search surface and
// refused by name with an error that names `manifold approve`; no call
// reaches the server. status and doctor show it; `manifold approve` (the
// real command, against the same config) shows the diff, updates the lock
// file, and the running instance serves the tool again without a restart.
func TestPinQuarantine(t *testing.T) {
	t.Parallel()
	setProcEnv(t, "XDG_CACHE_HOME="+t.TempDir()) // status files, the test's own
	cfg, signal, record := pinSetup(t, "")
	lockFile := filepath.Join(filepath.Dir(cfg), "manifold.lock")
	hp := startHTTP(t, cfg)
	full := connectHTTP(t, hp)
	search := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "e2e-search", Version: "0"}, nil), protocolVersion)
	ctx := testCtx(t)

	// First sight: trusted and recorded.
	before := listedSet(ctx, t, full)
	for _, n := range []string{"alpha__echo", "evil__notes", "evil__wipe", "evil__fetch", "evil__helper"} {
		if !before[n] {
			t.Fatalf("before the change %s is not listed: %v", n, before)
		}
	}
	waitFor(t, 10*time.Second, "the lock file trusted on first use", func() bool {
		b, _ := os.ReadFile(lockFile)
		return strings.Contains(string(b), `"evil" tool "notes"`) && strings.Contains(string(b), `"alpha" tool "echo"`)
	})
	if res := call(ctx, t, full, "evil__fetch", map[string]any{"url": "x"}); res.IsError {
		t.Fatalf("evil__fetch before the change: %s", text(res))
	}
	if got := readRecord(t, record); got != "call fetch\n" {
		t.Fatalf("record after one call = %q", got)
	}

	// The rug pull.
	if err := os.WriteFile(signal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "evil__helper gone after list_changed", func() bool { return !listedSet(ctx, t, full)["evil__helper"] })
	after := listedSet(ctx, t, full)
	for _, n := range rugpulled {
		if after[n] {
			t.Errorf("%s is listed although it changed and awaits review", n)
		}
	}
	if !after["alpha__echo"] || !after["evil__pid"] {
		t.Errorf("unchanged tools are not listed: %v", after)
	}
	for _, n := range rugpulled {
		_, err := full.CallTool(ctx, &mcp.CallToolParams{Name: n, Arguments: map[string]any{"url": "x"}})
		if err == nil || !strings.Contains(err.Error(), "awaits review") || !strings.Contains(err.Error(), "manifold approve evil/") {
			t.Errorf("call %s: err = %v, want an error that it awaits review and names manifold approve", n, err)
		}
	}
	// The search surface: not found, not described, not callable.
	if names := listedNames(ctx, t, search); !slices.Contains(names, "search_tools") {
		t.Fatalf("the e2e-search client does not get the search surface: %v", names)
	}
	for _, q := range []string{"notes", "wipe delete every note", "fetch a URL", "echo"} {
		got := text(call(ctx, t, search, "search_tools", map[string]any{"query": q, "limit": 50}))
		for _, n := range rugpulled {
			if strings.Contains(got, n) {
				t.Errorf("search_tools %q finds %s, which awaits review:\n%s", q, n, got)
			}
		}
	}
	got := text(call(ctx, t, search, "describe_tools", map[string]any{"names": rugpulled}))
	if strings.Contains(got, "IMPORTANT") || strings.Contains(got, "Deletes every note") {
		t.Errorf("describe_tools describes tools that await review:\n%s", got)
	}
	for _, via := range []string{"call_tool_read", "call_tool_write", "call_tool_destructive"} {
		res := call(ctx, t, search, via, map[string]any{"name": "evil__notes", "arguments": map[string]any{}})
		if !res.IsError || !strings.Contains(text(res), "awaits review") {
			t.Errorf("%s evil__notes = %q, want an error that it awaits review", via, text(res))
		}
	}
	if got := readRecord(t, record); got != "call fetch\n" {
		t.Errorf("a held tool was executed; record = %q", got)
	}

	// status (of the running instance) and doctor show each with the fix.
	var out string
	waitFor(t, 10*time.Second, "status of the running instance shows the reviews", func() bool {
		out, _ = manifoldCmd(ctx, t, "status", "--config", cfg)
		return strings.Contains(out, "awaiting review")
	})
	for _, want := range []string{"awaiting review", `tool "notes"`, "before-answering", "secret-file", "shadowing", "readOnlyHint", "manifold approve evil/notes", "manifold approve evil/alpha__echo"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not show %q:\n%s", want, out)
		}
	}
	out, _ = manifoldCmd(ctx, t, "doctor", "--config", cfg)
	if !strings.Contains(out, `tool "wipe" is changed`) || !strings.Contains(out, "manifold approve evil/wipe") {
		t.Errorf("doctor does not report the held definitions with their fix:\n%s", out)
	}

	// approve with no argument lists, and writes nothing.
	lockBefore, _ := os.ReadFile(lockFile)
	out, err := manifoldCmd(ctx, t, "approve", "--config", cfg)
	if err != nil || !strings.Contains(out, "4 definitions awaiting review") {
		t.Errorf("approve without argument: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(lockFile); string(b) != string(lockBefore) {
		t.Errorf("approve without argument changed the lock file")
	}

	// A dry run shows and writes nothing.
	out, err = manifoldCmd(ctx, t, "approve", "--config", cfg, "-n", "evil/notes")
	if err != nil || !strings.Contains(out, "Dry run: 1 definition would be accepted") {
		t.Errorf("approve -n: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(lockFile); string(b) != string(lockBefore) {
		t.Errorf("approve -n changed the lock file")
	}
	// A name that awaits nothing is an error that lists what does.
	out, err = manifoldCmd(ctx, t, "approve", "--config", cfg, "evil/pid")
	if err == nil || !strings.Contains(out, "awaiting review: evil/") {
		t.Errorf("approve of a name that awaits nothing: %v\n%s", err, out)
	}

	// Approve one: its diff is shown, it is served again, the rest stay held.
	out, err = manifoldCmd(ctx, t, "approve", "--config", cfg, "evil/notes")
	if err != nil {
		t.Fatalf("approve evil/notes: %v\n%s", err, out)
	}
	if !strings.Contains(out, `-   "description": "Reads the user's notes.",`) || !strings.Contains(out, `+   "description": "Reads the user's notes. <IMPORTANT>Before answering`) {
		t.Errorf("approve does not print the diff:\n%s", out)
	}
	waitFor(t, 10*time.Second, "evil__notes served after approve", func() bool { return listedSet(ctx, t, full)["evil__notes"] })
	if l := listedSet(ctx, t, full); l["evil__wipe"] || l["evil__fetch"] || l["evil__alpha__echo"] {
		t.Errorf("approving evil/notes served other held tools: %v", l)
	}
	if res := call(ctx, t, full, "evil__notes", nil); res.IsError {
		t.Errorf("evil__notes after approve: %s", text(res))
	}

	out, err = manifoldCmd(ctx, t, "approve", "--config", cfg, "--all")
	if err != nil {
		t.Fatalf("approve --all: %v\n%s", err, out)
	}
	waitFor(t, 10*time.Second, "every tool served after approve --all", func() bool {
		l := listedSet(ctx, t, full)
		for _, n := range rugpulled {
			if !l[n] {
				return false
			}
		}
		return true
	})
	if got := readRecord(t, record); got != "call fetch\ncall notes\n" {
		t.Errorf("record = %q, want the one call before the change and the one after approval", got)
	}
	if strings.Contains(hp.stderr.String(), "serving MCP on") && strings.Count(hp.stderr.String(), "serving MCP on") != 1 {
		t.Errorf("manifold restarted")
	}
	if !strings.Contains(hp.stderr.String(), "pinned definitions: a definition awaits review") {
		t.Errorf("the log has no warning with the diff:\n%s", hp.stderr.String())
	}
}

// TestPinWarn: under pin = "warn" the changed tools stay listed and
// callable, and status flags them.
func TestPinWarn(t *testing.T) {
	t.Parallel()
	setProcEnv(t, "XDG_CACHE_HOME="+t.TempDir()) // status files, the test's own
	cfg, signal, record := pinSetup(t, "warn")
	lockFile := filepath.Join(filepath.Dir(cfg), "manifold.lock")
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	if !listedSet(ctx, t, sp.cs)["evil__helper"] {
		t.Fatal("evil__helper not listed before the change")
	}
	waitFor(t, 10*time.Second, "the lock file trusted on first use", func() bool {
		b, _ := os.ReadFile(lockFile)
		return strings.Contains(string(b), `"evil" tool "notes"`)
	})
	if err := os.WriteFile(signal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "evil__helper gone after list_changed", func() bool { return !listedSet(ctx, t, sp.cs)["evil__helper"] })
	l := listedSet(ctx, t, sp.cs)
	for _, n := range rugpulled {
		if !l[n] {
			t.Errorf("under warn %s is not listed", n)
		}
	}
	if res := call(ctx, t, sp.cs, "evil__wipe", nil); res.IsError {
		t.Errorf("under warn evil__wipe fails: %s", text(res))
	}
	if got := readRecord(t, record); got != "call wipe\n" {
		t.Errorf("record = %q", got)
	}
	var out string
	waitFor(t, 10*time.Second, "status flags the changed tools", func() bool {
		out, _ = manifoldCmd(ctx, t, "status", "--config", cfg)
		return strings.Contains(out, "served, flagged")
	})
	if !strings.Contains(out, `tool "notes"`) || !strings.Contains(out, "manifold approve evil/notes") {
		t.Errorf("status under warn:\n%s", out)
	}
}

// TestPinBadLockFile: a lock file that does not parse fails closed: serve
// and check refuse it with file:line, and nothing is served.
func TestPinBadLockFile(t *testing.T) {
	cfg := writeConfig(t, fixture("alpha", []string{"-tools", "echo"}))
	lockFile := filepath.Join(filepath.Dir(cfg), "manifold.lock")
	if err := os.WriteFile(lockFile, []byte("# ok\n\"alpha\" tool \"echo\" sha256:00 {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for _, args := range [][]string{{"check", "--config", cfg}, {"tools", "--config", cfg}} {
		out, err := manifoldCmd(ctx, t, args...)
		if err == nil || !strings.Contains(out, lockFile+":2:") {
			t.Errorf("manifold %s with a malformed lock file: err %v, output:\n%s", args[0], err, out)
		}
	}
}

// TestPinLazyCache: a lazy server's cached catalog is checked before the
// server runs: definitions that changed since approval, learnt by a run
// that did not pin (pin = "off"), are hidden when the next run advertises
// them from the cache, and the server is not started for it.
func TestPinLazyCache(t *testing.T) {
	t.Parallel()
	setProcEnv(t, "XDG_CACHE_HOME="+t.TempDir()) // the catalog cache, the test's own
	dir := t.TempDir()
	signal, counts := filepath.Join(dir, "pull"), filepath.Join(dir, "count")
	body := func(pin string) string {
		return "pin = " + tomlStr(pin) + "\n" + fixture("alpha", []string{"-tools", "echo"}) +
			fixture("evil", []string{"-tools", "pid", "-rugpull", signal, "-count", counts}, `start = "lazy"`)
	}
	cfg := writeConfig(t, body("quarantine"))
	lockFile := filepath.Join(filepath.Dir(cfg), "manifold.lock")
	ctx := testCtx(t)

	// Run 1: no cache, so evil starts once to learn its catalog; first sight.
	sp := startStdio(t, cfg)
	if !listedSet(ctx, t, sp.cs)["evil__notes"] {
		t.Fatal("run 1: evil__notes not listed")
	}
	waitFor(t, 10*time.Second, "the lock file trusted on first use", func() bool {
		b, _ := os.ReadFile(lockFile)
		return strings.Contains(string(b), `"evil" tool "notes"`)
	})
	sp.stop()

	// Run 2, unpinned: the changed definitions reach the cache.
	if err := os.WriteFile(signal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(withListWait(body("off"))), 0o644); err != nil {
		t.Fatal(err)
	}
	sp = startStdio(t, cfg)
	call(ctx, t, sp.cs, "evil__pid", nil) // starts evil: it lists (and caches) the changed tools
	waitFor(t, 10*time.Second, "the changed tools listed", func() bool { return listedSet(ctx, t, sp.cs)["evil__alpha__echo"] })
	sp.stop()
	starts := strings.Count(readRecord(t, counts), "start ")

	// Run 3, pinned again: the cache is advertised, the changes are held.
	if err := os.WriteFile(cfg, []byte(withListWait(body("quarantine"))), 0o644); err != nil {
		t.Fatal(err)
	}
	sp = startStdio(t, cfg)
	l := listedSet(ctx, t, sp.cs)
	if !l["evil__pid"] {
		t.Fatalf("run 3: the cached evil__pid is not listed: %v", l)
	}
	for _, n := range rugpulled {
		if l[n] {
			t.Errorf("run 3: %s from the lazy cache is listed although it changed since approval", n)
		}
	}
	if got := strings.Count(readRecord(t, counts), "start "); got != starts {
		t.Errorf("evil was started %d more times to list; a lazy server must be advertised from its cache", got-starts)
	}
}

// httpGet returns the body of GET url.
func httpGet(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// TestPinSecretNeverStored (issue 14 item 5 for pinned definitions): a
// server whose instructions and a tool's description echo a secret of the
// config (an env value from ${env:…}) has those definitions flagged for
// review ("contains a configured secret") and held under quarantine; the
// secret's bytes, in any spelling, appear nowhere: not in manifold.lock
// (before and after approve), status (text and --json, of the running
// instance and fresh), GET /status, doctor, approve (the list, -n, the
// real one), the serve log, the status and cache files, or what the client
// lists. The fingerprint is over the true text: with another value of the
// secret the approved definitions are "changed" again, still without
// showing either value.
func TestPinSecretNeverStored(t *testing.T) {
	const first, second = `pS3cr3t/pin+"lock"&value`, "qS3cr3t-rotated/pin+value"
	t.Parallel()
	cache := t.TempDir()
	setProcEnv(t, "XDG_CACHE_HOME="+cache, "E2E_PIN_SECRET="+first) // status files, the test's own; the secret
	cfg := writeConfig(t, fixture("keyed", []string{"-tools", "echo,pid", "-echo-env", "FIXTURE_KEY"},
		`env = { FIXTURE_KEY = "${env:E2E_PIN_SECRET}" }`))
	lockFile := filepath.Join(filepath.Dir(cfg), "manifold.lock")
	secrets := []string{first, second}
	none := func(where, out string) {
		t.Helper()
		assertNoneOf(t, where, out, secrets)
	}
	lock := func() string {
		t.Helper()
		b, err := os.ReadFile(lockFile)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)

	// First sight: the clean tool is trusted, the two that echo the secret
	// are held for review.
	waitFor(t, 10*time.Second, "the clean tool trusted on first use", func() bool {
		b, _ := os.ReadFile(lockFile)
		return strings.Contains(string(b), `"keyed" tool "pid"`)
	})
	if l := listedSet(ctx, t, cs); !l["keyed__pid"] || l["keyed__echo"] {
		t.Errorf("listed %v; want keyed__pid, and not keyed__echo (it holds a secret and awaits review)", l)
	}
	if strings.Contains(lock(), `"keyed" tool "echo"`) || strings.Contains(lock(), `"keyed" instructions`) {
		t.Errorf("definitions that hold a secret were trusted on first use:\n%s", lock())
	}
	none("manifold.lock after first sight", lock())

	// Every output that shows the reviews: the finding, never the secret.
	const finding = "contains a configured secret"
	var out string
	waitFor(t, 10*time.Second, "status of the running instance shows the reviews", func() bool {
		out, _ = manifoldCmd(ctx, t, "status", "--config", cfg)
		return strings.Contains(out, finding)
	})
	none("manifold status", out)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--json", "--config", cfg}, finding},
		{[]string{"status", "--url", "http://" + hp.addr, "--json"}, finding},
		{[]string{"doctor", "--config", cfg}, "manifold approve keyed/echo"},
		{[]string{"approve", "--config", cfg}, "2 definitions awaiting review"},
		{[]string{"approve", "--config", cfg, "-n", "keyed"}, "Dry run: 2 definitions would be accepted"},
	} {
		out, _ := manifoldCmd(ctx, t, tc.args...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("manifold %s does not show %q:\n%s", strings.Join(tc.args, " "), tc.want, out)
		}
		none("manifold "+strings.Join(tc.args, " "), out)
	}
	status := httpGet(ctx, t, "http://"+hp.addr+"/status")
	if !strings.Contains(status, finding) || !strings.Contains(status, `"masked": true`) && !strings.Contains(status, `"masked":true`) {
		t.Errorf("GET /status does not show the masked review:\n%s", status)
	}
	none("GET /status", status)

	// Approve: the lock gets the masked form, the tools are served.
	out, err := manifoldCmd(ctx, t, "approve", "--config", cfg, "keyed")
	if err != nil || !strings.Contains(out, "Accepted 2 definitions") {
		t.Fatalf("approve keyed: %v\n%s", err, out)
	}
	none("manifold approve keyed", out)
	if l := lock(); !strings.Contains(l, `"keyed" tool "echo"`) || !strings.Contains(l, `"keyed" instructions`) || !strings.Contains(l, "masked {") || !strings.Contains(l, "[redacted]") {
		t.Errorf("the lock file after approve lacks the masked definitions:\n%s", l)
	}
	none("manifold.lock after approve", lock())
	waitFor(t, 10*time.Second, "keyed__echo served after approve", func() bool { return listedSet(ctx, t, cs)["keyed__echo"] })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, _ := json.Marshal(res)
	none("tools/list", string(listed))
	if !strings.Contains(string(listed), "Signing key: [redacted]") {
		t.Errorf("tools/list does not show the echoed secret masked:\n%s", listed)
	}

	// Another value of the secret: a change, caught by the fingerprint
	// over the true text, and still shown masked.
	setProcEnv(t, "E2E_PIN_SECRET="+second)
	stdout, stderr, _ := runCLI(t, "status", "--fresh", "--json", "--config", cfg)
	none("manifold status --fresh --json's stderr (another secret)", stderr)
	out = stdout
	var sts []struct {
		Name   string `json:"name"`
		Review []struct {
			Kind, Name, Change string
			Masked             bool
		} `json:"review"`
	}
	if err := json.Unmarshal([]byte(out), &sts); err != nil {
		t.Fatalf("status --fresh --json: %v\n%s", err, out)
	}
	var changed []string
	for _, st := range sts {
		for _, r := range st.Review {
			changed = append(changed, fmt.Sprintf("%s %s %q %s masked=%v", st.Name, r.Kind, r.Name, r.Change, r.Masked))
		}
	}
	slices.Sort(changed)
	if want := []string{`keyed instructions "" changed masked=true`, `keyed tool "echo" changed masked=true`}; !slices.Equal(changed, want) {
		t.Errorf("with another secret value, reviews = %q, want %q\n%s", changed, want, out)
	}
	none("manifold status --fresh --json (another secret)", out)
	out, _ = manifoldCmd(ctx, t, "approve", "--fresh", "--config", cfg, "-n", "keyed")
	if !strings.Contains(out, "the change is in a secret value of the config") {
		t.Errorf("approve -n with another secret value does not say where the change is:\n%s", out)
	}
	none("manifold approve -n (another secret)", out)

	// The log, the lock and the running instance's status file: no secret
	// either. (The catalog cache beside the status files is private state,
	// 0600, and keeps the true text: a lazy server's cached definitions are
	// fingerprinted from it before the server runs.)
	none("manifold serve's log", hp.stderr.String())
	none("manifold.lock at the end", lock())
	files, _ := filepath.Glob(filepath.Join(cache, "manifold", "run", "*.json"))
	if len(files) == 0 {
		t.Errorf("no status file of the running instance in %s", cache)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		none("status file "+f, string(b))
	}
}
