//go:build linux

package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// fixtureOptions runs this test binary as a stdio server in the given mode.
func fixtureOptions(t testing.TB, mode string) Options {
	t.Helper()
	return Options{
		Name:    "fx-" + mode,
		Command: os.Args[0],
		Env: []string{
			envMode + "=" + mode,
			envFile + "=" + filepath.Join(t.TempDir(), "events"),
			"GORACE=atexit_sleep_ms=0", // a -race child would otherwise take 1s to exit
		},
		StopGrace: 200 * time.Millisecond,
		// Servers that answer server/discover do so however loaded the
		// machine; tests of silence set a short one.
		ProbeTimeout: 30 * time.Second,
	}
}

// eventFile is where the fixture started with opts writes its events.
func eventFile(opts Options) string {
	return strings.TrimPrefix(opts.Env[1], envFile+"=")
}

// callCtx bounds one call in a test, so that a lost response fails the test
// instead of hanging it.
func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func start(t testing.TB, opts Options) *Upstream {
	t.Helper()
	u, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { closeWithin(t, u) })
	return u
}

// waitFor polls cond for up to 10s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// closeWithin fails the test if Close does not return within 30s.
func closeWithin(t testing.TB, u *Upstream) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- u.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30s")
	}
}

func waitDone(t testing.TB, u *Upstream) {
	t.Helper()
	select {
	case <-u.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after 10s")
	}
}

// events returns the lines the fixture wrote so far.
func events(opts Options) []string {
	b, _ := os.ReadFile(eventFile(opts))
	return strings.Fields(string(b))
}

// firstEvent waits for the fixture's first event line (a pid).
func firstPID(t testing.TB, opts Options) int {
	t.Helper()
	var pid int
	waitFor(t, "the fixture's pid file", func() bool {
		ev := events(opts)
		if len(ev) == 0 {
			return false
		}
		var err error
		pid, err = strconv.Atoi(ev[0])
		return err == nil
	})
	return pid
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting for a parent that is not us.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state ...; comm may hold spaces, so look after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// toolText returns the text of the single text content of a raw result.
func toolText(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result %.200s: %v", raw, err)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.IsError {
		t.Fatalf("result %.200s: want one text content and no error", raw)
	}
	return res.Content[0].Text
}

// logBuffer collects a logger's output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the JSON log records with the given message.
func (b *logBuffer) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range bytes.Lines(b.buf.Bytes()) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

var echoCases = []struct {
	name   string
	params string
	want   string // the arguments the server received
}{
	{
		name:   "utf8 and nested",
		params: `{"name":"echo","arguments":{"msg":"héllo ✓ 日本 🎉","esc":"\u00e9\n\"q\"","nested":{"a":[1,2.50,{"b":null}],"c":true,"d":{}}}}`,
		want:   `{"msg":"héllo ✓ 日本 🎉","esc":"\u00e9\n\"q\"","nested":{"a":[1,2.50,{"b":null}],"c":true,"d":{}}}`,
	},
	{
		name:   "absent arguments stay absent",
		params: `{"name":"echo"}`,
		want:   "<absent>",
	},
	{
		name:   "empty object",
		params: `{"name":"echo","arguments":{}}`,
		want:   `{}`,
	},
	{
		name:   "meta and key order kept",
		params: `{"_meta":{"progressToken":"p1"},"name":"echo","arguments":{"z":1,"a":2}}`,
		want:   `{"z":1,"a":2}`,
	},
}

