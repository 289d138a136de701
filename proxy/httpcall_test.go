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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// leanSession is an initialize-era HTTP session driven with raw requests, to
// see the wire: content types, status codes, bodies.
type leanSession struct {
	t       *testing.T
	url     string
	id      string
	version string // the Mcp-Protocol-Version header; if empty, 2025-11-25
}

func (rs *leanSession) post(body string) (*http.Response, string) {
	rs.t.Helper()
	req, err := http.NewRequestWithContext(rs.t.Context(), http.MethodPost, rs.url, strings.NewReader(body))
	if err != nil {
		rs.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if rs.id != "" {
		req.Header.Set("Mcp-Session-Id", rs.id)
		v := rs.version
		if v == "" {
			v = "2025-11-25"
		}
		req.Header.Set("Mcp-Protocol-Version", v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rs.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rs.t.Fatal(err)
	}
	return resp, string(b)
}

// startLeanSession initializes a session of a client declaring caps (JSON).
func startLeanSession(t *testing.T, url, version, caps string) *leanSession {
	t.Helper()
	rs := &leanSession{t: t, url: url}
	resp, _ := rs.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"0"}}}`)
	rs.version = version
	if rs.id = resp.Header.Get("Mcp-Session-Id"); rs.id == "" {
		t.Fatalf("initialize: status %d, no session id", resp.StatusCode)
	}
	if resp, body := rs.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: status %d %s", resp.StatusCode, body)
	}
	return rs
}

// waitUpstream has echo, and wait, which runs until it is cancelled and then
// says so on cancelled (after started said it runs).
func waitUpstream(t testing.TB, started, cancelled chan<- struct{}) func(context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "w", Version: "0"}, nil)
	schema := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + string(req.Params.Arguments)}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: schema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	return dialMemory(t, srv)
}

// serveWait serves a proxy of waitUpstream over HTTP; sdkCalls counts the
// tools/call requests the SDK handled.
func serveWait(t *testing.T) (url string, started, cancelled chan struct{}, sdkCalls *atomic.Int32) {
	t.Helper()
	started, cancelled = make(chan struct{}, 4), make(chan struct{}, 4)
	s, err := New(Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "w", Dial: waitUpstream(t, started, cancelled)}, Prefix: "w"}}})
	if err != nil {
		t.Fatal(err)
	}
	sdkCalls = new(atomic.Int32)
	s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				sdkCalls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", started, cancelled, sdkCalls
}

// TestHTTPLeanCall: an initialize-era session's tools/call is answered
// without the SDK: one application/json response, or for 2025-11-25 an
// event stream of a priming event and the response that the SDK resumes from
// the event store (GET with Last-Event-ID). A call that asks for progress,
// and any call of a client that can be asked for sampling or elicitation,
// go to the SDK, whose stream those messages need.
func TestHTTPLeanCall(t *testing.T) {
	url, _, _, sdkCalls := serveWait(t)
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"w__echo","arguments":{"a":"<&>"}}}`
	tests := []struct {
		name, version, caps, body, wantType string
		sdk                                 bool
	}{
		{"json", "2025-06-18", `{"roots":{"listChanged":true}}`, call, "application/json", false},
		{"stream", "2025-11-25", `{"roots":{"listChanged":true}}`, call, "text/event-stream", false},
		{"progress", "2025-11-25", `{}`, strings.Replace(call, `"arguments"`, `"_meta":{"progressToken":"p"},"arguments"`, 1), "text/event-stream", true},
		{"sampling client", "2025-06-18", `{"sampling":{}}`, call, "text/event-stream", true},
		{"elicitation client", "2025-11-25", `{"elicitation":{}}`, call, "text/event-stream", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := startLeanSession(t, url, tt.version, tt.caps)
			before := sdkCalls.Load()
			resp, body := rs.post(tt.body)
			if got := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || got != tt.wantType {
				t.Fatalf("status %d, Content-Type %q, want 200 %q; body %s", resp.StatusCode, got, tt.wantType, body)
			}
			if sdk := sdkCalls.Load() > before; sdk != tt.sdk {
				t.Errorf("served by the SDK: %v, want %v", sdk, tt.sdk)
			}
			if !strings.Contains(body, `"id":"c1"`) || !strings.Contains(body, `echo {\"a\":\"\u003c\u0026\u003e\"}`) && !strings.Contains(body, `echo {\"a\":\"<&>\"}`) {
				t.Errorf("body %s: want the echo of the arguments for id c1", body)
			}
			if tt.name != "stream" {
				return
			}
			events := parseSSE(body)
			if len(events) != 2 || events[0].Event != "prime" || events[0].Retry != sseRetry || events[1].Event != "message" || events[1].ID == "" {
				t.Fatalf("stream %q: want a priming event with retry, then the message", body)
			}
			// The stream dropped after the priming event: the SDK replays
			// the response from the event store.
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			req.Header.Set("Mcp-Session-Id", rs.id)
			req.Header.Set("Mcp-Protocol-Version", tt.version)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", events[0].ID)
			gr, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			replay, _ := io.ReadAll(gr.Body)
			gr.Body.Close()
			if gr.StatusCode != http.StatusOK || !strings.Contains(string(replay), events[1].Data) {
				t.Errorf("resume after the priming event: %d %q, want the response replayed", gr.StatusCode, replay)
			}
		})
	}
}

// TestHTTPLeanCallCancel: a lean call in flight is cancelled upstream by
// the client's notifications/cancelled (a POST of its own) and by a DELETE
// of its session; an id already in flight is refused.
func TestHTTPLeanCallCancel(t *testing.T) {
	url, started, cancelled, _ := serveWait(t)
	for _, how := range []string{"notification", "delete"} {
		t.Run(how, func(t *testing.T) {
			rs := startLeanSession(t, url, "2025-06-18", `{}`)
			answered := make(chan string, 1)
			go func() {
				_, body := rs.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"w__wait"}}`)
				answered <- body
			}()
			select {
			case <-started:
			case <-time.After(time.Minute):
				t.Fatal("the wait tool never started")
			}
			resp, body := rs.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"w__echo"}}`)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "already used by a request in flight") {
				t.Errorf("a second call with id 7 in flight: status %d, %s", resp.StatusCode, body)
			}
			select {
			case <-cancelled:
				t.Fatal("the call was cancelled before the client asked")
			default:
			}
			if how == "notification" {
				if resp, body := rs.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); resp.StatusCode != http.StatusAccepted {
					t.Fatalf("notifications/cancelled: status %d %s", resp.StatusCode, body)
				}
			} else {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
				req.Header.Set("Mcp-Session-Id", rs.id)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			select {
			case <-cancelled:
			case <-time.After(time.Minute):
				t.Fatalf("the upstream call was not cancelled by the %s", how)
			}
			select {
			case body := <-answered:
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal([]byte(body), &m); err == nil && len(m.Result) > 0 {
					t.Errorf("the cancelled call got a result: %s", body)
				}
			case <-time.After(time.Minute):
				t.Fatal("the cancelled call's POST never ended")
			}
		})
	}
}
