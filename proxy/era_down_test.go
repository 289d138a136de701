//lint:file-ignore SA1019 logging and roots are deprecated as of protocol 2026-07-28, but are part of the initialize-era versions the proxy serves.

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/era"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// eraUpstream is an in-memory upstream whose tools carry schemas of older
// JSON Schema drafts, an output schema, and a resource, a template and a
// prompt, so that the era translation of every list has something to do.
func eraUpstream(t testing.TB) func(ctx context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "era", Version: "0"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddTool(&mcp.Tool{Name: "draft7", Title: "Draft 7", InputSchema: map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"type":        "object",
		"definitions": map[string]any{"n": map[string]any{"type": "integer", "minimum": 0, "exclusiveMinimum": true}},
		"properties": map[string]any{
			"n":    map[string]any{"$ref": "#/definitions/n"},
			"pair": map[string]any{"type": "array", "items": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}, "additionalItems": false},
		},
		"dependencies": map[string]any{"n": []any{"pair"}},
	}, OutputSchema: map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "hidden", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hidden"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "era://doc/a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "era://doc/a", Text: "a"}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "era://doc/{x}", Name: "t"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "t"}}}, nil
	})
	return inMemoryDial(t, srv)
}

// newEraServer starts a proxy in front of eraUpstream (prefix "era"), with a
// rule that hides era__hidden.
func newEraServer(t testing.TB, opts Options) *Server {
	t.Helper()
	opts.Policy = &policy.Rules{Servers: map[string]*policy.ServerRules{
		"era": {Tools: policy.List{Deny: []policy.Pattern{{Glob: "hidden", Source: "test"}}}},
	}}
	opts.Servers = []ServerConfig{{Upstream: upstream.Options{Name: "era", Dial: eraUpstream(t)}, Prefix: "era"}}
	s := startedServer(t, opts)
	return s
}

// rawLine reads the next output line of rs.
func (rs *rawSession) rawLine() []byte {
	rs.t.Helper()
	select {
	case l, ok := <-rs.lines:
		if !ok {
			rs.fail("the proxy closed stdout")
		}
		return l
	case <-time.After(20 * time.Second):
		rs.fail("no output line within 20s")
	}
	return nil
}

// legacyListRequests are the requests whose answers a legacy client must see
// byte for byte as before the proxy spoke 2026-07-28.
var legacyListRequests = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`,
	`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`,
	`{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`,
	`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"era+era://doc/a"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"era+era://doc/none"}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"era__plain","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"server/discover","params":{}}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping"}`,
}

// TestLegacyBytesUnchanged: a client of every legacy version gets, for every
// list, read, call and error, the bytes it got before the downstream face
// became dual-era (testdata/legacy_lists.golden was written on main before the
// change; -update rewrites it).
func TestLegacyBytesUnchanged(t *testing.T) {
	s := newEraServer(t, Options{})
	var got bytes.Buffer
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		rs := openRawVersion(t, s, v)
		got.WriteString("# " + v + "\n")
		for _, req := range legacyListRequests {
			rs.send(req)
			got.Write(rs.rawLine())
		}
	}
	path := filepath.Join("testdata", "legacy_lists.golden")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")); diff != "" {
		t.Errorf("legacy answers changed (-golden +now):\n%s", diff)
	}
}

// modernMeta is the _meta of a 2026-07-28 request from client "t".
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}`

func modernReq(id, method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{%s}}`, id, method, modernMeta)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{%s,%s}}`, id, method, params, modernMeta)
}

// result decodes the result of one answer line, failing on an error answer.
func result(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var m struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Result == nil {
		t.Fatalf("want a result, got %s (%v)", line, err)
	}
	return m.Result
}

