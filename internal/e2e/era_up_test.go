//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol.

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy"
)

// This file tests the upstream face of issue 11: which era manifold speaks
// to each server (probe, cache, pin), that every kind of server is reachable
// through it, that the probe is paid once, and what a hostile answer to the
// probe can and cannot do.

// eraInits reads the -count file of a fixture: the pids of the processes
// that got initialize, once per initialize.
func eraInits(t *testing.T, file string) (inits []string) {
	t.Helper()
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "initialize" {
			inits = append(inits, f[1])
		}
	}
	return inits
}

// eraCounts reads the -count file of a fixture: the pids of its starts and
// of the processes that got server/discover.
func eraCounts(t *testing.T, file string) (starts, discovers []string) {
	t.Helper()
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "start":
			starts = append(starts, f[1])
		case "discover":
			discovers = append(discovers, f[1])
		}
	}
	return starts, discovers
}

// httpStatus fetches GET /status from hp.
func httpStatus(ctx context.Context, t *testing.T, hp *httpProxy) map[string]proxy.ServerStatus {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hp.addr+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /status: %v", err)
	}
	defer resp.Body.Close()
	var sts []proxy.ServerStatus
	if err := json.NewDecoder(resp.Body).Decode(&sts); err != nil {
		t.Fatalf("GET /status: %v", err)
	}
	out := make(map[string]proxy.ServerStatus)
	for _, st := range sts {
		out[st.Name] = st
	}
	return out
}

// TestEraUpReachable: a modern-only server, a dual one, a legacy one, and
// legacy servers that ignore server/discover, exit on it, or answer it with
// garbage or a result that is not a DiscoverResult, all reachable through
// manifold (list and call), and each started once. Over HTTP every server
// serves clients of the initialize era (its requests go to its one caller),
// so each gets initialize first: only the modern-only server, which refuses
// it, gets server/discover, on the same process; status shows the era,
// version and where it came from. A stdio client of 2026-07-28 prefers that
// era: each server is probed once, a dual one is modern, and only a probe
// process that died costs a second one.
func TestEraUpReachable(t *testing.T) {
	t.Parallel()
	type server struct {
		name  string
		flags []string
		era   string // for a client of the initialize era
		// Processes of the first start, and server/discover requests
		// (to the first), for a client of the initialize era and for
		// one of 2026-07-28.
		starts, discovers             int
		modernStarts, modernDiscovers int
		probe                         string // probe_timeout: long for servers that answer, however loaded the machine
	}
	servers := []server{
		{"modern", []string{"-era", "modern"}, "modern", 1, 1, 1, 1, "30s"},
		// A server that speaks both eras, for a client of the initialize
		// era: that era, on one process (initialize first: the go-sdk
		// server refuses initialize after server/discover).
		{"dual", []string{"-era", "dual"}, "legacy", 1, 0, 1, 1, "30s"},
		{"legacy", nil, "legacy", 1, 0, 1, 1, "30s"},                            // -32022: the same process initializes
		{"ignore", []string{"-discover", "ignore"}, "legacy", 1, 0, 1, 1, "1s"}, // it answers the ping behind the probe
		{"exits", []string{"-discover", "exit"}, "legacy", 1, 0, 2, 1, "30s"},   // dead: only then a fresh process
		{"garbage", []string{"-discover", "garbage"}, "legacy", 1, 0, 1, 1, "1s"},
		{"notresult", []string{"-discover", "notresult"}, "legacy", 1, 0, 1, 1, "30s"},
	}
	config := func(dir string) string {
		var body strings.Builder
		body.WriteString("[catalog]\nmode = \"full\"\n") // the full list: the test looks for each server's tools in it
		for _, s := range servers {
			flags := append([]string{"-count", filepath.Join(dir, s.name)}, s.flags...)
			body.WriteString(fixture(s.name, flags, `probe_timeout = "`+s.probe+`"`))
		}
		return writeConfig(t, body.String())
	}
	counts := func(t *testing.T, dir, name string, wantStarts, wantDiscovers int) {
		t.Helper()
		starts, discovers := eraCounts(t, filepath.Join(dir, name))
		if len(starts) != wantStarts || len(discovers) != wantDiscovers || len(discovers) > 0 && discovers[0] != starts[0] {
			t.Errorf("%s: starts %v, discovers %v; want %d start(s) and %d server/discover, to the first", name, starts, discovers, wantStarts, wantDiscovers)
		}
	}
	t.Run("initialize era", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := config(dir)
		out, errOut, code := runCLI(t, "check", "--config", cfg)
		for _, want := range []string{"(protocol auto: probe of server/discover, 1s)", "(protocol auto: probe of server/discover, 30s)"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("check (exit %d) does not say %q:\n%s%s", code, want, out, errOut)
			}
		}
		hp := startHTTP(t, cfg)
		cs := connectHTTP(t, hp)
		ctx := testCtx(t)
		tools := listTools(ctx, t, cs)
		sts := httpStatus(ctx, t, hp)
		for _, s := range servers {
			if _, ok := tools[s.name+"__echo"]; !ok {
				t.Errorf("%s: %s__echo not listed", s.name, s.name)
				continue
			}
			res := call(ctx, t, cs, s.name+"__echo", map[string]any{"message": "via " + s.name})
			if res.IsError || !strings.Contains(text(res), s.name) {
				t.Errorf("%s: echo = %q (isError %v), want the server's echo", s.name, text(res), res.IsError)
			}
			counts(t, dir, s.name, s.starts, s.discovers)
			st := sts[s.name]
			wantVersion := "2025-11-25"
			if s.era == "modern" {
				wantVersion = "2026-07-28"
			}
			if st.Era != s.era || st.Protocol != wantVersion || st.EraSource != "probe" || st.ProbeMS == nil || st.Probe == "" {
				t.Errorf("%s: status era %q protocol %q source %q probe %q probe_ms %v; want %s, %s, probe, with its cost",
					s.name, st.Era, st.Protocol, st.EraSource, st.Probe, st.ProbeMS, s.era, wantVersion)
			}
		}
	})
	t.Run("2026-07-28", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		sp := startStdioClient(t, config(dir), e2eClient(), modernVersion)
		ctx := testCtx(t)
		for _, s := range servers {
			waitTool(ctx, t, sp.cs, s.name+"__echo")
			res := call(ctx, t, sp.cs, s.name+"__echo", map[string]any{"message": "via " + s.name})
			if res.IsError || !strings.Contains(text(res), s.name) {
				t.Errorf("%s: echo = %q (isError %v), want the server's echo", s.name, text(res), res.IsError)
			}
			counts(t, dir, s.name, s.modernStarts, s.modernDiscovers)
		}
	})
}

