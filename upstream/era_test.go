//lint:file-ignore SA1019 roots and sampling are part of the protocol versions the proxy serves

//go:build linux

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eraEvents returns the pids of the fixture's "start" and "discover" events.
func eraEvents(t *testing.T, opts Options) (starts, discovers []int) {
	t.Helper()
	b, _ := os.ReadFile(eventFile(opts))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		switch f[0] {
		case "start":
			starts = append(starts, pid)
		case "discover":
			discovers = append(discovers, pid)
		}
	}
	return starts, discovers
}

// TestProbeOutcomes: what the server answers to server/discover decides the
// era; a failed probe is followed by initialize on the same process, unless
// that process exited (then a fresh one, and the probe process is gone); a
// second start with the same cache does not probe a legacy server again.
func TestProbeOutcomes(t *testing.T) {
	tests := []struct {
		mode    string
		modern  bool
		version string
		fresh   bool   // the session runs in a second process
		probe   string // EraInfo.Probe contains
	}{
		{mode: "modern", modern: true, version: ModernVersion, probe: "discover result"},
		{mode: "dual", modern: true, version: ModernVersion, probe: "discover result"}, // both eras: modern wins
		{mode: "legacy", version: "2025-11-25", probe: "error -32022"},
		{mode: "d-methodnotfound", version: "2025-11-25", probe: "error -32601"},
		{mode: "d-error", version: "2025-11-25", probe: "error -32000"},
		{mode: "d-ignore", version: "2025-11-25", probe: "answered the ping"},
		{mode: "d-exit", version: "2025-11-25", fresh: true, probe: "exited"},
		{mode: "d-garbage", version: "2025-11-25", probe: "answered the ping"},
		{mode: "d-notresult", version: "2025-11-25", probe: "not a DiscoverResult"},
		{mode: "d-no2026", version: "2025-11-25", probe: "without 2026-07-28"},
		{mode: "d-wrongid", version: "2025-11-25", probe: "answered the ping"},
		// Deaf to server/discover and to ping: initialize after the
		// probe's wait, on the same process.
		{mode: "d-deaf", version: "2025-11-25", probe: "no answer within 300ms"},
		// Garbage, and nothing answered: this process is not trusted.
		{mode: "d-deafgarbage", version: "2025-11-25", fresh: true, probe: "not JSON-RPC"},
		// A modern-only server slower to start than the probe waits: its
		// late DiscoverResult wins over the initialize it refused.
		{mode: "d-slowmodern", modern: true, version: ModernVersion, fresh: true, probe: "(late)"},
		// Messages before the answer are dropped; they must not hold it up.
		{mode: "d-chatty", modern: true, version: ModernVersion, probe: "discover result"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			opts := fixtureOptions(t, tc.mode)
			if strings.Contains(tc.probe, "no answer") || tc.mode == "d-deafgarbage" || tc.mode == "d-slowmodern" {
				opts.ProbeTimeout = 300 * time.Millisecond // silence: the probe must give up
			}
			opts.Eras = NewEraCache()
			u := start(t, opts)
			era := u.Era()
			if era.Modern != tc.modern || era.Version != tc.version || era.Source != SourceProbe {
				t.Errorf("Era() = %+v, want modern %v, version %s, source probe", era, tc.modern, tc.version)
			}
			if !strings.Contains(era.Probe, tc.probe) {
				t.Errorf("Era().Probe = %q, want it to contain %q", era.Probe, tc.probe)
			}
			if era.ProbeCost <= 0 {
				t.Errorf("Era().ProbeCost = %v, want > 0", era.ProbeCost)
			}
			raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"a":1}}`))
			if err != nil {
				t.Fatalf("CallToolRaw: %v", err)
			}
			if got := toolText(t, raw); got != `{"a":1}` {
				t.Errorf("echo = %s, want {\"a\":1}", got)
			}
			starts, discovers := eraEvents(t, opts)
			wantStarts := 1
			if tc.fresh {
				wantStarts = 2
			}
			probes := discovers
			if tc.mode == "d-slowmodern" && len(discovers) == 2 && len(starts) == 2 && discovers[1] == starts[1] {
				// The go-sdk answers initialize before the discover ahead
				// of it (which it handles concurrently): the fresh process
				// then gets the SDK's own discover as its handshake.
				probes = discovers[:1]
			}
			if len(starts) != wantStarts || len(probes) != 1 || probes[0] != starts[0] {
				t.Fatalf("starts %v, discovers %v: want %d starts and one discover, to the first", starts, discovers, wantStarts)
			}
			if got := u.PID(); got != starts[len(starts)-1] {
				t.Errorf("PID() = %d, want the last started %d", got, starts[len(starts)-1])
			}
			if tc.fresh && !processGone(starts[0]) {
				t.Errorf("probe process %d still runs", starts[0])
			}
			closeWithin(t, u)

			// The second start is served from the cache: a legacy server
			// gets no server/discover at all, a modern one exactly the one
			// that is its handshake.
			u2 := start(t, opts)
			if era := u2.Era(); era.Source != SourceCache || era.Modern != tc.modern || era.Probe != "" && !tc.modern {
				t.Errorf("second start: Era() = %+v, want source cache, modern %v", era, tc.modern)
			}
			starts2, discovers2 := eraEvents(t, opts)
			if got, want := len(starts2)-len(starts), 1; got != want {
				t.Errorf("second start started %d processes, want %d", got, want)
			}
			wantDiscovers := 0
			if tc.modern {
				wantDiscovers = 1
			}
			if got := len(discovers2) - len(discovers); got != wantDiscovers {
				t.Errorf("second start sent %d server/discover, want %d", got, wantDiscovers)
			}
			if opts.Eras.Len() != 1 {
				t.Errorf("cache holds %d servers, want 1", opts.Eras.Len())
			}
		})
	}
}

// TestProtocolPins: "legacy" sends no server/discover; "2026-07-28" against
// a server without it fails and says what to do.
func TestProtocolPins(t *testing.T) {
	t.Run("legacy", func(t *testing.T) {
		opts := fixtureOptions(t, "modern")
		opts.Protocol = ProtocolLegacy
		opts.StartupTimeout = 5 * time.Second
		if _, err := Start(t.Context(), opts); err == nil {
			t.Fatal("Start of a modern-only server pinned to legacy succeeded")
		}
		opts = fixtureOptions(t, "legacy")
		opts.Protocol = ProtocolLegacy
		u := start(t, opts)
		if era := u.Era(); era.Source != SourcePin || era.Modern {
			t.Errorf("Era() = %+v, want a legacy pin", era)
		}
		if _, discovers := eraEvents(t, opts); len(discovers) != 0 {
			t.Errorf("server/discover sent %d times, want none", len(discovers))
		}
	})
	for _, mode := range []string{"legacy", "d-methodnotfound", "d-ignore"} {
		t.Run("modern against "+mode, func(t *testing.T) {
			opts := fixtureOptions(t, mode)
			opts.Protocol = ProtocolModern
			opts.StartupTimeout = 500 * time.Millisecond
			_, err := Start(t.Context(), opts)
			if err == nil || !strings.Contains(err.Error(), `protocol = "2026-07-28" is pinned`) || !strings.Contains(err.Error(), `set protocol = "auto"`) {
				t.Fatalf("Start = %v, want an error that names the pin and the fix", err)
			}
			starts, _ := eraEvents(t, opts)
			for _, pid := range starts {
				waitFor(t, "the process to be gone", func() bool { return processGone(pid) })
			}
		})
	}
	t.Run("modern", func(t *testing.T) {
		opts := fixtureOptions(t, "modern")
		opts.Protocol = ProtocolModern
		u := start(t, opts)
		if era := u.Era(); era.Source != SourcePin || !era.Modern {
			t.Errorf("Era() = %+v, want a modern pin", era)
		}
	})
}

// TestCachedModernFallsBack: a server cached as modern that no longer
// answers server/discover is initialized on the same process, and the cache
// is corrected.
func TestCachedModernFallsBack(t *testing.T) {
	opts := fixtureOptions(t, "d-methodnotfound")
	opts.Eras = NewEraCache()
	opts.Eras.put(childEraKey(opts), true)
	u := start(t, opts)
	if era := u.Era(); era.Modern || era.Source != SourceProbe {
		t.Errorf("Era() = %+v, want legacy from a probe", era)
	}
	if modern, ok := opts.Eras.get(childEraKey(opts)); !ok || modern {
		t.Errorf("cache = %v, %v; want legacy", modern, ok)
	}
	starts, _ := eraEvents(t, opts)
	if len(starts) != 1 || u.PID() != starts[0] {
		t.Errorf("starts %v, PID %d: want the one process", starts, u.PID())
	}
}

func TestWithMeta(t *testing.T) {
	m := []metaMember{{metaVersion, json.RawMessage(`"2026-07-28"`)}, {metaCaps, json.RawMessage(`{}`)}}
	tests := []struct{ in, want string }{
		{`{"name":"x"}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}`},
		{`{}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`},
		{`{"_meta":{}}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`},
		// Keys the proxy set win.
		{`{"name":"x","_meta":{"progressToken":1,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`,
			`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`},
		// An escaped key is decoded: no second _meta slips past.
		{`{"_m\u0065ta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"name":"x"}`,
			`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"name":"x"}`},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`},
	}
	for _, tc := range tests {
		got := string(withMeta([]byte(tc.in), m))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("withMeta(%s) (-want +got):\n%s", tc.in, diff)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("withMeta(%s) = %s: not JSON", tc.in, got)
		}
	}
}

func TestSanitize(t *testing.T) {
	in := strings.Repeat("x", 100) + "\x1b[31m\u202e\n\tend"
	if got := clean(in, 50); len(got) > 50 || strings.ContainsAny(got, "\x1b\u202e\n") {
		t.Errorf("clean = %q: want at most 50 bytes, no controls", got)
	}
	if got := stripControls(in, true); !strings.HasSuffix(got, "\n\tend") || strings.ContainsAny(got, "\x1b\u202e") || strings.Contains(got, "[31m") {
		t.Errorf("stripControls(keepLines) = %q", got)
	}
	if got := bound(strings.Repeat("é", maxInstructions), maxInstructions); len(got) > maxInstructions || !strings.HasSuffix(got, "…(truncated)") {
		t.Errorf("bound: %d bytes, suffix %q", len(got), got[len(got)-20:])
	}
}

// TestRemoteEra: a stateless streamable server is modern, a stateful one
// (which serves 2026-07-28 only statelessly) falls back to initialize; the
// origin's era is cached; a raw call works in both.
func TestRemoteEra(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
		modern    bool
	}{{"stateful", false, false}, {"stateless", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer()
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: tc.stateless})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			opts := Options{Name: "remote", URL: ts.URL, StopGrace: 200 * time.Millisecond, Eras: NewEraCache()}
			for i, source := range []string{SourceProbe, SourceCache} {
				u := start(t, opts)
				if era := u.Era(); era.Modern != tc.modern || era.Source != source {
					t.Errorf("start %d: Era() = %+v, want modern %v from %s", i+1, era, tc.modern, source)
				}
				raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"r":1}}`))
				if err != nil {
					t.Fatalf("start %d: CallToolRaw: %v", i+1, err)
				}
				if got := toolText(t, raw); got != `{"r":1}` {
					t.Errorf("start %d: echo = %s", i+1, got)
				}
				closeWithin(t, u)
			}
		})
	}
}