// TestStdioModern: a 2026-07-28 client over stdio, without initialize, gets
// discover, strict lists (resultType, ttlMs, cacheScope private for the list
// the policy narrowed, 2020-12 schemas) and strict call results, the same
// bytes on the lean path as on the SDK path.
func TestStdioModern(t *testing.T) {
	s := newEraServer(t, Options{})
	rs := openRawVersion(t, s, "")
	serverInfo := map[string]any{"name": "manifold", "title": "Manifold", "version": Version}

	// The first request sets the session up, on the SDK path.
	rs.send(modernReq(`"sdk"`, "tools/call", `"name":"era__plain","arguments":{}`))
	viaSDK := rs.rawLine()
	rs.send(modernReq(`"sdk"`, "tools/call", `"name":"era__plain","arguments":{}`))
	viaLean := rs.rawLine()
	if string(viaSDK) != string(viaLean) {
		t.Errorf("a modern call's answer differs between the SDK path and the lean path:\nSDK:  %s\nlean: %s", viaSDK, viaLean)
	}
	want := `{"jsonrpc":"2.0","id":"sdk","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"manifold","title":"Manifold","version":"` + Version + `"}},"content":[{"type":"text","text":"plain"}],"resultType":"complete"}}` + "\n"
	if string(viaLean) != want {
		t.Errorf("modern call answer:\n got %s\nwant %s", viaLean, want)
	}

	rs.send(modernReq("1", "server/discover", ""))
	d := result(t, rs.rawLine())
	if diff := cmp.Diff(map[string]any{
		"supportedVersions": []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
		"ttlMs":             60000.0, "cacheScope": "public", "resultType": "complete",
		"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": serverInfo},
	}, map[string]any{"supportedVersions": d["supportedVersions"], "ttlMs": d["ttlMs"], "cacheScope": d["cacheScope"],
		"resultType": d["resultType"], "_meta": d["_meta"]}); diff != "" {
		t.Errorf("server/discover (-want +got):\n%s", diff)
	}
	if d["capabilities"] == nil {
		t.Errorf("server/discover has no capabilities: %v", d)
	}

	rs.send(modernReq("2", "tools/list", ""))
	tl := result(t, rs.rawLine())
	if tl["cacheScope"] != "private" || tl["ttlMs"] != 60000.0 || tl["resultType"] != "complete" {
		t.Errorf("tools/list narrowed by policy: cacheScope %v, ttlMs %v, resultType %v; want private, 60000, complete", tl["cacheScope"], tl["ttlMs"], tl["resultType"])
	}
	tools := tl["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools/list: %d tools, want 2: %v", len(tools), tools)
	}
	draft := tools[0].(map[string]any)
	wantIn := decodeJSON(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"$defs":{"n":{"type":"integer","exclusiveMinimum":0}},
		"properties":{"n":{"$ref":"#/$defs/n"},"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}},
		"dependentRequired":{"n":["pair"]}}`)
	if diff := cmp.Diff(wantIn, draft["inputSchema"]); diff != "" {
		t.Errorf("inputSchema for a modern client (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(decodeJSON(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"ok":{"type":"boolean"}}}`), draft["outputSchema"]); diff != "" {
		t.Errorf("outputSchema for a modern client (-want +got):\n%s", diff)
	}

	for i, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		rs.send(modernReq(fmt.Sprint(10+i), m, ""))
		r := result(t, rs.rawLine())
		if r["cacheScope"] != "public" || r["ttlMs"] != 60000.0 || r["resultType"] != "complete" {
			t.Errorf("%s: cacheScope %v, ttlMs %v, resultType %v; want public, 60000, complete", m, r["cacheScope"], r["ttlMs"], r["resultType"])
		}
	}
	rs.send(modernReq("20", "resources/read", `"uri":"era+era://doc/a"`))
	if r := result(t, rs.rawLine()); r["resultType"] != "complete" {
		t.Errorf("resources/read: resultType %v, want complete", r["resultType"])
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRequestEra(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	tests := []struct {
		name, params string
		want         int
	}{
		{"no params", ``, era.Legacy},
		{"no _meta", `{"name":"a"}`, era.Legacy},
		{"_meta a string", `{"_meta":"2026-07-28"}`, era.Legacy},
		{"_meta without a version", `{"_meta":{"progressToken":1}}`, era.Legacy},
		{"legacy version in _meta", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, era.Legacy},
		{"version a number", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}`, era.Legacy},
		{"modern", `{` + modernMeta + `}`, era.Modern},
		{"modern with a big client name", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"` + big + `","version":"0"}}}`, era.Modern},
		{"modern without client info", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, era.Modern},
		{"unsupported modern version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, era.SDK},
		{"no capabilities", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, era.SDK},
		{"capabilities null", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}`, era.SDK},
		{"capabilities of the wrong shape", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":5}}}`, era.SDK},
		{"client info a string", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"t"}}`, era.SDK},
		{"client info null", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null}}`, era.SDK},
		{"per-request log level", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}}`, era.SDK},
		{"escaped key", `{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, era.SDK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := era.Of([]byte(tc.params)); got != tc.want {
				t.Errorf("era.Of(%.80s) = %d, want %d", tc.params, got, tc.want)
			}
		})
	}
}