// TestEraUpProbePaidOnce: supervision restarts a crashed server from the
// cache: a legacy server that ignores server/discover gets none (its first
// start, for HTTP's clients of the initialize era, sent initialize first)
// and one initialize per process, a modern one gets one discover per
// process (its handshake) and initialize only at its first start, which it
// refused; status says "cache" and still shows the first start's probe.
func TestEraUpProbePaidOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := fixture("ignore", []string{"-count", filepath.Join(dir, "ignore"), "-discover", "ignore"}, `probe_timeout = "1s"`) +
		fixture("modern", []string{"-count", filepath.Join(dir, "modern"), "-era", "modern"}, `probe_timeout = "30s"`)
	hp := startHTTP(t, writeConfig(t, body))
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	listTools(ctx, t, cs)
	for _, name := range []string{"ignore", "modern"} {
		old := text(call(ctx, t, cs, name+"__pid", nil))
		_, _ = callBounded(ctx, cs, name+"__crash", nil, 10*time.Second)
		var now string
		waitFor(t, 30*time.Second, name+" back with a new process", func() bool {
			res, err := callBounded(ctx, cs, name+"__pid", nil, 10*time.Second)
			if err != nil || res.IsError {
				return false
			}
			now = text(res)
			return now != old
		})
		starts, discovers := eraCounts(t, filepath.Join(dir, name))
		inits := eraInits(t, filepath.Join(dir, name))
		switch name {
		case "ignore":
			if len(starts) != 2 || len(discovers) != 0 || len(inits) != 2 || inits[0] != starts[0] || inits[1] != starts[1] {
				t.Errorf("ignore: starts %v, discovers %v, initializes %v; want 2 starts (initialize first, restart), no discover, one initialize each", starts, discovers, inits)
			}
		case "modern":
			if len(starts) != 2 || len(discovers) != 2 || len(inits) != 1 || inits[0] != starts[0] {
				t.Errorf("modern: starts %v, discovers %v, initializes %v; want 2 starts, 2 discovers (one handshake each) and the initialize it refused, to the first", starts, discovers, inits)
			}
		}
		if starts[len(starts)-1] != now {
			t.Errorf("%s: serving pid %s, want the last started %s", name, now, starts[len(starts)-1])
		}
	}
	sts := httpStatus(ctx, t, hp)
	for name, era := range map[string]string{"ignore": "legacy", "modern": "modern"} {
		st := sts[name]
		if st.EraSource != "cache" || st.Era != era || st.ProbeMS == nil {
			t.Errorf("%s after restart: era %q source %q probe_ms %v; want %s from the cache with the probe's cost", name, st.Era, st.EraSource, st.ProbeMS, era)
		}
	}
}