func TestCallToolRawEcho(t *testing.T) {
	u := start(t, fixtureOptions(t, "serve"))
	cases := append(echoCases, struct {
		name   string
		params string
		want   string
	}{
		name:   "newlines in params become spaces",
		params: "{\n\"name\": \"echo\",\r\n\"arguments\": {\n\"a\": \"x\\ny\"\n}\n}",
		want:   "{ \"a\": \"x\\ny\" }",
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(tc.params))
			if err != nil {
				t.Fatalf("CallToolRaw: %v", err)
			}
			if diff := cmp.Diff(tc.want, toolText(t, raw)); diff != "" {
				t.Errorf("arguments received (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallToolRawBadParams(t *testing.T) {
	u := start(t, fixtureOptions(t, "serve"))
	for _, params := range []string{``, `null`, `[1]`, `{"name":"echo"`, `{"name":"echo"} {}`} {
		t.Run(params, func(t *testing.T) {
			if _, err := u.CallToolRaw(callCtx(t), json.RawMessage(params)); err == nil {
				t.Fatal("CallToolRaw: no error")
			}
		})
	}
	// The connection is still good.
	raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"ok":1}}`))
	if err != nil {
		t.Fatalf("CallToolRaw after bad params: %v", err)
	}
	if got := toolText(t, raw); got != `{"ok":1}` {
		t.Errorf("echo = %q", got)
	}
}

var errorCases = []struct {
	name   string
	params string
	want   *jsonrpc.Error
}{
	{
		name:   "error with data",
		params: `{"name":"fail","arguments":{}}`,
		want:   &jsonrpc.Error{Code: -32042, Message: "custom failure", Data: json.RawMessage(`{"x":1}`)},
	},
	{
		name:   "unknown tool",
		params: `{"name":"nope","arguments":{}}`,
		want:   &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "nope"`},
	},
}