// TestStdioModernRefusals: what 2026-07-28 removed or requires is refused
// with the protocol's errors, a bad _meta never ends the session, and the
// next good request is answered.
func TestStdioModernRefusals(t *testing.T) {
	s := newEraServer(t, Options{})
	call := `"name":"era__plain","arguments":{}`
	tests := []struct {
		name, line string
		code       float64
		data       any
	}{
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"era__plain","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			-32022, map[string]any{"supported": []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, "requested": "2099-01-01"}},
		{"missing capabilities", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"era__plain","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, -32602, nil},
		{"capabilities of the wrong shape", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"era__plain","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":5}}}}`, -32602, nil},
		{"bogus _meta before any request set the session up", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"era__plain","_meta":"x"}}`, 0, nil}, // the SDK's answer before initialize, as for any legacy frame
		{"ping", modernReq("1", "ping", ""), -32601, nil},
		{"logging/setLevel", modernReq("1", "logging/setLevel", `"level":"debug"`), -32601, nil},
		{"resources/subscribe", modernReq("1", "resources/subscribe", `"uri":"era+era://doc/a"`), -32601, nil},
		{"initialize with modern _meta", modernReq("1", "initialize", `"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"0"}`), -32601, nil},
		{"unknown resource", modernReq("1", "resources/read", `"uri":"nope://x"`), -32602, nil},
		{"unknown tool", modernReq("1", "tools/call", `"name":"nope"`), -32602, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := openRawVersion(t, s, "")
			rs.send(tc.line)
			var got struct {
				Error struct {
					Code float64 `json:"code"`
					Data any     `json:"data"`
				} `json:"error"`
			}
			line := rs.rawLine()
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatal(err)
			}
			if got.Error.Code != tc.code {
				t.Errorf("answer %s; want error code %v", line, tc.code)
			}
			if tc.data != nil {
				if diff := cmp.Diff(tc.data, got.Error.Data); diff != "" {
					t.Errorf("error data (-want +got):\n%s", diff)
				}
			}
			rs.send(modernReq(`"after"`, "tools/call", call))
			if r := result(t, rs.rawLine()); r["resultType"] != "complete" {
				t.Errorf("the next call: resultType %v", r["resultType"])
			}
		})
	}
}

// TestStdioModernLearnsClient: in stdio mode the upstreams wait for the
// client; a modern client's first request (server/discover here) tells the
// proxy its capabilities, as initialize does, and lets them start.
func TestStdioModernLearnsClient(t *testing.T) {
	s, err := New(Options{WaitForClient: true, Servers: []ServerConfig{{Upstream: upstream.Options{Name: "era", Dial: eraUpstream(t)}, Prefix: "era"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	started := make(chan error, 1)
	go func() { started <- s.Start(t.Context()) }()
	rs := openRawVersion(t, s, "")
	rs.send(modernReq("1", "server/discover", ""))
	result(t, rs.rawLine())
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the upstreams did not start after the modern client's server/discover")
	}
	if diff := cmp.Diff(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, s.relayCaps()); diff != "" {
		t.Errorf("capabilities offered to upstreams (-want +got):\n%s", diff)
	}
	<-s.Ready()
	rs.send(modernReq("2", "tools/list", ""))
	if tools := result(t, rs.rawLine())["tools"].([]any); len(tools) != 3 {
		t.Errorf("tools/list: %d tools, want 3", len(tools))
	}
}

// TestModernListOrder: a modern client gets every list in the same order
// (by name) on every request and after a restart of the proxy.
func TestModernListOrder(t *testing.T) {
	lists := func() []string {
		s := newEraServer(t, Options{})
		rs := openRawVersion(t, s, "")
		var out []string
		for round := range 2 {
			for i, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
				rs.send(modernReq(fmt.Sprint(i), m, ""))
				line := string(rs.rawLine())
				if round == 1 && line != out[i] {
					t.Errorf("%s differs between two lists:\n%s\n%s", m, out[i], line)
				}
				if round == 0 {
					out = append(out, line)
				}
			}
		}
		s.Close()
		return out
	}
	first, second := lists(), lists()
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("lists differ after a restart (-before +after):\n%s", diff)
	}
	var tl struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(first[0]), &tl); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Result.Tools {
		names = append(names, tool.Name)
	}
	if !slices.IsSorted(names) || len(names) != 2 {
		t.Errorf("tools/list order %v, want the two visible tools by name", names)
	}
}