// TestEraUpPins: protocol = "legacy" sends no server/discover, even to a
// server that speaks both eras; protocol = "2026-07-28" against a legacy
// server fails with an error that names the pin and the fix.
func TestEraUpPins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := fixture("pinlegacy", []string{"-count", filepath.Join(dir, "pinlegacy"), "-era", "dual"}, `protocol = "legacy"`) +
		fixture("pinmodern", []string{"-discover", "methodnotfound"}, `protocol = "2026-07-28"`, `startup_timeout = "2s"`) +
		fixture("pinned", []string{"-era", "modern"}, `protocol = "2026-07-28"`)
	cfg := writeConfig(t, body)
	out, errOut, code := runCLI(t, "check", "--config", cfg)
	for _, want := range []string{"(protocol legacy (pinned; no probe))", "(protocol 2026-07-28 (pinned))"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("check (exit %d) does not say %q:\n%s%s", code, want, out, errOut)
		}
	}
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	tools := listTools(ctx, t, cs)
	for _, name := range []string{"pinlegacy__echo", "pinned__echo"} {
		if _, ok := tools[name]; !ok {
			t.Errorf("%s not listed", name)
		}
	}
	if res := call(ctx, t, cs, "pinned__echo", map[string]any{"message": "x"}); res.IsError {
		t.Errorf("pinned__echo: %s", text(res))
	}
	if _, discovers := eraCounts(t, filepath.Join(dir, "pinlegacy")); len(discovers) != 0 {
		t.Errorf("pinlegacy got server/discover %d times, want none", len(discovers))
	}
	var st proxy.ServerStatus
	waitFor(t, 20*time.Second, "pinmodern's failure in status", func() bool {
		st = httpStatus(ctx, t, hp)["pinmodern"]
		return st.Err != ""
	})
	if !strings.Contains(st.Err, `protocol = "2026-07-28" is pinned`) || !strings.Contains(st.Err, "-32601") || !strings.Contains(st.Err, `set protocol = "auto"`) {
		t.Errorf("pinmodern error = %q; want it to name the pin, what the server answered and the fix", st.Err)
	}
	sts := httpStatus(ctx, t, hp)
	if got := sts["pinlegacy"]; got.EraSource != "pin" || got.Era != "legacy" || got.ProbeMS != nil {
		t.Errorf("pinlegacy: era %q source %q probe_ms %v; want legacy from a pin, no probe", got.Era, got.EraSource, got.ProbeMS)
	}
	if got := sts["pinned"]; got.EraSource != "pin" || got.Era != "modern" || got.Protocol != "2026-07-28" {
		t.Errorf("pinned: era %q source %q protocol %q; want modern 2026-07-28 from a pin", got.Era, got.EraSource, got.Protocol)
	}
	out, errOut, _ = runCLI(t, "status", "--url", "http://"+hp.addr)
	for _, want := range []string{"PROTOCOL", "2026-07-28 modern (pin)", "2025-11-25 legacy (pin)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not show %q:\n%s%s", want, out, errOut)
		}
	}
}

// TestEraUpHostileProbe: a probe answered with a frame over the size limit,
// with an id that was not asked, or with a DiscoverResult whose serverInfo
// and instructions hold newlines, escape sequences and megabytes: the first
// two are legacy servers initialized on the probed process; the hostile one is
// modern, and what it says is bounded and stripped of control characters
// before it reaches the client, over stdio, whose stdout stays frames only.
// The client speaks 2026-07-28, so that every server is probed (a client of
// the initialize era has each initialized first).
func TestEraUpHostileProbe(t *testing.T) {
	t.Parallel()
	body := "max_message_bytes = 1048576\n" +
		fixture("huge", []string{"-discover", "huge", "-huge", "2000000"}, `probe_timeout = "1s"`) +
		fixture("wrongid", []string{"-discover", "wrongid"}, `probe_timeout = "1s"`) +
		// The verdict must be modern here, however loaded the machine.
		fixture("hostile", []string{"-discover", "hostile", "-era", "dual"}, `instructions = true`, `max_message_bytes = 16777216`, `probe_timeout = "30s"`)
	sp := startStdioClient(t, writeConfig(t, body), e2eClient(), modernVersion)
	ctx := testCtx(t)
	tools := listTools(ctx, t, sp.cs)
	for _, name := range []string{"huge", "wrongid", "hostile"} {
		if _, ok := tools[name+"__echo"]; !ok {
			t.Errorf("%s__echo not listed", name)
			continue
		}
		if res := call(ctx, t, sp.cs, name+"__echo", map[string]any{"message": name}); res.IsError {
			t.Errorf("%s__echo: %s", name, text(res))
		}
	}
	// Its line in the summary is the start of what it said, on one line,
	// without the escape sequences; its whole text (opted in) does not fit
	// in the summary's 2 KB and is left out.
	ins := sp.cs.InitializeResult().Instructions
	if !strings.Contains(ins, "- hostile: line one line two red MMMM") || strings.Contains(ins, "## hostile") {
		t.Errorf("instructions lack the hostile server's (bounded) line: %.400q", ins)
	}
	if len(ins) >= 2048 || strings.ContainsAny(ins, "\x1b\x07\u202e\r") || strings.Contains(ins, "[31m") {
		t.Errorf("instructions: %d bytes, control characters kept: %.300q", len(ins), ins)
	}
}