// TestRemoteProbeTimeout: a remote server that never answers server/discover
// is reached at the initialize era once probe_timeout has passed.
func TestRemoteProbeTimeout(t *testing.T) {
	srv := newFixtureServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "server/discover" {
			hangHandler(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	u := start(t, Options{Name: "remote", URL: ts.URL, StopGrace: 200 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond, StartupTimeout: 20 * time.Second})
	if era := u.Era(); era.Modern || era.Source != SourceProbe {
		t.Errorf("Era() = %+v, want legacy from a probe", era)
	}
}

// TestOfferedCapsMatchSDK: the capabilities the probe (and the raw path)
// declares are the ones the SDK client declares in its own discover.
func TestOfferedCapsMatchSDK(t *testing.T) {
	elicit := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }
	sample := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) { return nil, nil }
	for _, co := range []*mcp.ClientOptions{
		nil,
		{ElicitationHandler: elicit, CreateMessageHandler: sample},
		{Capabilities: &mcp.ClientCapabilities{}, ElicitationHandler: elicit},
		{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}, Experimental: map[string]any{"x": true}}},
	} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, nil)
		var got any
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "server/discover" {
					b, _ := json.Marshal(req.GetParams().GetMeta()[metaCaps])
					_ = json.Unmarshal(b, &got)
				}
				return next(ctx, method, req)
			}
		})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		var copts mcp.ClientOptions
		if co != nil {
			copts = *co
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, &copts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: ModernVersion})
		if err != nil {
			t.Fatal(err)
		}
		var want any
		_ = json.Unmarshal(offeredCaps(Options{Client: co}), &want)
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("options %+v: offeredCaps (-SDK +ours):\n%s", co, diff)
		}
		_ = cs.Close()
		_ = ss.Close()
	}
}