func checkRPCError(t *testing.T, u *Upstream) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := u.CallToolRaw(callCtx(t), json.RawMessage(tc.params))
			var got *jsonrpc.Error
			if !errors.As(err, &got) {
				t.Fatalf("CallToolRaw error = %v (%T), want a *jsonrpc.Error", err, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallToolRawRPCError(t *testing.T) {
	checkRPCError(t, start(t, fixtureOptions(t, "serve")))
}

func TestNoise(t *testing.T) {
	var logs logBuffer
	opts := fixtureOptions(t, "noise")
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	u := start(t, opts)

	// Both paths work through the noise: the SDK's (list) and the raw one.
	res, err := u.Session().ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(res.Tools) != 6 {
		t.Errorf("ListTools: %d tools, want 6", len(res.Tools))
	}
	for i := range 10 {
		args := fmt.Sprintf(`{"i":%d}`, i)
		raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":`+args+`}`))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := toolText(t, raw); got != args {
			t.Errorf("call %d: echo = %q, want %q", i, got, args)
		}
	}
	checkRPCError(t, u)

	for _, msg := range []string{"dropped non-JSON stdout line", "dropped stdout line that is not JSON-RPC"} {
		recs := logs.records(t, msg)
		if len(recs) == 0 {
			t.Errorf("no %q log records", msg)
		}
		for _, rec := range recs {
			if rec["upstream"] != opts.Name || rec["level"] != "WARN" {
				t.Errorf("log record %v: want level WARN and upstream=%s", rec, opts.Name)
			}
		}
	}
	var lines []string
	for _, rec := range logs.records(t, "dropped non-JSON stdout line") {
		lines = append(lines, rec["line"].(string))
	}
	for _, want := range []string{"Starting fixture server... (not JSON)", "plain text log line", ""} {
		if !contains(lines, want) {
			t.Errorf("dropped lines %q: missing %q", lines, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestBigMessages(t *testing.T) {
	t.Run("20 MiB result", func(t *testing.T) {
		u := start(t, fixtureOptions(t, "serve")) // MaxMessageBytes defaults to 64 MiB
		const n = 20 << 20
		// 20 MiB through the race detector on a loaded machine took over
		// callCtx's 30 s in CI: the bound is against a hang, so it is wide.
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		raw, err := u.CallToolRaw(ctx, json.RawMessage(fmt.Sprintf(`{"name":"big","arguments":{"n":%d}}`, n)))
		if err != nil {
			t.Fatalf("CallToolRaw: %v", err)
		}
		if got := toolText(t, raw); len(got) != n || strings.Trim(got, "x") != "" {
			t.Errorf("got %d bytes, want %d x", len(got), n)
		}
	})
	t.Run("over the limit fails that call only", func(t *testing.T) {
		var logs logBuffer
		opts := fixtureOptions(t, "serve")
		opts.MaxMessageBytes = 1 << 20
		opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		u := start(t, opts)
		_, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"big","arguments":{"n":2000000}}`))
		if err == nil || !strings.Contains(err.Error(), "exceeds the 1048576-byte limit") {
			t.Fatalf("CallToolRaw = %v, want a size error", err)
		}
		if len(logs.records(t, "dropped oversized stdout line")) != 1 {
			t.Errorf("want one oversized-line log record")
		}
		raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"after":true}}`))
		if err != nil {
			t.Fatalf("CallToolRaw after the big one: %v", err)
		}
		if got := toolText(t, raw); got != `{"after":true}` {
			t.Errorf("echo = %q", got)
		}
	})
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name    string
		opts    func(Options) Options
		want    []string // substrings of the error
		pidFile bool     // the fixture wrote its pid; check it is gone
	}{
		{
			name: "not found",
			opts: func(o Options) Options {
				o.Command = "manifold-no-such-command"
				return o
			},
			want: []string{`upstream "fx-serve"`, `executable "manifold-no-such-command" not found in PATH`},
		},
		{
			name: "exit 3",
			opts: func(o Options) Options {
				o.Env[0] = envMode + "=exit3"
				return o
			},
			want: []string{`upstream "fx-serve"`, "exited with status 3 during startup", `loading config\nfatal: config missing`},
		},
		{
			name: "hang",
			opts: func(o Options) Options {
				o.Env[0] = envMode + "=hang"
				o.StartupTimeout = 500 * time.Millisecond
				return o
			},
			want:    []string{`upstream "fx-serve"`, "did not complete initialize within 500ms", "hanging before initialize"},
			pidFile: true,
		},
		{
			name: "both command and url",
			opts: func(o Options) Options {
				o.URL = "http://127.0.0.1:1/mcp"
				return o
			},
			want: []string{`upstream "fx-serve"`, "both command and url"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts(fixtureOptions(t, "serve"))
			u, err := Start(t.Context(), opts)
			if err == nil {
				u.Close()
				t.Fatal("Start: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.pidFile {
				pid := firstPID(t, opts)
				// Killed and reaped before Start returned: not even a zombie.
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("kill(%d, 0) = %v, want ESRCH", pid, err)
				}
			}
		})
	}
}

func TestStartCancelled(t *testing.T) {
	opts := fixtureOptions(t, "hang")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		firstPID(t, opts)
		cancel()
	}()
	_, err := Start(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), "startup cancelled") {
		t.Fatalf("Start = %v, want startup cancelled", err)
	}
	if pid := firstPID(t, opts); !processGone(pid) {
		t.Errorf("pid %d still runs", pid)
	}
}

func TestDieMidCall(t *testing.T) {
	u := start(t, fixtureOptions(t, "serve"))
	_, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"die","arguments":{}}`))
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "server exited") {
		t.Fatalf("CallToolRaw = %v, want ErrClosed and 'server exited'", err)
	}
	waitDone(t, u)
	if err := u.Err(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "exited with status 7") ||
		!strings.Contains(err.Error(), "dying now") {
		t.Errorf("Err() = %v, want ErrClosed with status 7 and the stderr tail", err)
	}
	if tail := u.StderrTail(); !strings.Contains(tail, "dying now") {
		t.Errorf("StderrTail() = %q", tail)
	}
	if _, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("CallToolRaw after exit = %v, want ErrClosed", err)
	}
	if err := syscall.Kill(u.PID(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(%d, 0) = %v, want ESRCH (reaped)", u.PID(), err)
	}
}

func TestCancel(t *testing.T) {
	opts := fixtureOptions(t, "serve")
	u := start(t, opts)
	ctx, cancel := context.WithCancel(callCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := u.CallToolRaw(ctx, json.RawMessage(`{"name":"sleep","arguments":{}}`))
		errc <- err
	}()
	waitFor(t, "the sleep call to start", func() bool { return contains(events(opts), "started") })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("CallToolRaw = %v, want context.Canceled", err)
	}
	// Only notifications/cancelled cancels the handler while the connection is up.
	waitFor(t, "the server to see the cancellation", func() bool { return contains(events(opts), "cancelled") })
	raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":{"still":"up"}}`))
	if err != nil {
		t.Fatalf("CallToolRaw after cancel: %v", err)
	}
	if got := toolText(t, raw); got != `{"still":"up"}` {
		t.Errorf("echo = %q", got)
	}
	select {
	case <-u.Done():
		t.Fatalf("connection ended: %v", u.Err())
	default:
	}
}