// TestEraUpModernRelays: through a modern upstream, for a legacy client:
// paginated lists, list_changed reaches the proxy's refresh (over the SDK's
// subscriptions/listen), a resource subscription becomes a listen stream
// whose resources/updated comes back rewritten, the client's log level
// travels per request (no logging/setLevel), progress and cancellation work
// on the raw call path, and prompts and completion answer.
func TestEraUpModernRelays(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	rec := newRecorder("e2e")
	// pin = "warn": the toggled tool is new, which the default pin would
	// hold for review (pin_test.go); this test is about the relays.
	cfg := writeConfig(t, "pin = \"warn\"\n"+fixture("modern", []string{"-era", "modern", "-extra", "toggle,touch,log,progress", "-record", record, "-pages", "3"}, `probe_timeout = "30s"`))
	sp := startStdioClient(t, cfg, rec.client(), protocolVersion)
	ctx := testCtx(t)
	waitTool(ctx, t, sp.cs, "modern__toggle")
	// Pages of three: every tool is listed.
	if tools := listTools(ctx, t, sp.cs); len(tools) < 16 {
		t.Errorf("listed %d tools of the modern server, want its 12 default and 4 extra ones: %v", len(tools), toolNames(tools))
	}

	// list_changed
	if res := call(ctx, t, sp.cs, "modern__toggle", nil); res.IsError {
		t.Fatalf("toggle: %s", text(res))
	}
	waitTool(ctx, t, sp.cs, "modern__toggled")

	// resources/subscribe -> subscriptions/listen -> resources/updated
	var uri string
	for r, err := range sp.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		if strings.HasSuffix(r.URI, "readme.txt") {
			uri = r.URI
		}
	}
	if uri == "" {
		t.Fatal("no readme resource listed")
	}
	if err := sp.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	eventually(ctx, t, func() string {
		if res := call(ctx, t, sp.cs, "modern__touch", nil); res.IsError {
			return "touch: " + text(res)
		}
		got := false
		rec.snapshot(func() { got = slices.Contains(rec.updated, uri) })
		if !got {
			return "no resources/updated for " + uri
		}
		return ""
	})

	// The per-request log level.
	if err := sp.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	if res := call(ctx, t, sp.cs, "modern__log", map[string]any{"level": "debug", "data": "below the level"}); res.IsError {
		t.Fatalf("log: %s", text(res))
	}
	if res := call(ctx, t, sp.cs, "modern__log", map[string]any{"level": "warning", "data": "modern says hi"}); res.IsError {
		t.Fatalf("log: %s", text(res))
	}
	rec.await(ctx, t, "the modern server's log message", func() bool {
		return slices.ContainsFunc(rec.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == "modern says hi" })
	})
	rec.snapshot(func() {
		if slices.ContainsFunc(rec.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == "below the level" }) {
			t.Error("a debug message below the client's level info was relayed")
		}
	})

	// Progress on the raw path.
	params := &mcp.CallToolParams{Name: "modern__progress", Arguments: map[string]any{"steps": 3, "tag": "m"}}
	params.SetProgressToken("tok-modern")
	if res, err := sp.cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("progress: %v %v", err, res)
	}
	rec.await(ctx, t, "three progress notifications", func() bool { return len(rec.progress) >= 3 })

	// Cancellation on the raw path.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := sp.cs.CallTool(cctx, &mcp.CallToolParams{Name: "modern__sleep", Arguments: map[string]any{"ms": 60000}})
	cancel()
	if err == nil {
		t.Fatal("sleep returned before its cancellation")
	}
	waitFor(t, 10*time.Second, "the modern server to see the cancellation", func() bool {
		b, _ := os.ReadFile(record)
		return strings.Contains(string(b), "cancelled modern")
	})

	// Prompts and completion.
	gp, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "modern__greet", Arguments: map[string]string{"who": "era"}})
	if err != nil || len(gp.Messages) == 0 {
		t.Fatalf("prompts/get: %v %v", err, gp)
	}
	if _, err := sp.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "modern__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}}); err != nil {
		t.Fatalf("completion/complete: %v", err)
	}
	// The modern-only fixture refuses (and logs) the methods 2026-07-28
	// removed: none was sent.
	if strings.Contains(sp.stderr.String(), "refused removed method") {
		t.Errorf("manifold sent a modern server a removed method:\n%s", sp.stderr.String())
	}
}