// TestInputRequiredReachesCaller: a modern server's input_required result
// comes back as it is, on the raw path and through the SDK (whose automatic
// fulfilment is off), for the proxy to bridge.
func TestInputRequiredReachesCaller(t *testing.T) {
	srv := newFixtureServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	for name, opts := range map[string]Options{
		"stdio":  fixtureOptions(t, "modern"),
		"remote": {Name: "remote", URL: ts.URL, StopGrace: 200 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			u := start(t, opts)
			if !u.Modern() {
				t.Fatalf("Era() = %+v, want modern", u.Era())
			}
			raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"ask"}`))
			if err != nil {
				t.Fatalf("CallToolRaw: %v", err)
			}
			var res struct {
				ResultType    string         `json:"resultType"`
				RequestState  string         `json:"requestState"`
				InputRequests map[string]any `json:"inputRequests"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if res.ResultType != "input_required" || res.RequestState != "state-1" || res.InputRequests["q"] == nil {
				t.Errorf("result = %s, want the input_required result as the server sent it", raw)
			}
		})
	}
}

// TestEraCacheFile: a verdict survives into a new cache on the same file,
// stale entries are ignored, and the file holds no key in clear (keys carry
// the servers' environment).
func TestEraCacheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "eras.json")
	const key = `cmd:{"Env":["TOKEN=s3cret-value"]}`
	a := NewEraCacheFile(path, time.Hour, nil)
	if _, ok := a.get(key); ok {
		t.Fatal("a new cache knows the key")
	}
	a.put(key, true)
	a.put("other", false)
	b := NewEraCacheFile(path, time.Hour, nil)
	if modern, ok := b.get(key); !ok || !modern {
		t.Errorf("reloaded cache: get = %v, %v; want modern", modern, ok)
	}
	if modern, ok := b.get("other"); !ok || modern {
		t.Errorf("reloaded cache: get(other) = %v, %v; want legacy", modern, ok)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "s3cret") || strings.Contains(string(data), "TOKEN") {
		t.Errorf("the cache file holds a key in clear: %s", data)
	}
	if c := NewEraCacheFile(path, time.Nanosecond, nil); c.Len() != 0 {
		t.Errorf("entries older than maxAge were loaded: %d", c.Len())
	}
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := NewEraCacheFile(path, time.Hour, nil); c.Len() != 0 {
		t.Errorf("an unreadable file gave %d entries", c.Len())
	}
}