// logUpstream is an in-memory upstream whose session logs at every level
// (its level is preset to debug) and whose tool "logs" logs one info and one
// error message during the call, then reports progress (a marker: the
// proxy relays an upstream's notifications in order) and waits for release.
func logUpstream(t testing.TB, release <-chan struct{}) func(ctx context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "log", Version: "0"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}}})
	srv.AddTool(&mcp.Tool{Name: "logs", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, l := range []mcp.LoggingLevel{"info", "error"} {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Data: "at " + string(l)}); err != nil {
					return nil, err
				}
			}
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1}); err != nil {
				return nil, err
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil
		})
	return func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{LogLevel: "debug"}})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ct, nil
	}
}

// TestModernLogLevel: the per-request log level of a modern request decides
// which of the upstream's log messages during that call reach the client;
// without one, none do.
func TestModernLogLevel(t *testing.T) {
	release := make(chan struct{})
	s := startedServer(t, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "log", Dial: logUpstream(t, release)}}}})
	withLevel := func(level string) string {
		m := strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"progressToken":"p",`, 1)
		if level != "" {
			m = strings.Replace(m, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"`+level+`",`, 1)
		}
		return `"name":"logs","arguments":{},` + m
	}
	tests := []struct {
		level string
		want  []string
	}{
		{"debug", []string{"at info", "at error"}},
		{"error", []string{"at error"}},
		{"", nil},
	}
	for _, tc := range tests {
		t.Run("level "+tc.level, func(t *testing.T) {
			rs := openRawVersion(t, s, "")
			// The session is set up first, so that the call meets the
			// lean path's choice.
			rs.send(modernReq("0", "server/discover", ""))
			result(t, rs.rawLine())
			rs.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{%s}}`, withLevel(tc.level)))
			var got []string
			for done := false; !done; {
				line := rs.rawLine()
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Data any `json:"data"`
					} `json:"params"`
				}
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatal(err)
				}
				switch {
				case m.Method == "notifications/message":
					got = append(got, fmt.Sprint(m.Params.Data))
				case m.Method == "notifications/progress":
					release <- struct{}{} // every log message was relayed or dropped by now
				case string(m.ID) == `"c"`:
					done = true
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("log messages with logLevel %q (-want +got):\n%s", tc.level, diff)
			}
		})
	}
}

func TestModernCallResult(t *testing.T) {
	info := []byte(`{"name":"manifold","version":"1"}`)
	si := `"io.modelcontextprotocol/serverInfo":{"name":"manifold","version":"1"}`
	tests := []struct{ name, in, want string }{
		{"plain", `{"content":[]}`, `{"_meta":{` + si + `},"content":[],"resultType":"complete"}`},
		{"empty object", `{}`, `{"_meta":{` + si + `},"resultType":"complete"}`},
		{"spaces", ` {"content":[]} `, `{"_meta":{` + si + `},"content":[],"resultType":"complete"}`},
		{"input_required passes untouched", `{"inputRequests":{"a":{}},"requestState":"s","resultType":"input_required"}`,
			`{"_meta":{` + si + `},"inputRequests":{"a":{}},"requestState":"s","resultType":"input_required"}`},
		{"complete kept", `{"content":[],"resultType":"complete"}`, `{"_meta":{` + si + `},"content":[],"resultType":"complete"}`},
		{"_meta kept, serverInfo added", `{"_meta":{"progressToken":1},"content":[]}`, `{"_meta":{` + si + `,"progressToken":1},"content":[],"resultType":"complete"}`},
		{"empty _meta", `{"_meta":{},"content":[]}`, `{"_meta":{` + si + `},"content":[],"resultType":"complete"}`},
		{"upstream serverInfo replaced", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"9"},"x":1},"content":[]}`,
			`{"_meta":{` + si + `,"x":1},"content":[],"resultType":"complete"}`},
		{"_meta not an object", `{"_meta":5,"content":[]}`, `{"_meta":5,"content":[]}`},
		{"not an object", `[1]`, `[1]`},
		{"a text that says resultType", `{"content":[{"type":"text","text":"\"resultType\""}]}`, `{"_meta":{` + si + `},"content":[{"type":"text","text":"\"resultType\""}],"resultType":"complete"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(era.CallResult([]byte(tc.in), info))
			if got != tc.want {
				t.Errorf("era.CallResult(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

// TestModernReadScope: a modern client's read of a server whose resources a
// rule guards is cacheScope private; without such a rule it keeps what the
// upstream said (public by default), and a legacy client's read is as before.
func TestModernReadScope(t *testing.T) {
	for _, tc := range []struct {
		name    string
		guarded bool
		want    string
	}{{"guarded", true, "private"}, {"unguarded", false, "public"}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "era", Dial: eraUpstream(t)}, Prefix: "era"}}}
			if tc.guarded {
				opts.Policy = &policy.Rules{Servers: map[string]*policy.ServerRules{
					"era": {Resources: policy.List{Deny: []policy.Pattern{{Glob: "era://secret/*", Source: "test"}}}},
				}}
			}
			s := startedServer(t, opts)
			rs := openRawVersion(t, s, "")
			rs.send(modernReq("1", "resources/read", `"uri":"era+era://doc/a"`))
			if got := result(t, rs.rawLine())["cacheScope"]; got != tc.want {
				t.Errorf("modern read: cacheScope %v, want %s", got, tc.want)
			}
			legacy := openRaw(t, s)
			legacy.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"era+era://doc/a"}}`)
			if r := result(t, legacy.rawLine()); r["cacheScope"] != nil || r["ttlMs"] != nil {
				t.Errorf("legacy read: cacheScope %v, ttlMs %v; want neither (2026-07-28 fields)", r["cacheScope"], r["ttlMs"])
			}
		})
	}
}

