package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/era"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
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

// resume GETs the session's stream from the event after lastID, as a
// client resumes a stream that dropped, and returns the status and body.
func (rs *leanSession) resume(version, lastID string) (int, string) {
	rs.t.Helper()
	req, _ := http.NewRequestWithContext(rs.t.Context(), http.MethodGet, rs.url, nil)
	req.Header.Set("Mcp-Session-Id", rs.id)
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rs.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// open POSTs body as rs.post does and returns the response as soon as its
// headers come (with a stream's priming event), its body unread. The
// request gives up after 30 seconds.
func (rs *leanSession) open(body string) *http.Response {
	rs.t.Helper()
	ctx, cancel := context.WithTimeout(rs.t.Context(), 30*time.Second)
	rs.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rs.url, strings.NewReader(body))
	if err != nil {
		rs.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", rs.id)
	req.Header.Set("Mcp-Protocol-Version", rs.version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rs.t.Fatal(err)
	}
	return resp
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

// waitUpstream has echo; wait, which runs until it is cancelled and then
// says so on cancelled (after started said it runs); and hold, which says
// it runs on started and answers "held" once released (or is cancelled).
func waitUpstream(t testing.TB, started, cancelled chan<- struct{}, release <-chan struct{}) func(context.Context) (mcp.Transport, error) {
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
	srv.AddTool(&mcp.Tool{Name: "hold", InputSchema: schema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return dialMemory(t, srv)
}

// serveWait serves a proxy of waitUpstream over HTTP; sdkCalls counts the
// tools/call requests the SDK handled; a send on release ends a call of hold.
func serveWait(t *testing.T, hopts HTTPOptions) (url string, started, cancelled, release chan struct{}, sdkCalls *atomic.Int32) {
	t.Helper()
	started, cancelled, release = make(chan struct{}, 4), make(chan struct{}, 4), make(chan struct{}, 4)
	url, sdkCalls, _ = serveCounting(t, ServerConfig{Upstream: upstream.Options{Name: "w", Dial: waitUpstream(t, started, cancelled, release)}, Prefix: "w"}, false, hopts)
	return url, started, cancelled, release, sdkCalls
}

// serveCounting serves over HTTP (with hopts) a proxy of the one server sc,
// every tools/call answered on the SDK's typed path if typed, and returns its
// /mcp URL and the count of the tools/call requests the SDK handled.
func serveCounting(t *testing.T, sc ServerConfig, typed bool, hopts HTTPOptions) (url string, sdkCalls *atomic.Int32, s *Server) {
	t.Helper()
	s, err := New(Options{Servers: []ServerConfig{sc}})
	if err != nil {
		t.Fatal(err)
	}
	s.typed = typed
	sdkCalls = countSDK(s, "tools/call")
	return startHTTP(t, s, hopts), sdkCalls, s
}

// countSDK counts the requests of method that reach s's SDK server (those
// the lean paths left to it).
func countSDK(s *Server, method string) *atomic.Int32 {
	n := new(atomic.Int32)
	s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
			if m == method {
				n.Add(1)
			}
			return next(ctx, m, req)
		}
	})
	return n
}

// TestHTTPLeanCall: an initialize-era session's tools/call is answered
// without the SDK, also for a call that asks for progress from 2025-11-25
// (TestHTTPLeanProgress), but not for a client that declared sampling or
// elicitation, which this shared server may ask for on the call's stream. A call answered at once
// gets one application/json response of a known length, in every version
// (from 2025-11-25 a longer one gets a resumable event stream:
// TestHTTPLeanCallResumable). Before 2025-11-25 a call that asks for
// progress goes to the SDK, whose stream it needs.
func TestHTTPLeanCall(t *testing.T) {
	// A quick call is answered with application/json whatever the load:
	// the priming delay is far longer than any call here.
	url, _, _, _, sdkCalls := serveWait(t, HTTPOptions{}.WithPrimeDelay(time.Hour))
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"w__echo","arguments":{"a":"<&>"}}}`
	tests := []struct {
		name, version, caps, body, wantType string
		sdk                                 bool
	}{
		{"json", "2025-06-18", `{"roots":{"listChanged":true}}`, call, "application/json", false},
		{"2025-11-25", "2025-11-25", `{"roots":{"listChanged":true}}`, call, "application/json", false},
		// No progress came: the answer is all there is to send.
		{"progress", "2025-11-25", `{}`, strings.Replace(call, `"arguments"`, `"_meta":{"progressToken":"p"},"arguments"`, 1), "application/json", false},
		// Before 2025-11-25 a lean answer is one application/json body:
		// the progress needs the SDK's event stream.
		{"progress without priming", "2025-06-18", `{}`, strings.Replace(call, `"arguments"`, `"_meta":{"progressToken":"p"},"arguments"`, 1), "text/event-stream", true},
		// A shared server may ask its one caller (relay.go callerFor), on
		// the call's stream (TestHTTPLeanCallAskable).
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
			if tt.sdk {
				return
			}
			if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) || len(resp.TransferEncoding) > 0 {
				t.Errorf("Content-Length %q, Transfer-Encoding %q for a body of %d bytes: want the length, not chunks", cl, resp.TransferEncoding, len(body))
			}
		})
	}
}

// TestHTTPLeanCallResumable: a lean call of 2025-11-25 that is not
// answered at once gets an event stream whose priming event reaches the
// client before the answer, and the answer is kept in the event store:
// a client whose stream dropped after the priming event gets the response
// replayed by the SDK (GET with Last-Event-ID).
func TestHTTPLeanCallResumable(t *testing.T) {
	url, started, _, release, sdkCalls := serveWait(t, HTTPOptions{})
	rs := startLeanSession(t, url, "2025-11-25", `{}`)
	resp := rs.open(`{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"w__hold"}}`)
	defer resp.Body.Close()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the hold tool never started")
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q of a call not answered at once, want text/event-stream", ct)
	}
	br := bufio.NewReader(resp.Body)
	var prime strings.Builder
	for !strings.HasSuffix(prime.String(), "\n\n") { // the priming event, while the call still runs
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the priming event: %q, %v", prime.String(), err)
		}
		prime.WriteString(line)
	}
	release <- struct{}{}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	// The retry field is the face's sseRetry (proxy/serve/streamable).
	events := parseSSE(prime.String() + string(rest))
	if len(events) != 2 || events[0].Event != "prime" || events[0].Retry != "1000" || events[0].Data != "" ||
		events[1].Event != "message" || events[1].ID == "" || !strings.Contains(events[1].Data, `"id":"h1"`) || !strings.Contains(events[1].Data, "held") {
		t.Fatalf("stream %q: want a priming event with retry, then the response", prime.String()+string(rest))
	}
	if n := sdkCalls.Load(); n != 0 {
		t.Errorf("%d calls served by the SDK, want the lean path", n)
	}
	// The stream dropped after the priming event: the SDK replays the
	// response from the event store.
	status, replay := rs.resume("2025-11-25", events[0].ID)
	if status != http.StatusOK || !strings.Contains(replay, events[1].Data) {
		t.Errorf("resume after the priming event: %d %q, want the response replayed", status, replay)
	}
}

// TestHTTPLeanCallPrimesEarly: the priming event of a lean call of
// 2025-11-25 that takes a while reaches the client before the answer, so
// that a stream that drops during the call can be resumed.
func TestHTTPLeanCallPrimesEarly(t *testing.T) {
	url, started, cancelled, _, _ := serveWait(t, HTTPOptions{})
	rs := startLeanSession(t, url, "2025-11-25", `{}`)
	// Without the priming event, nothing at all reaches the client until
	// the call ends, which it does not on its own.
	resp := rs.open(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"w__wait"}}`)
	defer resp.Body.Close()
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || first != "event: prime\n" {
		t.Fatalf("first line of the stream %q (%v), want the priming event", first, err)
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the wait tool never started")
	}
	select {
	case <-cancelled:
		t.Fatal("the call ended before the client cancelled it")
	default:
	}
	if resp, body := rs.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d %s", resp.StatusCode, body)
	}
	<-cancelled
}

