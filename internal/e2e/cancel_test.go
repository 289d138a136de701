package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Cancellation and call timeouts reach the upstream: the fixture's sleep
// tool appends "cancelled <server>" to its -record file when its call is
// cancelled.

// awaitStderr waits until at least n lines of p's stderr contain every one
// of subs, and fails the test after awaitBound.
func awaitStderr(t *testing.T, p *proc, n int, subs ...string) {
	t.Helper()
	deadline := time.Now().Add(awaitBound)
	for {
		got := 0
		for line := range strings.Lines(p.stderr.String()) {
			if hasLine(line, subs...) {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d stderr line(s) with %q within %s, want %d", got, subs, awaitBound, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitRecord waits until the record file holds line at least n times, and
// fails the test after awaitBound.
func awaitRecord(t *testing.T, path, line string, n int) {
	t.Helper()
	deadline := time.Now().Add(awaitBound)
	for {
		b, _ := os.ReadFile(path)
		got := 0
		for l := range strings.Lines(string(b)) {
			if strings.TrimSpace(l) == line {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("record file holds %q %d time(s) after %s, want %d; it holds:\n%s", line, got, awaitBound, n, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// session is one go-sdk client of a manifold under test, over stdio or HTTP.
type session struct {
	cs   *mcp.ClientSession
	proc *proc
	hp   *httpProxy // nil over stdio
}

// startSession starts manifold with cfg over stdio or HTTP and connects the
// default client.
func startSession(t *testing.T, cfg string, overHTTP bool) session {
	t.Helper()
	if overHTTP {
		hp := startHTTP(t, writeConfig(t, cfg))
		return session{cs: connectHTTP(t, hp), proc: hp.proc, hp: hp}
	}
	sp := startStdio(t, writeConfig(t, cfg))
	return session{cs: sp.cs, proc: sp.proc}
}

var transports = []struct {
	name string
	http bool
}{
	{name: "stdio", http: false}, // tools/call on the lean path
	{name: "http", http: true},   // tools/call through the SDK
}

// A go-sdk ClientSession.Close waits for the client's calls in flight, so a
// client that goes away mid-call is played by hand: closing manifold's stdin
// (stdio), or deleting the session (HTTP).

func TestCancellation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		http bool
		// start starts manifold with cfg, calls alpha__sleep for 10 minutes
		// and returns the proxy process and a func that ends the call as the
		// test says.
		start func(t *testing.T, ctx context.Context, cfg string) (*proc, func())
	}{
		{name: "stdio/client cancels the call", start: func(t *testing.T, ctx context.Context, cfg string) (*proc, func()) {
			s := startSession(t, cfg, false)
			return s.proc, callAndCancel(ctx, t, s.cs)
		}},
		{name: "stdio/client goes away mid-call", start: func(t *testing.T, ctx context.Context, cfg string) (*proc, func()) {
			r := startRaw(t, writeConfig(t, cfg))
			r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
			r.await(t, "1")
			r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			r.await(t, "2")
			r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__sleep","arguments":{"ms":600000}}}`)
			return r.proc, func() {
				// manifold must then exit 0, which the cleanup checks.
				r.stop(r.end)
			}
		}},
		{name: "http/client cancels the call", start: func(t *testing.T, ctx context.Context, cfg string) (*proc, func()) {
			s := startSession(t, cfg, true)
			return s.proc, callAndCancel(ctx, t, s.cs)
		}},
		{name: "http/client deletes its session mid-call", start: func(t *testing.T, ctx context.Context, cfg string) (*proc, func()) {
			s := startSession(t, cfg, true)
			cctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel) // lets the client's Close return if the call is still waiting
			listTools(ctx, t, s.cs)
			go func() {
				_, _ = s.cs.CallTool(cctx, &mcp.CallToolParams{Name: "alpha__sleep", Arguments: map[string]any{"ms": 600_000}})
			}()
			return s.proc, func() {
				// Bounded: a DELETE that waits for the calls in flight to
				// end on their own would wait for call_timeout.
				dctx, cancel := context.WithTimeout(ctx, awaitBound)
				defer cancel()
				req, err := http.NewRequestWithContext(dctx, http.MethodDelete, s.hp.endpoint(), nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Mcp-Session-Id", s.cs.ID())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("DELETE the session with a call in flight: %v", err)
				}
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					t.Errorf("DELETE the session: status %d, want 2xx", resp.StatusCode)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			record := filepath.Join(t.TempDir(), "record")
			ctx := testCtx(t)
			// A long call_timeout: only a cancellation ends the call early.
			p, end := tt.start(t, ctx, fixture("alpha", []string{"-record", record}, `call_timeout = "10m"`))
			awaitStderr(t, p, 1, "upstream=alpha", "sleep started")
			end()
			awaitRecord(t, record, "cancelled alpha", 1)
		})
	}
}

// callAndCancel lists the tools (so that the upstream is up), calls
// alpha__sleep for 10 minutes in the background and returns a func that
// cancels the call and checks that it returns an error.
func callAndCancel(ctx context.Context, t *testing.T, cs *mcp.ClientSession) func() {
	t.Helper()
	listTools(ctx, t, cs)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "alpha__sleep", Arguments: map[string]any{"ms": 600_000}})
		done <- err
	}()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("the sleep call returned a result after it was cancelled")
			}
		case <-time.After(awaitBound):
			t.Fatalf("the sleep call did not return within %s of being cancelled", awaitBound)
		}
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			record := filepath.Join(t.TempDir(), "record")
			cfg := fixture("alpha", []string{"-record", record}, `call_timeout = "1s"`)
			s := startSession(t, cfg, tr.http)
			ctx := testCtx(t)
			listTools(ctx, t, s.cs)
			res := call(ctx, t, s.cs, "alpha__sleep", map[string]any{"ms": 5000})
			got := text(res)
			if !res.IsError || !strings.Contains(got, `"alpha"`) || !strings.Contains(got, "1s") {
				t.Errorf("alpha__sleep past call_timeout = %q (isError %v), want isError naming %q and the timeout 1s", got, res.IsError, "alpha")
			}
			awaitRecord(t, record, "cancelled alpha", 1)
			// The server still serves.
			if got, want := text(call(ctx, t, s.cs, "alpha__sleep", map[string]any{"ms": 1})), "alpha: slept 1 ms"; got != want {
				t.Errorf("alpha__sleep after a timeout = %q, want %q", got, want)
			}
		})
	}
}