// TestSchemaProblemsLoggedOnce: what cannot be translated to 2020-12 is
// logged once, however often modern clients list and the catalog is rebuilt.
func TestSchemaProblemsLoggedOnce(t *testing.T) {
	logs := &syncBuffer{b: new(bytes.Buffer)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "odd", InputSchema: map[string]any{"type": "object", "$schema": "https://example.com/dialect"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	s := startedServer(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Servers: []ServerConfig{{Upstream: upstream.Options{Name: "odd", Dial: inMemoryDial(t, srv)}}}})
	rs := openRawVersion(t, s, "")
	for i := range 3 {
		s.SetPolicy(nil) // a new catalog each time (as a reload makes)
		rs.send(modernReq(fmt.Sprint(i), "tools/list", ""))
		tools := result(t, rs.rawLine())["tools"].([]any)
		if got := tools[0].(map[string]any)["inputSchema"].(map[string]any)["$schema"]; got != "https://example.com/dialect" {
			t.Errorf("an unknown $schema was changed to %v", got)
		}
	}
	if n := strings.Count(string(logs.bytes()), "not fully translated"); n != 1 {
		t.Errorf("the untranslatable schema was logged %d times, want once:\n%s", n, logs.bytes())
	}
}

// TestStdioListenFlood: one stdio client holds at most relay.MaxListensPerSession
// listens open; beyond it a listen is refused with an error that says why,
// and a cancelled listen frees its slot.
func TestStdioListenFlood(t *testing.T) {
	s := newEraServer(t, Options{})
	rs := openRawVersion(t, s, "")
	rs.send(modernReq("0", "server/discover", ""))
	result(t, rs.rawLine())
	listen := func(id string) {
		rs.send(modernReq(id, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
	}
	acked := func(line []byte) bool {
		return strings.Contains(string(line), "notifications/subscriptions/acknowledged")
	}
	for i := range relay.MaxListensPerSession {
		listen(fmt.Sprintf(`"l%d"`, i))
		if line := rs.rawLine(); !acked(line) {
			t.Fatalf("listen %d: %s, want its acknowledgement", i, line)
		}
	}
	listen(`"over"`)
	line := rs.rawLine()
	var ans struct {
		ID    string `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &ans); err != nil || ans.ID != "over" || ans.Error.Code != codeServerError || !strings.Contains(ans.Error.Message, "too many subscriptions/listen") {
		t.Fatalf("listen beyond the cap: %s", line)
	}
	rs.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l0"}}`)
	rs.until(`"l0"`, 0) // the cancelled listen ends with its result
	listen(`"again"`)
	if line := rs.rawLine(); !acked(line) {
		t.Fatalf("a listen after one was cancelled: %s, want its acknowledgement", line)
	}
}