// TestEraUpPerSessionFromCache: with isolation = "session", each HTTP
// client's own process comes from the era cache: a legacy server that
// ignores server/discover is probed once, whatever the number of sessions.
func TestEraUpPerSessionFromCache(t *testing.T) {
	t.Parallel()
	count := filepath.Join(t.TempDir(), "iso")
	hp := startHTTP(t, writeConfig(t, fixture("iso", []string{"-count", count, "-discover", "ignore", "-tools", "pid"},
		`isolation = "session"`, `probe_timeout = "1s"`)))
	ctx := testCtx(t)
	a, b := connectHTTP(t, hp), connectHTTP(t, hp)
	waitTool(ctx, t, a, "iso__pid")
	pidA, pidB := text(call(ctx, t, a, "iso__pid", nil)), text(call(ctx, t, b, "iso__pid", nil))
	if pidA == pidB {
		t.Fatalf("both sessions reached process %s, want one each", pidA)
	}
	starts, discovers := eraCounts(t, count)
	// The shared process (probed, then initialized), then one per session.
	if len(starts) != 3 || len(discovers) != 1 || discovers[0] != starts[0] {
		t.Errorf("starts %v, discovers %v; want 3 starts (shared, two sessions) and one discover, to the first", starts, discovers)
	}
}

// TestEraUpCacheAcrossRuns: the era cache outlives one run of manifold (a
// client that launches it for each session): the second run says each
// server's era came from the cache, and does not pay again what the first
// learned it with: the initialize a modern-only server refused (the first
// run's client, of the initialize era, had it sent first). A legacy server
// that ignores server/discover gets none in either run.
func TestEraUpCacheAcrossRuns(t *testing.T) {
	// Not parallel: Setenv (the cache folder).
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := t.TempDir()
	cfg := writeConfig(t, fixture("slow", []string{"-count", filepath.Join(dir, "slow"), "-discover", "ignore", "-tools", "pid"}, `probe_timeout = "1s"`)+
		fixture("modern", []string{"-count", filepath.Join(dir, "modern"), "-era", "modern", "-tools", "pid"}, `probe_timeout = "30s"`))
	sources := map[string][]string{}
	for run := range 2 {
		out, errOut, code := runCLI(t, "status", "--fresh", "--json", "--config", cfg)
		var sts []proxy.ServerStatus
		if err := json.Unmarshal([]byte(out), &sts); code != 0 || err != nil || len(sts) != 2 {
			t.Fatalf("run %d: status exited %d (%v):\n%s%s", run+1, code, err, out, errOut)
		}
		for _, st := range sts {
			sources[st.Name] = append(sources[st.Name], st.EraSource)
		}
	}
	if diff := cmp.Diff(map[string][]string{"slow": {"probe", "cache"}, "modern": {"probe", "cache"}}, sources); diff != "" {
		t.Errorf("era sources of the two runs (-want +got):\n%s", diff)
	}
	starts, discovers := eraCounts(t, filepath.Join(dir, "slow"))
	if inits := eraInits(t, filepath.Join(dir, "slow")); len(starts) != 2 || len(discovers) != 0 || len(inits) != 2 {
		t.Errorf("slow: starts %v, discovers %v, initializes %v; want 2 starts (one per run), no discover, one initialize each", starts, discovers, inits)
	}
	starts, discovers = eraCounts(t, filepath.Join(dir, "modern"))
	if inits := eraInits(t, filepath.Join(dir, "modern")); len(starts) != 2 || len(discovers) != 2 || len(inits) != 1 || inits[0] != starts[0] {
		t.Errorf("modern: starts %v, discovers %v, initializes %v; want 2 starts, one discover each (its handshake), and the refused initialize in the first run only", starts, discovers, inits)
	}
	if _, err := os.Stat(filepath.Join(cache, "manifold", "eras.json")); err != nil {
		t.Errorf("no era cache file: %v", err)
	}
}
