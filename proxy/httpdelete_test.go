package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestDeleteFreesItsPlaceAtOnce: at the session cap, an initialize right
// after a DELETE succeeds; the place is freed before the DELETE is answered,
// not later by the session's watcher (seen in CI: a 503 right after a 204).
func TestDeleteFreesItsPlaceAtOnce(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer(HTTPOptions{MaxSessions: 1})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/mcp"

	post := func(sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Read to the end: the answer is an SSE stream whose priming event
		// comes before the result, and a client gone before the result
		// leaves an uninitialized session, which the SDK closes.
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	for round := range 50 {
		res := post("", initialize)
		sid := res.Header.Get("Mcp-Session-Id")
		if res.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("round %d: initialize: status %d, session %q", round, res.StatusCode, sid)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		del, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		del.Body.Close()
		if del.StatusCode != http.StatusNoContent {
			t.Fatalf("round %d: DELETE: status %d", round, del.StatusCode)
		}
	}
}
