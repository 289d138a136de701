package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestDrain checks what Drain changes on the HTTP face: /readyz turns 503
// and /healthz stays 200; a request that would start new work (a new
// session, a 2026-07-28 request, a session's GET stream) gets 503 with
// Retry-After; a request of an existing session passes to the session
// checks (here: 404, no such session).
func TestDrain(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := s.HTTPHandler(HTTPOptions{})
	do := func(method, path, session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if code := do(http.MethodGet, "/readyz", "", "").Code; code != http.StatusOK {
		t.Fatalf("GET /readyz before Drain = %d, want 200", code)
	}
	s.Drain()
	if w := do(http.MethodGet, "/readyz", "", ""); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "draining") {
		t.Errorf("GET /readyz while draining = %d %q, want 503 draining", w.Code, w.Body)
	}
	if code := do(http.MethodGet, "/healthz", "", "").Code; code != http.StatusOK {
		t.Errorf("GET /healthz while draining = %d, want 200", code)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	for _, tc := range []struct{ name, method, session, body string }{
		{"new session", http.MethodPost, "", initialize},
		{"GET stream", http.MethodGet, "some-session", ""},
	} {
		w := do(tc.method, "/mcp", tc.session, tc.body)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "draining") {
			t.Errorf("%s while draining: %d %q (Retry-After %q), want 503 with Retry-After", tc.name, w.Code, w.Body, w.Header().Get("Retry-After"))
		}
	}
	if w := do(http.MethodPost, "/mcp", "some-session", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`); w.Code != http.StatusNotFound {
		t.Errorf("a session's POST while draining = %d %q, want it to reach the session checks (404)", w.Code, w.Body)
	}
	if s.InFlight() != 0 {
		t.Errorf("InFlight = %d after every request ended, want 0", s.InFlight())
	}
	if err := s.WaitIdle(context.Background()); err != nil {
		t.Errorf("WaitIdle with nothing in flight: %v", err)
	}

	// A call parked here keeps the drain waiting (its retry may come
	// through another replica) until it ends.
	out := make(outcomes, 4)
	callCtx, pc, err := s.newParked(t.Context(), testBind, elicitCaps(), time.Minute, out.finish)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = pc.ask(callCtx, "elicitation/create", "form", map[string]string{"message": "?"}) }()
	<-out // the input_required result: parked
	wctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := s.WaitIdle(wctx); err == nil || s.Parked() != 1 {
		t.Fatalf("WaitIdle with a call parked = %v (parked %d); want it to wait for the call", err, s.Parked())
	}
	pc.finish(json.RawMessage(`{"content":[]}`), nil) // ends the call while parked: kept for its retry
	pc.expire()
	if err := s.WaitIdle(t.Context()); err != nil || s.Parked() != 0 {
		t.Errorf("WaitIdle after the parked call ended = %v (parked %d), want nil", err, s.Parked())
	}
}
