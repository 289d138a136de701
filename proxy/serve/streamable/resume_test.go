package streamable

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseEvent is one server-sent event, its fields as written.
type sseEvent struct {
	Event, ID, Retry, Data string
}

// parseSSE splits an SSE body into its events.
func parseSSE(body string) []sseEvent {
	var out []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "event":
				e.Event = v
			case "id":
				e.ID = v
			case "retry":
				e.Retry = v
			case "data":
				e.Data += v
			}
		}
		out = append(out, e)
	}
	return out
}

// resumeClient speaks raw streamable HTTP of the initialize era to an
// endpoint, so that a test can see the SSE fields and replay event ids.
type resumeClient struct {
	t   *testing.T
	url string
}

func (c resumeClient) do(method, session, lastEventID, body string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s: reading the body: %v", method, err)
	}
	return resp, string(data)
}

// open starts a session (initialize, then initialized) and returns its id.
func (c resumeClient) open() string {
	c.t.Helper()
	resp, body := c.do(http.MethodPost, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		c.t.Fatalf("initialize: %s, session %q: %s", resp.Status, id, body)
	}
	if resp, body := c.do(http.MethodPost, id, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("initialized: %s: %s", resp.Status, body)
	}
	return id
}

// TestSSEResume: the initialize era's SSE streams are resumable. A stream
// starts with a priming event that carries an event id and the retry field;
// a GET with Last-Event-ID replays what followed, to the session that owns
// the stream only; and a session's events are dropped when it ends.
func TestSSEResume(t *testing.T) {
	s := newFakeCore()
	mcp.AddTool(s.server, &mcp.Tool{Name: "secret"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "secret of " + req.Session.ID()}}}, nil, nil
	})
	opts := Options{}
	opts.setDefaults()
	m := newMCPEndpoint(s, opts)
	if got, want := m.events.max, 10<<20; got != want {
		t.Errorf("event store bound = %d bytes, want the default %d", got, want)
	}
	ts := httptest.NewServer(m)
	defer ts.Close()
	c := resumeClient{t: t, url: ts.URL}
	a, b := c.open(), c.open()

	resp, body := c.do(http.MethodPost, a, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret","arguments":{}}}`)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/call: %s, %s: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	events := parseSSE(body)
	if len(events) != 2 {
		t.Fatalf("tools/call stream: %d events, want the priming event and the result: %q", len(events), body)
	}
	prime := events[0]
	if diff := cmp.Diff(sseEvent{Event: "prime", ID: prime.ID, Retry: sseRetry}, prime); diff != "" || prime.ID == "" {
		t.Errorf("priming event (-want +got):\n%s(id %q)", diff, prime.ID)
	}
	secret := "secret of " + a
	if !strings.Contains(events[1].Data, secret) || events[1].ID == "" {
		t.Fatalf("tools/call result event = %+v, want an id and %q", events[1], secret)
	}

	// The owner resumes after the priming event: the result is replayed.
	resp, body = c.do(http.MethodGet, a, prime.ID, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, secret) {
		t.Errorf("resume by its session: %s: %q, want the result replayed", resp.Status, body)
	}
	// Another session, with the same event id, gets none of it.
	resp, body = c.do(http.MethodGet, b, prime.ID, "")
	if resp.StatusCode == http.StatusOK || strings.Contains(body, secret) {
		t.Errorf("resume of session a's stream by session b: %s: %q, want a refusal", resp.Status, body)
	}

	// Ending the session drops its events.
	if resp, body := c.do(http.MethodDelete, a, "", ""); resp.StatusCode >= 300 {
		t.Fatalf("DELETE: %s: %s", resp.Status, body)
	}
	streamID, _, _ := strings.Cut(prime.ID, "_")
	var err error
	for range 100 { // the SDK closes the connection as DELETE returns; bounded wait
		err = nil
		for _, e := range m.events.After(t.Context(), a, streamID, -1) {
			err = e
			break
		}
		if err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Errorf("events of an ended session: After = %v, want the session unknown to the store", err)
	}
}

// TestOpensGETStream: only a GET that opens or resumes the session's GET
// stream counts as it (one at a time); resuming a request's stream does not.
func TestOpensGETStream(t *testing.T) {
	tests := []struct {
		name, method, lastEventID string
		want                      bool
	}{
		{"GET stream", http.MethodGet, "", true},
		{"GET stream resumed", http.MethodGet, "_3", true},
		{"request stream resumed", http.MethodGet, "2_1", false},
		{"POST", http.MethodPost, "", false},
		{"DELETE", http.MethodDelete, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/mcp", nil)
			if tt.lastEventID != "" {
				r.Header.Set("Last-Event-ID", tt.lastEventID)
			}
			if got := opensGETStream(r); got != tt.want {
				t.Errorf("opensGETStream(%s, Last-Event-ID %q) = %v, want %v", tt.method, tt.lastEventID, got, tt.want)
			}
		})
	}
}
