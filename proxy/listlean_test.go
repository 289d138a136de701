package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/era"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
)

// pagedTools is more tools than the SDK's page (mcp.DefaultPageSize), so
// that a list has a second page.
const pagedTools = mcp.DefaultPageSize + 10

// listLeanServer starts a proxy in front of one in-memory upstream of
// pagedTools tools (t0000 …, one of them described with the word
// "hunter2"), with opts, and counts the tools/list requests the SDK's
// server handles.
func listLeanServer(t *testing.T, opts Options) (*Server, *atomic.Int32) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "0"}, nil)
	for i := range pagedTools {
		desc := fmt.Sprintf("Tool %d <&> of many.", i)
		if i == 7 {
			desc = "Knows hunter2."
		}
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), Title: "T", Description: desc, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	opts.Servers = []ServerConfig{{Upstream: upstream.Options{Name: "many", Dial: dialMemory(t, srv)}, Prefix: "m"}}
	s := startedServer(t, opts)
	sdk := new(atomic.Int32)
	s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				sdk.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return s, sdk
}

// forgetLists drops the lists prepared so far: the next list of every view
// is the SDK's again.
func forgetLists(s *Server) {
	c := s.catalog.Load()
	c.lists.m.Clear()
	c.lists.n.Store(0)
}

// ask sends line and returns the answer to id, the whole line.
func (rs *rawSession) ask(line, id string) string {
	rs.t.Helper()
	rs.send(line)
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-rs.lines:
			if !ok {
				rs.fail("the proxy closed stdout")
			}
			if parseAnswer(rs.t, l).ID == id {
				return string(l)
			}
		case <-timeout:
			rs.fail("no answer with id %s within 20s", id)
		}
	}
}

// modernList is a 2026-07-28 tools/list line of client name with params
// extra (members after _meta, with their leading comma).
func modernList(id, client, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + era.Version +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"` + client + `","version":"0"}}` + extra + `}}`
}

// nextCursor is the nextCursor of a tools/list answer line.
func nextCursor(t *testing.T, line string) string {
	t.Helper()
	var m struct {
		Result struct {
			NextCursor string `json:"nextCursor"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Result.NextCursor == "" {
		t.Fatalf("no nextCursor in %.300s (%v)", line, err)
	}
	return m.Result.NextCursor
}

// TestLeanListStdio: over stdio, a tools/list whose answer the SDK's path
// prepared is answered on the lean path with the same bytes as the SDK's
// answer (the whole line), for each view: protocol versions, params, the
// second page, catalog mode search, a 2026-07-28 client in either mode, an
// id the SDK's path maps. The SDK answers the first list of each view.
func TestLeanListStdio(t *testing.T) {
	s, sdk := listLeanServer(t, Options{Catalog: CatalogOptions{Mode: ModeFull, Clients: []ClientMode{{Name: "searcher", Mode: ModeSearch}}}})
	sessions := map[string]*rawSession{}
	session := func(v string) *rawSession {
		if sessions[v] == nil {
			sessions[v] = openRawVersion(t, s, v)
		}
		return sessions[v]
	}
	// A session whose client is in search mode.
	search := openRawVersion(t, s, "")
	search.send(strings.Replace(initLine, `"name":"t"`, `"name":"searcher"`, 1))
	search.until("0", 0)
	search.send(initializedLine)

	page2 := nextCursor(t, session("2025-11-25").ask(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1"))
	modernPage2 := nextCursor(t, session("").ask(modernList("1", "m", ""), "1"))
	tests := []struct {
		name string
		rs   *rawSession
		line string
	}{
		{"2025-11-25", session("2025-11-25"), `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{"2025-03-26", session("2025-03-26"), `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{"2024-11-05", session("2024-11-05"), `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{"empty params", session("2025-11-25"), `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`},
		{"meta", session("2025-11-25"), `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"progressToken":3}}}`},
		{"page 2", session("2025-11-25"), `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"` + page2 + `"}}`},
		{"mapped id", session("2025-11-25"), `{"jsonrpc":"2.0","id":1.50,"method":"tools/list"}`},
		{"search mode", search, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{"search mode, any cursor", search, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"zz"}}`},
		{"2026-07-28", session(""), modernList("7", "m", "")},
		{"2026-07-28 page 2", session(""), modernList("7", "m", `,"cursor":"`+modernPage2+`"`)},
		{"2026-07-28 search mode", session(""), modernList("7", "searcher", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rs.t = t
			id := string(parseID(t, tt.line))
			forgetLists(s)
			before := sdk.Load()
			want := tt.rs.ask(tt.line, id)
			if sdk.Load() != before+1 {
				t.Fatalf("the first list of the view was not the SDK's")
			}
			for range 2 {
				if got := tt.rs.ask(tt.line, id); got != want {
					t.Errorf("lean answer differs from the SDK's:\n got %.400s\nwant %.400s", got, want)
				}
			}
			if n := sdk.Load() - before - 1; n != 0 {
				t.Errorf("%d later lists of the view served by the SDK, want 0 (lean)", n)
			}
			if !strings.Contains(want, `"result":{`) {
				t.Errorf("not a result: %.300s", want)
			}
		})
	}
}