// TestHTTPLeanCallCancel: a lean call in flight is cancelled upstream by
// the client's notifications/cancelled (a POST of its own) and by a DELETE
// of its session; an id already in flight is refused.
func TestHTTPLeanCallCancel(t *testing.T) {
	url, started, cancelled, _, _ := serveWait(t, HTTPOptions{})
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

// fixture is testdata/fixture, built once for the tests that need a server
// process (a 2026-07-28 one: a server reached through Dial speaks the
// initialize era).
var fixture struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// fixtureBin returns the path of the built fixture server.
func fixtureBin(t *testing.T) string {
	t.Helper()
	fixture.once.Do(func() {
		if fixture.dir, fixture.err = os.MkdirTemp("", "proxy-fixture-"); fixture.err != nil {
			return
		}
		fixture.path = filepath.Join(fixture.dir, "fixture")
		out, err := exec.Command("go", "build", "-o", fixture.path, "../testdata/fixture").CombinedOutput()
		if err != nil {
			fixture.err = fmt.Errorf("go build ../testdata/fixture: %v\n%s", err, out)
		}
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return fixture.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixture.dir != "" {
		_ = os.RemoveAll(fixture.dir)
	}
	os.Exit(code)
}

// serveModernFixture serves over HTTP a proxy of one fixture server "w" of
// the 2026-07-28 era (with its opt-in tool hdr), every tools/call answered
// on the SDK's typed path if typed. The fixture appends "call <tool> <args>"
// to calls and "cancelled w" to record; sdkCalls counts the tools/call
// requests the SDK handled.
func serveModernFixture(t *testing.T, typed bool) (url, calls, record string, sdkCalls *atomic.Int32) {
	return serveFixtureEra(t, typed, "modern")
}

// serveFixtureEra is serveModernFixture with a fixture of the era given
// ("modern", or "legacy": the bridge).
func serveFixtureEra(t *testing.T, typed bool, fixtureEra string) (url, calls, record string, sdkCalls *atomic.Int32) {
	t.Helper()
	dir := t.TempDir()
	calls, record = filepath.Join(dir, "calls"), filepath.Join(dir, "record")
	url, sdkCalls, _ = serveCounting(t, ServerConfig{Upstream: upstream.Options{Name: "w", Command: fixtureBin(t),
		Args: []string{"-name", "w", "-era", fixtureEra, "-extra", "hdr", "-calls", calls, "-record", record}}, Prefix: "w"}, typed, HTTPOptions{})
	return url, calls, record, sdkCalls
}

// modernPost POSTs body as a 2026-07-28 client does: the content headers,
// then hdr (MCP-Protocol-Version, Mcp-Method, Mcp-Name... as the case
// wants). It returns the status, the Content-Type and the JSON-RPC message
// of the answer (the data of an event stream's last event).
func modernPost(ctx context.Context, t *testing.T, url, body string, hdr map[string]string) (int, string, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", "", err
	}
	ct := resp.Header.Get("Content-Type")
	msg := strings.TrimSpace(string(b))
	if ct == "text/event-stream" {
		if ev := parseSSE(string(b)); len(ev) > 0 {
			msg = ev[len(ev)-1].Data
		}
	}
	return resp.StatusCode, ct, msg, nil
}

// modernCall is a 2026-07-28 tools/call body of the tool name (JSON) with
// the arguments args (JSON) and the _meta entries extra (JSON members, or
// "").
func modernCall(name, args, extra string) string {
	meta := `"io.modelcontextprotocol/protocolVersion":"` + era.Version + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}`
	if extra != "" {
		meta += "," + extra
	}
	return `{"jsonrpc":"2.0","id":"m1","method":"tools/call","params":{"name":` + name + `,"arguments":` + args + `,"_meta":{` + meta + `}}}`
}

// modernHeaders are the headers a 2026-07-28 client sends with a tools/call
// of name.
func modernHeaders(name string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": era.Version, "Mcp-Method": "tools/call", "Mcp-Name": name}
}

// TestHTTPLeanModern: a 2026-07-28 tools/call to a shared server, of
// 2026-07-28 or (the bridge) of the initialize era, is answered without the
// SDK when the SDK would serve it as it is, with the same answer (status,
// and the JSON-RPC result or error) as the SDK gives; every request the SDK
// would refuse or treat otherwise (headers that disagree with the body, a
// version not served, a _meta it rejects, a tool with parameters bound to
// headers, a progress token, Last-Event-ID) goes to the SDK and gets its
// answer.
func TestHTTPLeanModern(t *testing.T) {
	for _, fixtureEra := range []string{"modern", "legacy"} {
		t.Run(fixtureEra+"-server", func(t *testing.T) { testHTTPLeanModern(t, fixtureEra) })
	}
}

func testHTTPLeanModern(t *testing.T, fixtureEra string) {
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{}
		for hk, hv := range h {
			out[hk] = hv
		}
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	std := modernHeaders
	echo := modernCall(`"w__echo"`, `{"message":"<&>"}`, "")
	tests := []struct {
		name string
		body string
		hdr  map[string]string
		lean bool // served without the SDK
	}{
		{"call", echo, std("w__echo"), true},
		{"unknown tool", modernCall(`"w__nosuch"`, `{}`, ""), std("w__nosuch"), true},
		{"array arguments", modernCall(`"w__echo"`, `[1]`, ""), std("w__echo"), true},
		{"no version header", echo, with(std("w__echo"), "Mcp-Protocol-Version", ""), false},
		{"older version header", echo, with(std("w__echo"), "Mcp-Protocol-Version", "2025-11-25"), false},
		{"no Mcp-Name", echo, with(std("w__echo"), "Mcp-Name", ""), false},
		{"other Mcp-Name", echo, with(std("w__echo"), "Mcp-Name", "w__sleep"), false},
		{"other Mcp-Method", echo, with(std("w__echo"), "Mcp-Method", "tools/list"), false},
		{"version not served", strings.ReplaceAll(echo, era.Version, "2099-01-01"), with(std("w__echo"), "Mcp-Protocol-Version", "2099-01-01"), false},
		{"no client capabilities", strings.Replace(echo, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1), std("w__echo"), false},
		{"escaped _meta", strings.Replace(echo, `"io.modelcontextprotocol/clientInfo"`, `"io.modelcontextprotocol/client\\u0049nfo"`, 1), std("w__echo"), false},
		{"name not a string", modernCall(`5`, `{}`, ""), std("5"), false},
		{"progress", modernCall(`"w__echo"`, `{"message":"p"}`, `"progressToken":"p"`), std("w__echo"), true},
		{"unknown tool, progress", modernCall(`"w__nosuch"`, `{}`, `"progressToken":"p"`), std("w__nosuch"), true},
		{"header-bound parameter", modernCall(`"w__hdr"`, `{"region":"eu"}`, ""), with(std("w__hdr"), "Mcp-Param-Region", "eu"), false},
		{"header-bound parameter without its header", modernCall(`"w__hdr"`, `{"region":"eu"}`, ""), std("w__hdr"), false},
		{"Last-Event-ID", echo, with(std("w__echo"), "Last-Event-ID", "x_1"), false},
	}
	urls := map[bool]string{}
	counts := map[bool]*atomic.Int32{}
	for _, typed := range []bool{false, true} {
		urls[typed], _, _, counts[typed] = serveFixtureEra(t, typed, fixtureEra)
	}
	type answer struct {
		Status int
		Msg    map[string]any
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[bool]answer{}
			for _, typed := range []bool{false, true} {
				before := counts[typed].Load()
				status, ct, msg, err := modernPost(t.Context(), t, urls[typed], tt.body, tt.hdr)
				if err != nil {
					t.Fatal(err)
				}
				a := answer{Status: status}
				if json.Unmarshal([]byte(msg), &a.Msg) != nil {
					a.Msg = map[string]any{"text": msg} // a plain-text refusal
				}
				got[typed] = a
				if typed {
					continue
				}
				if sdk := counts[typed].Load() > before; tt.lean && sdk {
					t.Errorf("served by the SDK, want the lean path")
				}
				// The SDK answers a call's result on an event stream, the
				// lean path as one JSON body, or an event stream when the
				// call asks for progress.
				plain := ct == "application/json" || ct == "text/event-stream" && strings.Contains(tt.body, "progressToken")
				if lean := plain && status == http.StatusOK; tt.lean != lean && !strings.Contains(msg, `"error"`) {
					t.Errorf("Content-Type %q, status %d: served on the lean path %v, want %v", ct, status, lean, tt.lean)
				}
			}
			if diff := cmp.Diff(got[true], got[false]); diff != "" {
				t.Errorf("SDK (-) vs lean proxy (+):\n%s", diff)
			}
		})
	}
	t.Run("result", func(t *testing.T) {
		_, _, msg, err := modernPost(t.Context(), t, urls[false], echo, std("w__echo"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"id":"m1"`, `"resultType":"complete"`, `"io.modelcontextprotocol/serverInfo":{"name":"manifold"`, `w: \u003c\u0026\u003e`} {
			if !strings.Contains(msg, want) && !strings.Contains(msg, strings.ReplaceAll(want, `\u003c\u0026\u003e`, "<&>")) {
				t.Errorf("answer %s lacks %s", msg, want)
			}
		}
	})
}