// TestEraCacheFileBounded: a file that holds more than maxEraEntries
// fresh entries (left by other configs and runs) is cut to the newest ones
// when a verdict is written, the new verdict kept.
func TestEraCacheFileBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eras.json")
	old := make(map[string]eraEntry)
	now := time.Now().UTC()
	for i := range maxEraEntries + 100 {
		// Entry i is i minutes old.
		old[fmt.Sprintf("%032x", i)] = eraEntry{Modern: i%2 == 0, At: now.Add(-time.Duration(i) * time.Minute)}
	}
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewEraCacheFile(path, 24*time.Hour, nil)
	c.put("new server", true)
	var got map[string]eraEntry
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != maxEraEntries {
		t.Errorf("the file holds %d entries, want %d", len(got), maxEraEntries)
	}
	if e, ok := got[hashKey("new server")]; !ok || !e.Modern {
		t.Errorf("the new verdict is not in the file: %v, %v", e, ok)
	}
	for i := range maxEraEntries + 100 {
		_, kept := got[fmt.Sprintf("%032x", i)]
		if want := i < maxEraEntries-1; kept != want {
			t.Errorf("entry %d minutes old: kept %v, want %v", i, kept, want)
		}
	}
	if b := NewEraCacheFile(path, 24*time.Hour, nil); b.Len() != maxEraEntries {
		t.Errorf("reloaded: %d entries, want %d", b.Len(), maxEraEntries)
	}
}