// parseID is the raw id of a request line.
func parseID(t *testing.T, line string) json.RawMessage {
	t.Helper()
	var m struct{ ID json.RawMessage }
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// TestLeanListStdioRefused: requests the raw scanner could read otherwise
// than the SDK go to the SDK, whose answer they get: bad params, a cursor of
// the wrong type, escaped or case-variant keys, repeated members, an
// unknown or huge cursor, a list before initialize, a request of the other
// era, a list whose answer holds a secret of the config. Where the SDK
// answers with a list, it is the list the plain request gets.
func TestLeanListStdioRefused(t *testing.T) {
	s, sdk := listLeanServer(t, Options{Redactor: redact.New("hunter3")})
	rs := openRaw(t, s)
	first := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	page1 := rs.ask(first, "1")
	cursor := nextCursor(t, page1)
	second := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + cursor + `"}}`
	page2 := rs.ask(second, "1")
	if got := rs.ask(second, "1"); got != page2 { // prepared: lean
		t.Fatalf("page 2 twice differs")
	}
	escaped := strings.Replace(cursor, cursor[:1], fmt.Sprintf(`\u%04x`, cursor[0]), 1)
	tests := []struct {
		name, line string
		want       string // the answer, or "error CODE"
	}{
		{"params a number", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":5}`, "error -32600"}, // frame.Check
		{"params null", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`, page1},
		{"cursor a number", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}`, "error -32602"},
		{"cursor null", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}`, page1},
		{"unknown cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"bm9wZQ=="}}`, "error -32602"},
		{"huge cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + strings.Repeat("A", 200<<10) + `"}}`, "error -32602"},
		{"escaped key", strings.Replace(second, `"cursor"`, `"curs\u006fr"`, 1), page2},
		{"escaped cursor", strings.Replace(second, cursor, escaped, 1), page2},
		{"case variant key", strings.Replace(second, `"cursor"`, `"Cursor"`, 1), page1},
		{"repeated cursor", strings.Replace(second, `{"cursor"`, `{"cursor":"bm9wZQ==","cursor"`, 1), page2},
		{"unknown member", strings.Replace(second, `{"cursor"`, `{"x":1,"cursor"`, 1), page2},
		{"meta not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[]}}`, "error -32602"},
		{"modern request, legacy session", modernList("1", "m", ""), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs.t = t
			for range 2 {
				before := sdk.Load()
				got := rs.ask(tt.line, "1")
				// The lean path answers only with a list; an error
				// the SDK gives before its handlers run is not counted.
				if sdk.Load() != before+1 && !strings.HasPrefix(tt.want, "error ") {
					t.Errorf("not served by the SDK")
				}
				switch {
				case tt.want == "":
				case strings.HasPrefix(tt.want, "error "):
					if !strings.Contains(got, `"error":{"code":`+strings.TrimPrefix(tt.want, "error ")) {
						t.Errorf("answer %.300s, want %s", got, tt.want)
					}
				case got != tt.want:
					t.Errorf("answer %.300s, want %.300s", got, tt.want)
				}
			}
		})
	}

	t.Run("before initialize", func(t *testing.T) {
		fresh := openRawVersion(t, s, "")
		if got := fresh.ask(first, "1"); !strings.Contains(got, `"error":{"code":0,"message":"method \"tools/list\" is invalid during session initialization"}`) {
			t.Errorf("list before initialize: %.300s, want the SDK's refusal", got)
		}
	})
	t.Run("legacy request, modern session", func(t *testing.T) {
		modern := openRawVersion(t, s, "")
		modern.ask(modernList("1", "m", ""), "1")
		for range 2 {
			before := sdk.Load()
			modern.ask(first, "1")
			if sdk.Load() != before+1 {
				t.Errorf("not served by the SDK")
			}
		}
	})
	t.Run("secret", func(t *testing.T) {
		rs.t = t
		s.opts.Redactor.Add("hunter2")
		forgetLists(s)
		for range 2 {
			before := sdk.Load()
			got := rs.ask(first, "1")
			if sdk.Load() != before+1 || strings.Contains(got, "hunter2") {
				t.Errorf("a list holding a secret: SDK %v, masked %v", sdk.Load() == before+1, !strings.Contains(got, "hunter2"))
			}
		}
	})
}

// rawHTTP is an initialize-era HTTP session driven with raw requests, with
// a bearer token.
type rawHTTP struct {
	t                   *testing.T
	url, token, id, ver string
}

// post sends body and returns the response's Content-Type and the JSON-RPC
// message it carries (the data of its message event, for a stream), and
// whether the stream started with a priming event.
func (h *rawHTTP) post(body string) (ctype, msg string, primed bool) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	if h.id != "" {
		req.Header.Set("Mcp-Session-Id", h.id)
		req.Header.Set("Mcp-Protocol-Version", h.ver)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.id == "" {
		h.id = resp.Header.Get("Mcp-Session-Id")
	}
	ctype = resp.Header.Get("Content-Type")
	if ctype != "text/event-stream" {
		return ctype, strings.TrimSpace(string(b)), false
	}
	for _, e := range parseSSE(string(b)) {
		switch {
		case e.Event == "prime" || e.Data == "":
			primed = true
		case msg == "":
			msg = e.Data
		default:
			h.t.Fatalf("more than one message in %q", b)
		}
	}
	return ctype, msg, primed
}

// TestLeanListHTTP: over HTTP, an initialize-era session's tools/list whose
// answer is prepared is answered on the lean path with the message the SDK
// answers, in the same framing (an event stream, with a priming event from
// 2025-11-25), for each identity's view; requests the SDK would read
// otherwise go to it.
func TestLeanListHTTP(t *testing.T) {
	alice, err := policy.ParsePrincipal("user:alice")
	if err != nil {
		t.Fatal(err)
	}
	rules := &policy.Rules{TableRules: []policy.Rule{{Name: "no-t1", Match: "m__t0001", Deny: true, Who: []policy.Principal{alice}, Source: "test:1"}}}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: "jwt:test " + token, Expiration: time.Now().Add(time.Hour),
			Extra: map[string]any{session.ExtraSubject: token, session.ExtraMethod: "jwt"}}, nil
	}
	s, sdk := listLeanServer(t, Options{Policy: rules})
	hs := httptest.NewServer(s.HTTPHandler(HTTPOptions{Authenticate: auth.RequireBearerToken(verify, nil)}))
	t.Cleanup(hs.Close)
	open := func(t *testing.T, who, version string) *rawHTTP {
		h := &rawHTTP{t: t, url: hs.URL + "/mcp", token: who, ver: version}
		h.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
		if h.id == "" {
			t.Fatal("initialize: no session id")
		}
		h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return h
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	tests := []struct {
		name, who, version, line string
		lean                     bool
	}{
		{"alice 2025-11-25", "alice", "2025-11-25", list, true},
		{"bob 2025-11-25", "bob", "2025-11-25", list, true},
		{"alice 2025-06-18", "alice", "2025-06-18", list, true},
		{"bob 2025-03-26 params", "bob", "2025-03-26", `{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{"_meta":{"progressToken":"p"}}}`, true},
		{"escaped key", "bob", "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"curs\u006fr":""}}`, false},
		{"id the SDK spells otherwise", "bob", "2025-11-25", `{"jsonrpc":"2.0","id":3.0,"method":"tools/list"}`, false},
		{"cursor a number", "bob", "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":1}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := open(t, tt.who, tt.version)
			forgetLists(s)
			before := sdk.Load()
			wantType, want, wantPrimed := h.post(tt.line)
			if sdk.Load() != before+1 && !strings.Contains(want, `"error"`) {
				t.Fatalf("the first list of the view was not the SDK's")
			}
			for range 2 {
				before := sdk.Load()
				gotType, got, primed := h.post(tt.line)
				// The lean path never answers with an error; the SDK
				// refuses bad params before its handlers run.
				if lean := sdk.Load() == before && !strings.Contains(got, `"error":{`); lean != tt.lean {
					t.Errorf("served on the lean path: %v, want %v", lean, tt.lean)
				}
				// The same framing as the SDK's for every version:
				// an event stream, primed from 2025-11-25 (the
				// conformance suite tells JSON from a stream).
				framed := !tt.lean || (primed == wantPrimed && gotType == wantType)
				if got != want || !framed {
					t.Errorf("answer differs from the SDK's:\n got %s %v %.400s\nwant %s %v %.400s", gotType, primed, got, wantType, wantPrimed, want)
				}
			}
			if hidden := strings.Contains(want, `"m__t0001"`) == (tt.who == "alice"); tt.lean && hidden {
				t.Errorf("%s's list: m__t0001 listed %v", tt.who, tt.who != "alice")
			}
		})
	}
}