func TestClose(t *testing.T) {
	t.Run("graceful", func(t *testing.T) {
		var logs logBuffer
		opts := fixtureOptions(t, "serve")
		opts.StopGrace = 5 * time.Second
		opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		u := start(t, opts)
		var wg sync.WaitGroup
		for range 3 { // concurrent Close calls all wait
			wg.Go(func() {
				if err := u.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				select {
				case <-u.Done():
				default:
					t.Error("Close returned before Done")
				}
			})
		}
		wg.Wait()
		if recs := logs.records(t, "server still running; signalling its process group"); len(recs) > 0 {
			t.Errorf("the server had to be signalled: %v", recs)
		}
		if err := u.Err(); !errors.Is(err, ErrClosed) {
			t.Errorf("Err() = %v, want ErrClosed", err)
		}
		if _, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, ErrClosed) {
			t.Errorf("CallToolRaw after Close = %v, want ErrClosed", err)
		}
		if err := syscall.Kill(u.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill(%d, 0) = %v, want ESRCH", u.PID(), err)
		}
	})
	t.Run("pending call returns", func(t *testing.T) {
		opts := fixtureOptions(t, "serve")
		u := start(t, opts)
		errc := make(chan error, 1)
		go func() {
			_, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"sleep","arguments":{}}`))
			errc <- err
		}()
		waitFor(t, "the sleep call to start", func() bool { return contains(events(opts), "started") })
		u.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("pending CallToolRaw = %v, want ErrClosed", err)
		}
	})
	t.Run("child ignores SIGTERM and stdin EOF", func(t *testing.T) {
		opts := fixtureOptions(t, "ignore-term")
		u := start(t, opts)
		if pid := firstPID(t, opts); pid != u.PID() {
			t.Fatalf("fixture pid %d, PID() %d", pid, u.PID())
		}
		closeWithin(t, u)
		if err := syscall.Kill(u.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill(%d, 0) = %v, want ESRCH", u.PID(), err)
		}
	})
}

func TestGrandchild(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		opts := fixtureOptions(t, "spawn-child")
		u := start(t, opts)
		gc := firstPID(t, opts)
		if processGone(gc) {
			t.Fatalf("grandchild %d not running before Close", gc)
		}
		u.Close()
		waitFor(t, "the grandchild to die", func() bool { return processGone(gc) })
	})
	t.Run("leader killed", func(t *testing.T) {
		opts := fixtureOptions(t, "spawn-child")
		u := start(t, opts)
		gc := firstPID(t, opts)
		if processGone(gc) {
			t.Fatalf("grandchild %d not running", gc)
		}
		if err := syscall.Kill(u.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitDone(t, u)
		if err := u.Err(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "was killed (signal: killed)") {
			t.Errorf("Err() = %v, want ErrClosed and 'was killed'", err)
		}
		waitFor(t, "the grandchild to die", func() bool { return processGone(gc) })
		if err := syscall.Kill(u.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill(%d, 0) = %v, want ESRCH (reaped)", u.PID(), err)
		}
	})
}

func TestConcurrentCalls(t *testing.T) {
	u := start(t, fixtureOptions(t, "serve"))
	var g errgroup.Group
	for w := range 8 {
		g.Go(func() error {
			for i := range 25 {
				args := fmt.Sprintf(`{"w":%d,"i":%d,"pad":%q}`, w, i, strings.Repeat("p", 1000*w))
				raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo","arguments":`+args+`}`))
				if err != nil {
					return err
				}
				var res struct{ Content []struct{ Text string } }
				if err := json.Unmarshal(raw, &res); err != nil {
					return err
				}
				if len(res.Content) != 1 || res.Content[0].Text != args {
					return fmt.Errorf("worker %d call %d: got %.100s", w, i, raw)
				}
			}
			return nil
		})
	}
	// SDK calls share stdin with the raw path.
	g.Go(func() error {
		for range 25 {
			if _, err := u.Session().ListTools(callCtx(t), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestRemote(t *testing.T) {
	for _, transport := range []string{"", "sse"} {
		t.Run("transport="+transport, func(t *testing.T) {
			var handler http.Handler
			getServer := func(*http.Request) *mcp.Server { return newFixtureServer() }
			if transport == "sse" {
				handler = mcp.NewSSEHandler(getServer, nil)
			} else {
				srv := newFixtureServer()
				handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
			}
			var mu sync.Mutex
			var tokens []string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				tokens = append(tokens, r.Header.Get("X-Test-Token"))
				mu.Unlock()
				handler.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			u := start(t, Options{
				Name:      "remote",
				URL:       ts.URL,
				Transport: transport,
				Headers:   map[string]string{"x-test-token": "secret"},
				StopGrace: 200 * time.Millisecond,
			})
			if u.PID() != 0 {
				t.Errorf("PID() = %d, want 0", u.PID())
			}

			for _, tc := range echoCases {
				t.Run(tc.name, func(t *testing.T) {
					want := tc.want
					if want == "<absent>" {
						want = "{}" // the SDK sends {} for absent arguments
					}
					raw, err := u.CallToolRaw(callCtx(t), json.RawMessage(tc.params))
					if err != nil {
						t.Fatalf("CallToolRaw: %v", err)
					}
					if diff := cmp.Diff(want, toolText(t, raw)); diff != "" {
						t.Errorf("arguments received (-want +got):\n%s", diff)
					}
				})
			}
			checkRPCError(t, u)

			if err := u.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, ErrClosed) {
				t.Errorf("CallToolRaw after Close = %v, want ErrClosed", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(tokens) < 3 {
				t.Errorf("server saw %d requests, want at least 3", len(tokens))
			}
			for i, tok := range tokens {
				if tok != "secret" {
					t.Errorf("request %d: X-Test-Token = %q, want secret", i, tok)
				}
			}
		})
	}
}

// hangHandler never answers. It reads the body first: only then does the
// server notice when the client goes away.
func hangHandler(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func TestRemoteStartFailure(t *testing.T) {
	tests := []struct {
		name      string
		transport string
		handler   http.HandlerFunc
		want      string
	}{
		{
			name:    "forbidden",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", http.StatusForbidden) },
			want:    `upstream "remote": connecting over streamable: `,
		},
		{
			name:    "streamable never answers",
			handler: hangHandler,
			want:    `upstream "remote": did not complete initialize within 300ms`,
		},
		{
			name:      "sse never answers",
			transport: "sse",
			handler:   hangHandler,
			want:      `upstream "remote": did not complete initialize within 300ms`,
		},
		{
			name:      "unknown transport",
			transport: "websocket",
			handler:   func(w http.ResponseWriter, r *http.Request) {},
			want:      `upstream "remote": unknown transport "websocket"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(tc.handler)
			t.Cleanup(ts.Close)
			_, err := Start(t.Context(), Options{
				Name:           "remote",
				URL:            ts.URL,
				Transport:      tc.transport,
				StartupTimeout: 300 * time.Millisecond,
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLineReader(t *testing.T) {
	type line struct {
		Text string // "" for a dropped line
		Size int
	}
	tests := []struct {
		name  string
		input string
		max   int
		want  []line
	}{
		{
			name:  "short lines",
			input: "a\n\nbc\r\nlast",
			max:   10,
			want:  []line{{"a\n", 2}, {"\n", 1}, {"bc\r\n", 4}, {"last", 4}},
		},
		{
			name:  "longer than the buffer, within the limit",
			input: strings.Repeat("y", 40) + "\nz\n",
			max:   40,
			want:  []line{{strings.Repeat("y", 40) + "\n", 41}, {"z\n", 2}},
		},
		{
			name:  "over the limit",
			input: strings.Repeat("y", 41) + "\n" + strings.Repeat("w", 100) + "\nz",
			max:   40,
			want:  []line{{"", 42}, {"", 101}, {"z", 1}},
		},
		{
			name:  "limit counts no terminator",
			input: strings.Repeat("y", 40) + "\r\n",
			max:   40,
			want:  []line{{strings.Repeat("y", 40) + "\r\n", 42}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lr := &lineReader{br: bufioReader(tc.input), max: tc.max}
			var got []line
			for range 100 {
				l, size, err := lr.next()
				if size > 0 {
					got = append(got, line{string(l), size})
				}
				if err != nil {
					break
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindRawID(t *testing.T) {
	tests := []struct {
		in     string
		want   uint64
		wantOK bool
	}{
		{`{"jsonrpc":"2.0","id":"mf.42","result":{"content":[{"type":"text","text":"xxx`, 42, true},
		{`xxxx"}],"isError":false},"id": "mf.7"}`, 7, true},
		{`{"result":{"text":"mf.12","id":"x"},"id":"mf.3"}`, 3, true},
		{`{"id":17,"result":{}}`, 0, false},
		{`{"jsonrpc":"2.0","id":"mf.12`, 0, false}, // cut off
		{`{"text":"\"id\":\"mf.5\""}`, 0, false},   // escaped inside a string
	}
	for _, tc := range tests {
		got, ok := findRawID([]byte(tc.in))
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("findRawID(%s) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func BenchmarkCallToolRaw(b *testing.B) {
	for _, size := range []int{16, 64 << 10} {
		b.Run(fmt.Sprintf("result=%d", size), func(b *testing.B) {
			u := start(b, fixtureOptions(b, "serve"))
			params := json.RawMessage(fmt.Sprintf(`{"name":"big","arguments":{"n":%d}}`, size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.CallToolRaw(b.Context(), params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCallToolSDK(b *testing.B) {
	for _, size := range []int{16, 64 << 10} {
		b.Run(fmt.Sprintf("result=%d", size), func(b *testing.B) {
			u := start(b, fixtureOptions(b, "serve"))
			args := json.RawMessage(fmt.Sprintf(`{"n":%d}`, size))
			b.ReportAllocs()
			for b.Loop() {
				res, err := u.Session().CallTool(b.Context(), &mcp.CallToolParams{Name: "big", Arguments: args})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bufioReader reads s through the smallest buffer bufio allows.
func bufioReader(s string) *bufio.Reader {
	return bufio.NewReaderSize(strings.NewReader(s), 16)
}

func TestSplitObject(t *testing.T) {
	tests := []struct {
		in   string
		want members
	}{
		{`{"jsonrpc":"2.0","id":"mf.1","result":{"content":[{"type":"text","text":"a\"}b\\"}]}}`,
			members{id: []byte(`"mf.1"`), result: []byte(`{"content":[{"type":"text","text":"a\"}b\\"}]}`)}},
		{` { "result" : [1, {"x":"]"}] , "id" : "mf.2" , "error" : null } `,
			members{id: []byte(`"mf.2"`), result: []byte(`[1, {"x":"]"}]`), err: []byte(`null`)}},
		{`{"id":"mf.3","error":{"code":-1,"message":"m","data":[true,false]}}`,
			members{id: []byte(`"mf.3"`), err: []byte(`{"code":-1,"message":"m","data":[true,false]}`)}},
		{`{"method":"ping","id":"mf.4"}`, members{id: []byte(`"mf.4"`), method: []byte(`"ping"`)}},
		{`{}`, members{}},
	}
	for _, tc := range tests {
		got, ok := splitObject([]byte(tc.in))
		if !ok {
			t.Errorf("splitObject(%s): not ok", tc.in)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(members{})); diff != "" {
			t.Errorf("splitObject(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzSplitObject checks splitObject against encoding/json.
func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"mf.1","result":{"content":[]}}`,
		`{"id":1,"error":{"code":1,"message":"x\\\"y"}}`,
		`{"a":[{"b":"}"}],"result":"\\\\","id":null}`,
		` {"result" : 1.5e3 ,"method":"m"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want map[string]json.RawMessage
		if !json.Valid([]byte(in)) || json.Unmarshal([]byte(in), &want) != nil || want == nil ||
			strings.Contains(in, `\u`) { // splitObject does not unescape keys
			return
		}
		got, ok := splitObject([]byte(in))
		if !ok {
			t.Fatalf("splitObject(%q): not ok", in)
		}
		for key, g := range map[string][]byte{"id": got.id, "method": got.method, "result": got.result, "error": got.err} {
			w, present := want[key]
			if present != (g != nil) || present && !bytes.Equal(w, g) {
				t.Errorf("splitObject(%q).%s = %q, want %q (present %v)", in, key, g, w, present)
			}
		}
	})
}

func TestRemoteCloseWithPendingCall(t *testing.T) {
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			started := make(chan struct{}, 1)
			release := make(chan struct{}) // the server may not notice the client leave
			srv := mcp.NewServer(&mcp.Implementation{Name: "slow"}, nil)
			srv.AddTool(&mcp.Tool{Name: "sleep", InputSchema: map[string]any{"type": "object"}},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					started <- struct{}{}
					select {
					case <-ctx.Done():
					case <-release:
					}
					return nil, ctx.Err()
				})
			getServer := func(*http.Request) *mcp.Server { return srv }
			var handler http.Handler = mcp.NewStreamableHTTPHandler(getServer, nil)
			if transport == "sse" {
				handler = mcp.NewSSEHandler(getServer, nil)
			}
			ts := httptest.NewServer(handler)
			t.Cleanup(ts.Close)
			u := start(t, Options{Name: "slow", URL: ts.URL, Transport: transport, StopGrace: 200 * time.Millisecond})
			errc := make(chan error, 1)
			go func() {
				_, err := u.CallToolRaw(callCtx(t), json.RawMessage(`{"name":"sleep"}`))
				errc <- err
			}()
			<-started
			closed := make(chan struct{})
			go func() {
				closeWithin(t, u)
				close(closed)
			}()
			if err := <-errc; err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("pending call = %v, want an error from Close", err)
			}
			// The test server does not notice the client leave; let its
			// handler return so that it can shut down.
			close(release)
			<-closed
		})
	}
}

func TestDialInMemory(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi from memory"}}}, nil
		})
	var served sync.WaitGroup
	u, err := Start(t.Context(), Options{
		Name: "mem",
		Dial: func(ctx context.Context) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				return nil, err
			}
			served.Add(1)
			go func() { defer served.Done(); _ = ss.Wait() }()
			return ct, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := u.CallToolRaw(t.Context(), json.RawMessage(`{"name":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "hi from memory") {
		t.Errorf("result = %s, want the in-memory server's text", raw)
	}
	if u.PID() != 0 {
		t.Errorf("PID() = %d for an in-memory server, want 0", u.PID())
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-u.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	served.Wait() // the server side saw the session end
	if !errors.Is(u.Err(), ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", u.Err())
	}
}

// TestCallToolRawAsync: done gets the result exactly once; a cancelled call
// tells the server and ends with ctx's error; a call on a dead connection
// ends with ErrClosed.
func TestCallToolRawAsync(t *testing.T) {
	opts := fixtureOptions(t, "serve")
	u := start(t, opts)
	type res struct {
		raw json.RawMessage
		err error
	}
	call := func(ctx context.Context, params string) chan res {
		ch := make(chan res, 2) // room for a second, wrong, completion
		u.CallToolRawAsync(ctx, json.RawMessage(params), func(raw json.RawMessage, err error) { ch <- res{raw, err} })
		return ch
	}
	once := func(ch chan res) res {
		t.Helper()
		r := <-ch
		select {
		case extra := <-ch:
			t.Fatalf("done called twice: %+v then %+v", r, extra)
		case <-time.After(100 * time.Millisecond):
		}
		return r
	}

	r := once(call(callCtx(t), `{"name":"echo","arguments":{"a":1}}`))
	if r.err != nil || toolText(t, r.raw) != `{"a":1}` {
		t.Fatalf("echo = %s, %v", r.raw, r.err)
	}

	ctx, cancel := context.WithCancel(callCtx(t))
	ch := call(ctx, `{"name":"sleep","arguments":{}}`)
	waitFor(t, "the sleep call to start", func() bool { return contains(events(opts), "started") })
	cancel()
	if r := once(ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled call = %s, %v; want context.Canceled", r.raw, r.err)
	}
	waitFor(t, "the server to see the cancellation", func() bool { return contains(events(opts), "cancelled") })

	// A ctx that ends while the request is being written (alive when the
	// call starts, done when its end on ctx is set up): the call ends with
	// its error, and the server gets the request, then its cancellation.
	// So no call is left running there: the server runs it and ends it, or
	// (the go-sdk's) never starts a call cancelled before its turn. In the
	// other order the cancellation names a call the server does not know
	// yet, and the sleep runs on: a "started" without its "cancelled". A
	// later call's answer means the server has read both messages; the
	// pause gives a handler that did start the time to say so.
	ch = call(&endsOnSecondLook{Context: callCtx(t)}, `{"name":"sleep","arguments":{}}`)
	if r := once(ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("call whose ctx ended while it was sent = %s, %v; want context.Canceled", r.raw, r.err)
	}
	if r := once(call(callCtx(t), `{"name":"echo","arguments":{"b":2}}`)); r.err != nil {
		t.Fatalf("echo after the cancelled call: %v", r.err)
	}
	time.Sleep(200 * time.Millisecond)
	waitFor(t, "every sleep the server started to be cancelled", func() bool {
		ev := events(opts)
		return count(ev, "started") == count(ev, "cancelled")
	})

	ch = call(callCtx(t), `{"name":"sleep","arguments":{}}`)
	closeWithin(t, u)
	if r := once(ch); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("call in flight at Close = %s, %v; want ErrClosed", r.raw, r.err)
	}
	if r := once(call(callCtx(t), `{"name":"echo"}`)); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("call after Close = %v; want ErrClosed", r.err)
	}
}

// endsOnSecondLook is a context that is alive the first time its Err is
// asked and done from then on (its Done is closed from the start): a ctx
// that ends between a call's first look at it and the next.
type endsOnSecondLook struct {
	context.Context
	looked atomic.Bool
}

func (c *endsOnSecondLook) Err() error {
	if c.looked.Swap(true) {
		return context.Canceled
	}
	return nil
}

func (c *endsOnSecondLook) Done() <-chan struct{} { return closedChan }

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestProtocolVersionLegacy: a server of the initialize era reports the
// version it accepted and is not modern.
func TestProtocolVersionLegacy(t *testing.T) {
	u := start(t, fixtureOptions(t, "legacy"))
	if got, want := u.ProtocolVersion(), "2025-11-25"; got != want {
		t.Errorf("ProtocolVersion() = %q, want %q", got, want)
	}
	if u.Modern() {
		t.Error("Modern() = true for an initialize-era server")
	}
}