// TestModernNoPingNoSetLevel: a modern server gets no keep-alive ping and
// no logging/setLevel; the log level goes in the _meta of later requests.
func TestModernNoPingNoSetLevel(t *testing.T) {
	opts := fixtureOptions(t, "modern")
	opts.Client = &mcp.ClientOptions{KeepAlive: 20 * time.Millisecond}
	u := start(t, opts)
	if err := u.SetLogLevel(callCtx(t), "debug"); err != nil {
		t.Fatalf("SetLogLevel: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // ten keep-alive intervals
	if _, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo"}`)); err != nil {
		t.Fatalf("CallToolRaw: %v", err)
	}
	b, _ := os.ReadFile(eventFile(opts))
	if strings.Contains(string(b), "removed") {
		t.Errorf("the modern server got removed methods:\n%s", b)
	}
	if m := u.child.meta.Load(); m == nil || !slices.ContainsFunc(*m, func(mm metaMember) bool { return mm.key == metaLogLevel && string(mm.value) == `"debug"` }) {
		t.Error("the raw path's _meta lacks the log level")
	}
}

// TestCachedLegacyFailsProbesAgain: a server cached as legacy whose
// initialize fails (it became modern-only) is probed at its next start.
func TestCachedLegacyFailsProbesAgain(t *testing.T) {
	opts := fixtureOptions(t, "modern")
	opts.StartupTimeout = 5 * time.Second
	opts.Eras = NewEraCache()
	opts.Eras.put(childEraKey(opts), false)
	if _, err := Start(t.Context(), opts); err == nil {
		t.Fatal("initialize of a modern-only server succeeded")
	}
	u := start(t, opts)
	if era := u.Era(); !era.Modern || era.Source != SourceProbe {
		t.Errorf("Era() = %+v, want modern from a probe", era)
	}
}

// eraInits returns the pids of the fixture's "initialize" events: one per
// initialize the server read.
func eraInits(t *testing.T, opts Options) (inits []int) {
	t.Helper()
	b, _ := os.ReadFile(eventFile(opts))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "initialize" {
			if pid, err := strconv.Atoi(f[1]); err == nil {
				inits = append(inits, pid)
			}
		}
	}
	return inits
}