// TestLeanListNotified: a session whose first list is served on the lean
// path (another session's list prepared it) is recorded as having listed:
// it is told when the list changes, as a session the SDK served is.
func TestLeanListNotified(t *testing.T) {
	s, sdk := listLeanServer(t, Options{})
	a, b := openRaw(t, s), openRaw(t, s)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	a.ask(list, "1")
	before := sdk.Load()
	b.ask(list, "1")
	if sdk.Load() != before {
		t.Fatal("the second session's list was not lean")
	}
	s.SetPolicy(&policy.Rules{Servers: map[string]*policy.ServerRules{"many": {
		Tools: policy.List{Deny: []policy.Pattern{{Glob: "t0003", Source: "test:1"}}}}}})
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-b.lines:
			if !ok {
				t.Fatal("the proxy closed stdout")
			}
			if strings.Contains(string(l), `"method":"notifications/tools/list_changed"`) {
				return
			}
		case <-timeout:
			t.Fatal("no notifications/tools/list_changed within 20s for the session listed on the lean path")
		}
	}
}

// TestHTTPLeanModernList: a 2026-07-28 tools/list over HTTP (no session)
// is answered from the prepared bytes once the SDK's path has answered it
// once, with the same JSON-RPC answer in the same framing (an event
// stream); a request whose headers disagree
// with its body, or that names no method in Mcp-Method, goes to the SDK.
func TestHTTPLeanModernList(t *testing.T) {
	url, _, s := serveCounting(t, ServerConfig{Upstream: upstream.Options{Name: "w", Command: fixtureBin(t),
		Args: []string{"-name", "w", "-era", "modern"}}, Prefix: "w"}, false, HTTPOptions{})
	sdkLists := countSDK(s, "tools/list")
	body := `{"jsonrpc":"2.0","id":"l1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + era.Version +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`
	hdr := map[string]string{"Mcp-Protocol-Version": era.Version, "Mcp-Method": "tools/list"}
	list := func(hdr map[string]string) (int, string, map[string]any) {
		t.Helper()
		status, ct, msg, err := modernPost(t.Context(), t, url, body, hdr)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("answer %q: %v", msg, err)
		}
		return status, ct, m
	}
	status, firstType, first := list(hdr)
	if status != http.StatusOK || first["result"] == nil || sdkLists.Load() != 1 {
		t.Fatalf("first list: %d %v (SDK lists %d), want the SDK's answer", status, first, sdkLists.Load())
	}
	for i := range 2 {
		status, ct, again := list(hdr)
		if n := sdkLists.Load(); n != 1 {
			t.Errorf("list %d: %d lists served by the SDK, want 1 (the first)", i+2, n)
		}
		if status != http.StatusOK || ct != firstType {
			t.Errorf("list %d: status %d, Content-Type %q, want 200 %s as from the SDK", i+2, status, ct, firstType)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("list %d: SDK (-) vs lean (+):\n%s", i+2, diff)
		}
	}
	for _, tt := range []struct {
		name string
		hdr  map[string]string
	}{
		{"no Mcp-Method", map[string]string{"Mcp-Protocol-Version": era.Version}},
		{"another version in the header", map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}},
	} {
		before := sdkLists.Load()
		status, _, m := list(tt.hdr)
		if sdkLists.Load() == before && status == http.StatusOK && m["result"] != nil {
			t.Errorf("%s: answered with a list on the lean path (%d %v), want the SDK's answer", tt.name, status, m)
		}
	}
}
