package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPMaxEventBytes: [http] max_event_bytes reaches the store of the
// events kept for resuming the initialize era's streams. The same calls
// (one small, then 160 KB of answers) leave the first call's stream
// resumable under the default bound (10 MiB), and purged under 64 KiB: its
// resume is refused and replays nothing.
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
			hp := startHTTP(t, writeConfig(t, tc.cfg+fixture("alpha", []string{"-tools", "echo"})))
			ctx := testCtx(t)
			c := rawClient("")
			sid := rawSession(ctx, t, c, hp)
			callOf := func(id int, msg string) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":%q}}}`, id, msg)
			}
			first := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(2, "first of all")))
			prime := firstEventID(first.body)
			if first.status != http.StatusOK || prime == "" || !strings.Contains(first.body, "alpha: first of all") {
				t.Fatalf("first call: status %d, priming event id %q, body %.300s", first.status, prime, first.body)
			}
			for i := range 5 {
				r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(3+i, strings.Repeat("x", 32<<10))))
				if r.status != http.StatusOK || !strings.Contains(r.body, "alpha: xxx") {
					t.Fatalf("call %d: status %d, body %.200s", 3+i, r.status, r.body)
				}
			}
			r := resume(ctx, t, c, hp, sid, prime)
			replayed := r.status == http.StatusOK && strings.Contains(r.body, "alpha: first of all")
			switch {
			case tc.resumable && !replayed:
				t.Errorf("resume after %s: status %d, body %.300s; want the first call's answer replayed", prime, r.status, r.body)
			case !tc.resumable && (r.status == http.StatusOK || strings.Contains(r.body, "first of all")):
				t.Errorf("resume after %s with the events purged: status %d, body %.300s; want a refusal that replays nothing", prime, r.status, r.body)
			}
		})
	}
}

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