// TestHTTPLeanModernStatus: a 2026-07-28 client served on the lean path is
// in the status's clients, with the capabilities its _meta declared.
func TestHTTPLeanModernStatus(t *testing.T) {
	url, sdkCalls, s := serveCounting(t, ServerConfig{Upstream: upstream.Options{Name: "w", Command: fixtureBin(t),
		Args: []string{"-name", "w", "-era", "modern"}}, Prefix: "w"}, false, HTTPOptions{})
	body := strings.Replace(modernCall(`"w__echo"`, `{"message":"x"}`, ""),
		`"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"roots":{},"elicitation":{}}`, 1)
	status, _, msg, err := modernPost(t.Context(), t, url, body, modernHeaders("w__echo"))
	if err != nil || status != http.StatusOK || !strings.Contains(msg, "w: x") {
		t.Fatalf("call = %d %s, %v", status, msg, err)
	}
	if n := sdkCalls.Load(); n != 0 {
		t.Fatalf("%d calls served by the SDK, want the lean path", n)
	}
	tools := 0
	for _, e := range s.Catalog() {
		if e.Kind == "tool" && e.Visible {
			tools++
		}
	}
	var got []ClientStatus
	for _, c := range s.Clients() {
		c.Since, c.LastSeen = time.Time{}, time.Time{}
		got = append(got, c)
	}
	want := []ClientStatus{{Name: "raw", Version: "1", Protocol: era.Version, Capabilities: []string{"elicitation", "roots"}, Catalog: "full", Tools: tools}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clients after a lean 2026-07-28 call (-want +got):\n%s", diff)
	}
}