// TestDualPrefersLegacy: a server that speaks both eras is spoken to in the
// initialize era when Options.PreferLegacy says its client speaks that era:
// on its first start with one process, which gets one initialize (sent
// first, its result replayed to the SDK) and no server/discover, and from
// the cache at the next start, again with no probe. Without PreferLegacy a
// start probes it (the initialize said nothing of 2026-07-28): it is modern,
// and says it speaks both; a start with PreferLegacy then takes that from
// the cache.
func TestDualPrefersLegacy(t *testing.T) {
	opts := fixtureOptions(t, "dual")
	opts.Eras = NewEraCache()
	opts.PreferLegacy = true
	u := start(t, opts)
	if era := u.Era(); era.Modern || era.Version != "2025-11-25" || era.Source != SourceProbe || !strings.Contains(era.Probe, "initialize answered") {
		t.Errorf("Era() = %+v, want 2025-11-25 from an initialize sent first", era)
	}
	starts, discovers := eraEvents(t, opts)
	if len(starts) != 1 || len(discovers) != 0 || u.PID() != starts[0] {
		t.Fatalf("starts %v, discovers %v, PID %d: want one process, no server/discover", starts, discovers, u.PID())
	}
	if inits := eraInits(t, opts); len(inits) != 1 || inits[0] != starts[0] {
		t.Fatalf("initialize events %v, want one, to %d (the SDK's own is answered from the first)", inits, starts[0])
	}
	if raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"a":1}}`)); err != nil || toolText(t, raw) != `{"a":1}` {
		t.Fatalf("echo: %s, %v", raw, err)
	}
	if modern, ok := opts.Eras.get(childEraKey(opts)); !ok || modern || !opts.Eras.byInitialize(childEraKey(opts)) {
		t.Errorf("cache: modern %v, ok %v, byInitialize %v; want the initialize era, learned from its initialize", modern, ok, opts.Eras.byInitialize(childEraKey(opts)))
	}
	closeWithin(t, u)

	u = start(t, opts)
	if era := u.Era(); era.Modern || era.Source != SourceCache {
		t.Errorf("second start: Era() = %+v, want legacy from the cache", era)
	}
	if starts, discovers := eraEvents(t, opts); len(starts) != 2 || len(discovers) != 0 {
		t.Errorf("second start: starts %v, discovers %v; want one more start and no probe", starts, discovers)
	}
	closeWithin(t, u)

	opts.PreferLegacy = false
	u = start(t, opts)
	if era := u.Era(); !era.Modern || !era.Dual || era.Source != SourceProbe {
		t.Errorf("without PreferLegacy: Era() = %+v, want modern, dual, from a probe", era)
	}
	if starts, discovers := eraEvents(t, opts); len(starts) != 3 || len(discovers) != 1 || discovers[0] != starts[2] {
		t.Errorf("without PreferLegacy: starts %v, discovers %v; want the third start probed", starts, discovers)
	}
	if !opts.Eras.dual(childEraKey(opts)) {
		t.Error("cache does not hold the server as speaking both eras after the probe")
	}
	closeWithin(t, u)

	opts.PreferLegacy = true
	u = start(t, opts)
	if era := u.Era(); era.Modern || !era.Dual || era.Source != SourceCache {
		t.Errorf("PreferLegacy after the probe: Era() = %+v, want legacy, dual, from the cache", era)
	}
	if starts, discovers := eraEvents(t, opts); len(starts) != 4 || len(discovers) != 1 {
		t.Errorf("PreferLegacy after the probe: starts %v, discovers %v; want one more start and no probe", starts, discovers)
	}
}

// TestInitializeFirst: for a client of the initialize era (PreferLegacy),
// a server of unknown era gets initialize first, on one process: a legacy
// server (also one that ignores server/discover, or exits on it) and a
// server of both eras are initialized once and get no server/discover; a
// server of 2026-07-28 only refuses it and is probed on the same process,
// which then serves in 2026-07-28. Every server reads one handshake.
func TestInitializeFirst(t *testing.T) {
	tests := []struct {
		mode      string
		modern    bool
		discovers int
		probe     string
	}{
		{mode: "legacy", probe: "initialize answered"},
		{mode: "dual", probe: "initialize answered"},
		{mode: "d-ignore", probe: "initialize answered"},
		{mode: "d-exit", probe: "initialize answered"},
		{mode: "d-slowmodern", modern: true, discovers: 1, probe: "initialize refused with error -32022"},
		{mode: "modern", modern: true, discovers: 1, probe: "initialize refused with error -32022 (modern only), then discover result"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			opts := fixtureOptions(t, tc.mode)
			opts.Eras = NewEraCache()
			opts.PreferLegacy = true
			u := start(t, opts)
			era := u.Era()
			version := "2025-11-25"
			if tc.modern {
				version = ModernVersion
			}
			if era.Modern != tc.modern || era.Version != version || era.Source != SourceProbe || !strings.Contains(era.Probe, tc.probe) {
				t.Errorf("Era() = %+v, want modern %v, %s, from a probe that says %q", era, tc.modern, version, tc.probe)
			}
			raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"a":1}}`))
			if err != nil || toolText(t, raw) != `{"a":1}` {
				t.Fatalf("echo: %s, %v", raw, err)
			}
			starts, discovers := eraEvents(t, opts)
			inits := eraInits(t, opts)
			if len(starts) != 1 || u.PID() != starts[0] || len(discovers) != tc.discovers || len(inits) != 1 {
				t.Fatalf("starts %v, discovers %v, initializes %v, PID %d: want one process, %d discover(s), one initialize",
					starts, discovers, inits, u.PID(), tc.discovers)
			}
			modern, ok := opts.Eras.get(childEraKey(opts))
			if !ok || modern != tc.modern || opts.Eras.byInitialize(childEraKey(opts)) == tc.modern {
				t.Errorf("cache: modern %v, ok %v, byInitialize %v; want modern %v", modern, ok, opts.Eras.byInitialize(childEraKey(opts)), tc.modern)
			}
		})
	}
}

