package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/upstream"
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
	callCtx, pc, err := s.bridge.Park(t.Context(), testBind, elicitCaps(), time.Minute, out.finish)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = pc.Ask(callCtx, "elicitation/create", "form", map[string]string{"message": "?"}) }()
	<-out // the input_required result: parked
	wctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := s.WaitIdle(wctx); err == nil || s.Parked() != 1 {
		t.Fatalf("WaitIdle with a call parked = %v (parked %d); want it to wait for the call", err, s.Parked())
	}
	pc.Finish(json.RawMessage(`{"content":[]}`), nil) // ends the call while parked: kept for its retry
	pc.Expire()
	if err := s.WaitIdle(t.Context()); err != nil || s.Parked() != 0 {
		t.Errorf("WaitIdle after the parked call ended = %v (parked %d), want nil", err, s.Parked())
	}
}

// TestDrainServesParkedRetry: a 2026-07-28 call parked here for the
// client's input is finished here after the drain began: the retry that
// carries the client's answer reaches its call instead of the 503 of new
// work (a load balancer without retries, or one that has not yet seen
// /readyz fail, still sends it here), while a new call is refused.
func TestDrainServesParkedRetry(t *testing.T) {
	var runs atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "go on?", RequestedSchema: &jsonschema.Schema{Type: "object"}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered " + res.Action}}}, nil
	})
	s, err := New(Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "up", Dial: dialMemory(t, srv)}, Prefix: "up", PerSession: true}}})
	if err != nil {
		t.Fatal(err)
	}
	url := startHTTP(t, s, HTTPOptions{})

	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			s.Drain() // between the two rounds of the call
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: era.Version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up__ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("the call parked before the drain: %v", err)
	}
	if b, _ := json.Marshal(res.Content); res.IsError || !strings.Contains(string(b), "answered accept") {
		t.Errorf("the call parked before the drain = %s (error %v), want the server's answer", b, res.IsError)
	}
	// New work is still refused: a call (whose arguments name a
	// requestState, which is no retry), and a retry whose state is not
	// one of Manifold's.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up__ask", Arguments: map[string]any{"requestState": "x"}}); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("a new call while draining: %v, want refused with 503", err)
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__ask","arguments":{},"requestState":"forged",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	r, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", era.Version)
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "up__ask")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), "requestState") {
		t.Errorf("a forged retry while draining: %d %s, want the error of a bad requestState", resp.StatusCode, b)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the server's tool ran %d times, want once (the parked call)", n)
	}
}