// TestHTTPModernCancel: a 2026-07-28 client cancels a call by closing its
// request ("the server MUST treat a client disconnect as cancellation of
// that request"), on the lean path and on the SDK's.
func TestHTTPModernCancel(t *testing.T) {
	for _, typed := range []bool{false, true} {
		t.Run(map[bool]string{false: "lean", true: "sdk"}[typed], func(t *testing.T) {
			url, calls, record, _ := serveModernFixture(t, typed)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ended := make(chan error, 1)
			go func() {
				_, _, _, err := modernPost(ctx, t, url, modernCall(`"w__sleep"`, `{"ms":120000}`, ""), modernHeaders("w__sleep"))
				ended <- err
			}()
			// The call is cancelled only once the server runs it.
			waitFile(t, calls, "call sleep", time.Minute)
			if b, _ := os.ReadFile(record); len(b) > 0 {
				t.Fatalf("the call was cancelled before the client went away: %s", b)
			}
			cancel()
			// Without the cancellation, the SDK's session ends the call
			// when it closes, a minute later.
			waitFile(t, record, "cancelled w", 30*time.Second)
			<-ended
		})
	}
}

// waitFile waits (at most d) until the file at path holds want.
func waitFile(t *testing.T, path, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("%s holds %q, want %q within %s", path, b, want, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHTTPLeanCallAskable: the calls of a session whose client declared
// sampling or elicitation go to the SDK, whose stream of the request
// carries what the server asks: a shared server of the initialize era
// (which asks its one caller: relay.go callerFor), one of 2026-07-28
// (whose input_required the proxy puts to the client), a server with
// isolation = "session" (whose process is offered what the client
// declared) and a confirm rule (the approval may be elicited). A client
// that declared neither takes the lean path.
func TestHTTPLeanCallAskable(t *testing.T) {
	fx := fixtureBin(t)
	srv := func(name, era string, perSession bool) ServerConfig {
		return ServerConfig{Upstream: upstream.Options{Name: name, Command: fx, Args: []string{"-name", name, "-era", era}}, Prefix: name, PerSession: perSession}
	}
	s, err := New(Options{
		Servers: []ServerConfig{srv("l", "legacy", false), srv("m", "modern", false), srv("p", "legacy", true), srv("c", "legacy", false)},
		Policy:  &policy.Rules{TableRules: []policy.Rule{{Name: "ask", Match: "c__echo", Allow: true, Confirm: true, Source: "test:1"}}},
		// The confirm case is only checked for its path: no one answers
		// the approval, which ends the call soon.
		ConfirmTTL: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	sdkCalls := countSDK(s, "tools/call")
	url := startHTTP(t, s, HTTPOptions{})
	call := func(tool, meta string) string {
		return `{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{` + meta + `"name":"` + tool + `","arguments":{"message":"hi"}}}`
	}
	for _, tt := range []struct {
		name, caps, body string
		sdk              bool
	}{
		{"shared legacy server", `{"sampling":{},"elicitation":{}}`, call("l__echo", ""), true},
		{"elicitation only", `{"elicitation":{"form":{},"url":{}}}`, call("l__echo", ""), true},
		{"no capabilities", `{}`, call("l__echo", ""), false},
		{"progress", `{"elicitation":{}}`, call("l__echo", `"_meta":{"progressToken":"p"},`), true},
		{"shared modern server", `{"sampling":{},"elicitation":{}}`, call("m__echo", ""), true},
		{"isolation session", `{"sampling":{},"elicitation":{}}`, call("p__echo", ""), true},
		{"confirm rule", `{"elicitation":{}}`, call("c__echo", ""), true},
		{"unknown tool", `{"elicitation":{}}`, call("l__nosuch", ""), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := startLeanSession(t, url, "2025-06-18", tt.caps)
			before := sdkCalls.Load()
			resp, body := rs.post(tt.body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"a1"`) {
				t.Fatalf("status %d, body %s: want an answer to a1", resp.StatusCode, body)
			}
			if sdk := sdkCalls.Load() > before; sdk != tt.sdk {
				t.Errorf("served by the SDK: %v, want %v (body %s)", sdk, tt.sdk, body)
			}
			if !tt.sdk && !strings.Contains(body, "hi") {
				t.Errorf("body %s: want the echo of the arguments", body)
			}
		})
	}
}

// TestHTTPLeanProgress: a tools/call that asks for progress is served on
// the lean path, the server's progress notifications (with the client's
// own token) events of the call's stream before its response: for an
// initialize-era session of 2025-11-25, on the stream kept in the event
// store (a resume after the priming event replays them and the response),
// and for a 2026-07-28 request, of either era's server, on a stream kept
// nowhere. A numeric token beyond 2^53 comes back exact.
func TestHTTPLeanProgress(t *testing.T) {
	progressServer := func(t *testing.T, fixtureEra string) (string, *atomic.Int32) {
		url, sdkCalls, _ := serveCounting(t, ServerConfig{Upstream: upstream.Options{Name: "w", Command: fixtureBin(t),
			Args: []string{"-name", "w", "-era", fixtureEra, "-extra", "progress"}}, Prefix: "w"}, false, HTTPOptions{})
		return url, sdkCalls
	}
	// progressOf returns the events' messages: "token progress/total" for
	// each notifications/progress, "result <text>" for the response.
	progressOf := func(t *testing.T, events []sseEvent) []string {
		t.Helper()
		var out []string
		for _, ev := range events {
			if ev.Data == "" {
				continue // the priming event
			}
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Token    json.RawMessage `json:"progressToken"`
					Progress float64         `json:"progress"`
					Total    float64         `json:"total"`
				} `json:"params"`
				Result *struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &msg); err != nil {
				t.Fatalf("event %q: %v", ev.Data, err)
			}
			switch {
			case msg.Method == "notifications/progress":
				out = append(out, fmt.Sprintf("%s %v/%v", msg.Params.Token, msg.Params.Progress, msg.Params.Total))
			case msg.Result != nil && len(msg.Result.Content) > 0:
				out = append(out, "result "+msg.Result.Content[0].Text)
			default:
				out = append(out, "other "+ev.Data)
			}
		}
		return out
	}

	t.Run("2025-11-25", func(t *testing.T) {
		url, sdkCalls := progressServer(t, "legacy")
		rs := startLeanSession(t, url, "2025-11-25", `{}`)
		resp, body := rs.post(`{"jsonrpc":"2.0","id":"p1","method":"tools/call","params":{"name":"w__progress","arguments":{"steps":3,"tag":"t"},"_meta":{"progressToken":"tk"}}}`)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("status %d, Content-Type %q: want 200 text/event-stream; body %s", resp.StatusCode, ct, body)
		}
		if n := sdkCalls.Load(); n != 0 {
			t.Errorf("%d calls served by the SDK, want the lean path", n)
		}
		events := parseSSE(body)
		want := []string{`"tk" 1/3`, `"tk" 2/3`, `"tk" 3/3`, `result w: progress t done, token "mf-progress-`}
		got := progressOf(t, events)
		if len(got) != len(want) || !strings.HasPrefix(got[3], want[3]) || !slices.Equal(got[:3], want[:3]) {
			t.Fatalf("events %q, want %q (then the server's token)", got, want)
		}
		if events[0].Event != "prime" || events[0].ID == "" {
			t.Fatalf("first event %+v, want the priming event", events[0])
		}
		for i, ev := range events[1:] {
			if ev.ID != fmt.Sprintf("%s_%d", strings.Split(events[0].ID, "_")[0], i+1) {
				t.Errorf("event %d has id %q, want the stream's next", i+1, ev.ID)
			}
		}
		// The stream dropped after the priming event: the resume replays
		// the progress and the response.
		status, replay := rs.resume("2025-11-25", events[0].ID)
		if again := progressOf(t, parseSSE(replay)); status != http.StatusOK || !slices.Equal(again, got) {
			t.Errorf("resumed: %d %q, want %q", status, again, got)
		}
	})
	for _, fixtureEra := range []string{"modern", "legacy"} {
		t.Run("2026-07-28 "+fixtureEra+" server", func(t *testing.T) {
			url, sdkCalls := progressServer(t, fixtureEra)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
				// A token beyond 2^53 comes back exact.
				strings.NewReader(modernCall(`"w__progress"`, `{"steps":3,"tag":"t"}`, `"progressToken":9007199254740993`)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("w__progress") {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q: want 200 text/event-stream; body %s", resp.StatusCode, ct, b)
			}
			if n := sdkCalls.Load(); n != 0 {
				t.Errorf("%d calls served by the SDK, want the lean path", n)
			}
			got := progressOf(t, parseSSE(string(b)))
			want := []string{"9007199254740993 1/3", "9007199254740993 2/3", "9007199254740993 3/3", "result w: progress t done, token "}
			if len(got) != len(want) || !strings.HasPrefix(got[3], want[3]) || !slices.Equal(got[:3], want[:3]) {
				t.Fatalf("events %q, want %q", got, want)
			}
			if !strings.Contains(string(b), `"resultType":"complete"`) {
				t.Errorf("body %s: the response lacks resultType", b)
			}
		})
	}
}

// TestMayBeModern: the _meta that callEra and era.Of read without
// decoding (era.MayBeModern false), or through a memo keyed without the
// progress token (era.MemoKey), are read as the decoders read them, one after
// the other as a client sends them.
func TestMayBeModern(t *testing.T) {
	for _, meta := range []string{
		`{"progressToken":12}`,
		`{"progressToken":"a","x":{"y":[1,2]}}`,
		`{}`,
		`{"io.modelcontextprotocol/protocolVersion":"` + era.Version + `","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}`,
		`{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`,
		`{"io.modelcontextprotocol/protocol\u0056ersion":"` + era.Version + `","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"x":"io.modelcontextprotocol/protocolVersion"}`,
		// The token's value is left out of the memos' key (era.MemoKey): a
		// token that is itself a _meta of another era changes nothing.
		`{"io.modelcontextprotocol/protocolVersion":"` + era.Version + `","io.modelcontextprotocol/clientCapabilities":{},"progressToken":{"io.modelcontextprotocol/protocolVersion":"x"}}`,
		`{"io.modelcontextprotocol/protocolVersion":"` + era.Version + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug","progressToken":7}`,
		`{"io.modelcontextprotocol/protocolVersion":"` + era.Version + `","io.modelcontextprotocol/clientCapabilities":[],"progressToken":8}`,
	} {
		b := []byte(meta)
		if got, want := era.OfRequest(nil, b).Modern, era.OfRequestMeta(b).Modern; got != want {
			t.Errorf("callEra(%s).modern = %v, want %v", meta, got, want)
		}
		params := []byte(`{"name":"x","_meta":` + meta + `}`)
		if got, want := era.Of(params), era.OfMeta(b); got != want {
			t.Errorf("era.Of(%s) = %d, want %d", meta, got, want)
		}
	}
}

// BenchmarkRequestEraProgress reads the era of a 2026-07-28 client's calls
// that ask for progress, a new token each, as the lean paths do.
func BenchmarkRequestEraProgress(b *testing.B) {
	metas := make([][]byte, 64)
	for i := range metas {
		metas[i] = []byte(`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"` + era.Version +
			`","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"3.0"},"progressToken":` + fmt.Sprint(i) + `}}`)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		params := metas[i%len(metas)]
		i++
		if era.Of(params) != era.Modern || !era.OfRequest(nil, wire.Member(params, "_meta")).Modern {
			b.Fatal("not modern")
		}
	}
}

// noFlush is a ResponseWriter that cannot flush, as some middleware's are.
type noFlush struct{ http.ResponseWriter }

// TestWriteWhole: a whole response goes out with its length, flushed; a
// writer that cannot flush still gets it (sent when the handler returns),
// and that is no error: the answer counts as delivered.
func TestWriteWhole(t *testing.T) {
	for _, flushes := range []bool{true, false} {
		rec := httptest.NewRecorder()
		var w http.ResponseWriter = rec
		if !flushes {
			w = noFlush{rec}
		}
		if err := wire.WriteWhole(w, []byte(`{"ok":true}`)); err != nil {
			t.Errorf("flushes %v: %v, want no error", flushes, err)
		}
		if got := rec.Header().Get("Content-Length"); got != "11" || rec.Body.String() != `{"ok":true}` || rec.Flushed != flushes {
			t.Errorf("flushes %v: Content-Length %q, body %q, flushed %v", flushes, got, rec.Body.String(), rec.Flushed)
		}
	}
}