// TestInitializeFirstFails: a server that exits on initialize, or never
// answers it, fails its start with the errors of the initialize era's own
// start, and leaves no process behind.
func TestInitializeFirstFails(t *testing.T) {
	for _, mode := range []string{"exit3", "hang"} {
		t.Run(mode, func(t *testing.T) {
			opts := fixtureOptions(t, mode)
			opts.Eras = NewEraCache()
			opts.PreferLegacy = true
			opts.StartupTimeout = 500 * time.Millisecond
			_, err := Start(t.Context(), opts)
			want := map[string]string{"exit3": "exited with status 3 during startup", "hang": "did not complete initialize within 500ms"}[mode]
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Start = %v, want an error that says %q", err, want)
			}
		})
	}
}

// TestInitializeParamsAsSDK: the initialize sent first carries the params
// the SDK client would send itself, for the client options the proxy uses.
func TestInitializeParamsAsSDK(t *testing.T) {
	sampling := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) { return nil, nil }
	elicit := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }
	for name, opts := range map[string]Options{
		"default":   {},
		"info":      {ClientInfo: &mcp.Implementation{Name: "manifold", Version: "1.2.3"}},
		"handlers":  {Client: &mcp.ClientOptions{CreateMessageHandler: sampling, ElicitationHandler: elicit}},
		"caps":      {Client: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Experimental: map[string]any{"x": map[string]any{}}}}},
		"rootsOnly": {Client: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, ElicitationHandler: elicit}},
	} {
		t.Run(name, func(t *testing.T) {
			got := sdkInitializeParams(t, opts)
			var want map[string]any
			if err := json.Unmarshal(initializeParams(opts, protocolVersion), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("params (-ours +SDK's):\n%s", diff)
			}
		})
	}
}

// sdkInitializeParams returns the params of the initialize request the SDK
// client for opts writes.
func sdkInitializeParams(t *testing.T, opts Options) map[string]any {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	conn, err := st.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var u Upstream
	u.log = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	go func() {
		_, _ = u.newClient(opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	}()
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "initialize" {
		t.Fatalf("first message %#v, want initialize", msg)
	}
	var params map[string]any
	if err := json.Unmarshal(req.Params, &params); err != nil {
		t.Fatal(err)
	}
	return params
}

// TestCancelledStartKeepsEra: a start from the cache that is cancelled (the
// client quit while its servers started) keeps the cached era; one that
// fails by itself (here: its startup timeout) drops it, so that the next
// start probes.
func TestCancelledStartKeepsEra(t *testing.T) {
	opts := fixtureOptions(t, "hang")
	opts.Eras = NewEraCache()
	key := childEraKey(opts)
	opts.Eras.put(key, false)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := Start(ctx, opts); err == nil {
		t.Fatal("Start of a server that never answers succeeded")
	}
	if _, ok := opts.Eras.get(key); !ok {
		t.Error("a cancelled start dropped the cached era")
	}
	opts.StartupTimeout = 300 * time.Millisecond
	if _, err := Start(t.Context(), opts); err == nil {
		t.Fatal("Start of a server that never answers succeeded")
	}
	if _, ok := opts.Eras.get(key); ok {
		t.Error("a start that timed out kept the cached era")
	}
}
