package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPMaxEventBytes: [http] max_event_bytes reaches the store of the
// events kept for resuming the initialize era's streams. The same calls
// (one small, then 160 KB of answers, each taking longer than the lean
// path's priming delay, so that each is a resumable stream) leave the
// first call's stream resumable under the default bound (10 MiB), and
// purged under 64 KiB: its resume is refused and replays nothing.
func TestHTTPMaxEventBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cfg       string
		resumable bool
	}{
		{"default", "", true},
		{"64 KiB", "[http]\nmax_event_bytes = 65536\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hp := startHTTP(t, writeConfig(t, tc.cfg+fixture("alpha", []string{"-tools", "sleep"})))
			ctx := testCtx(t)
			c := rawClient("")
			sid := rawSession(ctx, t, c, hp)
			callOf := func(id int, msg string) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__sleep","arguments":{"ms":%d,"text":%q}}}`, id, slowCallMS, msg)
			}
			first := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(2, "first of all")))
			prime := firstEventID(first.body)
			if first.status != http.StatusOK || prime == "" || !strings.Contains(first.body, "first of all") {
				t.Fatalf("first call: status %d, priming event id %q, body %.300s", first.status, prime, first.body)
			}
			for i := range 5 {
				r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(3+i, strings.Repeat("x", 32<<10))))
				if r.status != http.StatusOK || firstEventID(r.body) == "" || !strings.Contains(r.body, "ms: xxx") {
					t.Fatalf("call %d: status %d, body %.200s; want a stream of the answer", 3+i, r.status, r.body)
				}
			}
			r := resume(ctx, t, c, hp, sid, prime)
			replayed := r.status == http.StatusOK && strings.Contains(r.body, "first of all")
			switch {
			case tc.resumable && !replayed:
				t.Errorf("resume after %s: status %d, body %.300s; want the first call's answer replayed", prime, r.status, r.body)
			case !tc.resumable && (r.status == http.StatusOK || strings.Contains(r.body, "first of all")):
				t.Errorf("resume after %s with the events purged: status %d, body %.300s; want a refusal that replays nothing", prime, r.status, r.body)
			}
		})
	}
}

// slowCallMS is how long the calls that must be resumable streams sleep:
// well past the 20 ms within which the lean path answers a call with one
// application/json response (proxy/httpcall.go, primeDelay).
const slowCallMS = 150

// firstEventID returns the id of the first event of an SSE body, or "".
func firstEventID(body string) string {
	for line := range strings.Lines(body) {
		if id, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "id: "); ok {
			return id
		}
	}
	return ""
}

// resume GETs session sid's stream after the event lastID.
func resume(ctx context.Context, t *testing.T, c *http.Client, hp *httpProxy, sid, lastID string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hp.endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET with Last-Event-ID: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// TestHTTPDeliveredStreams: the answers of calls delivered to a client
// still connected are kept for resumption within a sixteenth of
// max_event_bytes, and go before the streams of calls whose client went
// away. Under 64 KiB: a call whose client dropped its stream after the
// priming event is replayed whole after 20 answers of 1 KB to the same
// session (20 KB: past the sixteenth, within the bound), while the first of
// those answers, delivered, is not. Both for calls on the lean path and
// for calls the SDK serves (those asking for progress).
func TestHTTPDeliveredStreams(t *testing.T) {
	t.Parallel()
	for _, path := range []struct{ name, meta string }{{"lean", ""}, {"sdk", `"_meta":{"progressToken":"p"},`}} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			deliveredStreams(t, path.meta)
		})
	}
}

// deliveredStreams is TestHTTPDeliveredStreams with calls whose params
// start with meta.
func deliveredStreams(t *testing.T, meta string) {
	hp := startHTTP(t, writeConfig(t, "[http]\nmax_event_bytes = 65536\n"+fixture("alpha", []string{"-tools", "echo,sleep"})))
	ctx := testCtx(t)
	c := rawClient("")
	sid := rawSession(ctx, t, c, hp)
	callOf := func(id int, tool, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s"name":"alpha__%s","arguments":%s}}`, id, meta, tool, args)
	}

	// The dropped call: its stream is read to the priming event's id,
	// then the connection closes while the call sleeps.
	dropCtx, drop := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(dropCtx, http.MethodPost, hp.endpoint(), strings.NewReader(callOf(2, "sleep", `{"ms":300}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dropped := ""
	for br := bufio.NewReader(resp.Body); dropped == ""; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the sleeping call's stream ended before an event id: %v", err)
		}
		if id, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "id: "); ok {
			dropped = id
		}
	}
	drop()
	resp.Body.Close()
	// Its answer comes to the store when the call ends; a resume before
	// that replays nothing yet.
	for i := 0; ; i++ {
		r := resume(ctx, t, c, hp, sid, dropped)
		if strings.Contains(r.body, "slept 300 ms") {
			break
		}
		if i == 200 {
			t.Fatalf("the dropped call's answer never came to be replayed: status %d, body %.300s", r.status, r.body)
		}
		time.Sleep(25 * time.Millisecond)
	}

	// Answers delivered: calls that take longer than the lean path's
	// priming delay, so that each is a stream kept in the store (a call
	// answered at once is one application/json response, kept nowhere).
	var firstDelivered string
	for i := range 20 {
		r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(10+i, "sleep", fmt.Sprintf(`{"ms":%d,"text":%q}`, slowCallMS, strings.Repeat("d", 1000)))))
		if r.status != http.StatusOK || !strings.Contains(r.body, "ms: ddd") {
			t.Fatalf("call %d: status %d, body %.200s", 10+i, r.status, r.body)
		}
		if i == 0 {
			if firstDelivered = firstEventID(r.body); firstDelivered == "" {
				t.Fatalf("call %d: body %.200s; want a stream of the answer", 10+i, r.body)
			}
		}
	}
	if r := resume(ctx, t, c, hp, sid, dropped); r.status != http.StatusOK || !strings.Contains(r.body, "slept 300 ms") {
		t.Errorf("resume of the dropped call after 20 delivered answers: status %d, body %.300s; want its answer replayed", r.status, r.body)
	}
	if r := resume(ctx, t, c, hp, sid, firstDelivered); r.status == http.StatusOK || strings.Contains(r.body, "alpha: ddd") {
		t.Errorf("resume of the first delivered call after 19 more: status %d, body %.300s; want a refusal (delivered answers keep a sixteenth of the bound)", r.status, r.body)
	}
}
