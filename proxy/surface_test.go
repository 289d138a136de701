package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// filesUpstream is an in-memory server with a tool of each annotation
// class, one that a policy hides, and n padding tools; it records the
// calls it runs.
func filesUpstream(t testing.TB, n int, ran *[]string, mu *sync.Mutex) func(ctx context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "0"}, nil)
	t2, f := true, false
	add := func(name, desc string, ann *mcp.ToolAnnotations, props map[string]any, required ...string) {
		schema := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			schema["required"] = required
		}
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: schema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				mu.Lock()
				*ran = append(*ran, name+" "+string(req.Params.Arguments))
				mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + name}}}, nil
			})
	}
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	add("read_text_file", "Read the complete contents of a file as text. Handles any encoding.",
		&mcp.ToolAnnotations{ReadOnlyHint: true}, map[string]any{"path": str("the file"), "head": str("first lines"), "tail": str("last lines")}, "path")
	add("write_file", "Create a new file or replace a file's content.",
		&mcp.ToolAnnotations{DestructiveHint: &f}, map[string]any{"path": str("the file"), "content": str("text")}, "path", "content")
	add("delete_file", "Delete a file from disk.",
		&mcp.ToolAnnotations{DestructiveHint: &t2}, map[string]any{"path": str("the file")}, "path")
	add("mystery_box", "Does something with a box.", nil, map[string]any{})
	add("secret_vault", "Open the secret vault of passwords.", &mcp.ToolAnnotations{ReadOnlyHint: true}, map[string]any{})
	add("search_tools", "The server's own tool named like a meta-tool: lists widgets.", &mcp.ToolAnnotations{ReadOnlyHint: true}, map[string]any{})
	for i := range n {
		add("pad_"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "Padding tool about zebras.", &mcp.ToolAnnotations{ReadOnlyHint: true}, map[string]any{})
	}
	return inMemoryDial(t, srv)
}

type surfaceProxy struct {
	s     *Server
	mu    sync.Mutex
	ran   []string
	audit *bytes.Buffer
	amu   *sync.Mutex
}

func (p *surfaceProxy) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ran)
}

// lockedBuffer is an io.Writer safe for the audit's writes and the test's
// reads.
type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (p *surfaceProxy) auditLines(t *testing.T) []map[string]any {
	p.amu.Lock()
	defer p.amu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(p.audit.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("audit line %s: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// newSurfaceProxy starts a proxy in front of filesUpstream, hiding
// files__secret_vault by policy.
func newSurfaceProxy(t *testing.T, pad int, co CatalogOptions) *surfaceProxy {
	t.Helper()
	p := &surfaceProxy{audit: new(bytes.Buffer), amu: new(sync.Mutex)}
	s := startedServer(t, Options{
		Servers: []ServerConfig{{Upstream: upstream.Options{Name: "files", Dial: filesUpstream(t, pad, &p.ran, &p.mu)}, Prefix: "files",
			Description: "Quokka archive of documents"}},
		Policy: &policy.Rules{Servers: map[string]*policy.ServerRules{
			"files": {Tools: policy.List{Deny: []policy.Pattern{{Glob: "secret_*", Source: "test:1"}}}},
		}},
		Catalog: co,
		Audit:   lockedBuffer{p.amu, p.audit},
	})
	p.s = s
	return p
}

// connect opens a stdio session of a client named name at version v.
func (p *surfaceProxy) connect(t *testing.T, name, v string) *mcp.ClientSession {
	t.Helper()
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	go func() { _ = p.s.ServeStdio(t.Context(), pr, pw); pw.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil).Connect(t.Context(),
		&mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNamesOf(res *mcp.ListToolsResult) []string {
	var out []string
	for _, t := range res.Tools {
		out = append(out, t.Name)
	}
	return out
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// TestSearchSurface: a search-mode session lists the meta-tools and the
// always tools only; search finds visible tools and never a hidden one;
// describe and the call tools treat a hidden tool as unknown; each call tool
// runs its class only; an upstream tool named like a meta-tool stays
// callable through the call tools.
func TestSearchSurface(t *testing.T) {
	p := newSurfaceProxy(t, 0, CatalogOptions{Mode: ModeSearch, Always: []string{"files__delete_file", "files__secret_vault", "nope__x"}})
	cs := p.connect(t, "Visual Studio Code", "2025-11-25")
	ctx := t.Context()

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"search_tools", "describe_tools", "call_tool_read", "call_tool_write", "call_tool_destructive", "files__delete_file"}
	if diff := cmp.Diff(want, toolNamesOf(res)); diff != "" {
		t.Errorf("search-mode tools/list (-want +got):\n%s", diff)
	}
	for _, tool := range res.Tools {
		a := tool.Annotations
		switch tool.Name {
		case "call_tool_read":
			if a == nil || !a.ReadOnlyHint {
				t.Errorf("call_tool_read annotations %+v; want readOnlyHint", a)
			}
		case "call_tool_write":
			if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("call_tool_write annotations %+v; want not read-only, not destructive", a)
			}
		case "call_tool_destructive":
			if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("call_tool_destructive annotations %+v; want destructive", a)
			}
		case "search_tools":
			if !strings.Contains(tool.Description, "among 5 tools from the servers files") {
				t.Errorf("search_tools description %q does not say how many tools from which servers", tool.Description)
			}
		}
	}
	// The same list every time.
	again, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(res)
	b2, _ := json.Marshal(again)
	if !bytes.Equal(b1, b2) {
		t.Errorf("a second tools/list differs:\n%s\n%s", b1, b2)
	}

	r, err := call(t, cs, "search_tools", map[string]any{"query": "read the contents of a text file"})
	if err != nil || r.IsError {
		t.Fatalf("search_tools: %v %v", err, r)
	}
	first := strings.SplitN(textOf(r), "\n", 2)[0]
	if wantLine := "files__read_text_file(path*, head?, tail?) — Read the complete contents of a file as text. [read] → call_tool_read"; first != wantLine {
		t.Errorf("first hit:\n got %s\nwant %s", first, wantLine)
	}
	for _, q := range []string{"secret vault passwords", "files__secret_vault", "open the secret vault"} {
		r, err := call(t, cs, "search_tools", map[string]any{"query": q, "limit": 20})
		if err != nil || r.IsError {
			t.Fatalf("search_tools %q: %v %v", q, err, r)
		}
		if strings.Contains(textOf(r), "secret") && !strings.Contains(textOf(r), "No tool matches") {
			t.Errorf("search for %q shows the hidden tool:\n%s", q, textOf(r))
		}
		sc, _ := json.Marshal(r.StructuredContent.(map[string]any)["tools"])
		if strings.Contains(string(sc), "secret_vault") {
			t.Errorf("search for %q shows the hidden tool in structuredContent: %s", q, sc)
		}
	}
	// The index knows the server by its description.
	if got := p.s.catalog.Load().surf.ServerText("files"); got != "Quokka archive of documents" {
		t.Errorf("the search index's text of server files = %q; want its description", got)
	}
	if r, err := call(t, cs, "search_tools", map[string]any{"query": "qqqq zzzz"}); err != nil || r.IsError || !strings.HasPrefix(textOf(r), `No tool matches "qqqq zzzz".`) {
		t.Errorf("search with no match: %v %q; want a plain no-match answer", err, textOf(r))
	}

	// describe: a hidden name gets the unknown name's answer, its own name put in.
	r, err = call(t, cs, "describe_tools", map[string]any{"names": []string{"files__write_file", "files__secret_vault", "files__nothing"}})
	if err != nil || r.IsError {
		t.Fatalf("describe_tools: %v %v", err, r)
	}
	text := textOf(r)
	if !strings.Contains(text, `"name":"files__write_file"`) || !strings.Contains(text, "call it with call_tool_write") {
		t.Errorf("describe_tools lacks the definition of files__write_file:\n%s", text)
	}
	hidden, unknown := `unknown tool "files__secret_vault"; search_tools finds the tools for a task`, `unknown tool "files__nothing"; search_tools finds the tools for a task`
	if !strings.Contains(text, hidden) || !strings.Contains(text, unknown) || strings.Contains(text, "vault of passwords") {
		t.Errorf("describe_tools of a hidden and an unknown name:\n%s", text)
	}

	// The call tools: each class through its own tool only.
	classes := []struct {
		via, tool, wantErr string
	}{
		{"call_tool_read", "files__read_text_file", ""},
		{"call_tool_write", "files__read_text_file", "call it with call_tool_read"},
		{"call_tool_write", "files__write_file", ""},
		{"call_tool_read", "files__write_file", "call it with call_tool_write"},
		{"call_tool_destructive", "files__write_file", "call it with call_tool_write"},
		{"call_tool_destructive", "files__delete_file", ""},
		{"call_tool_write", "files__delete_file", "call it with call_tool_destructive"},
		{"call_tool_destructive", "files__mystery_box", ""}, // unannotated: destructive by default
		{"call_tool_read", "files__mystery_box", "call it with call_tool_destructive"},
		{"call_tool_read", "files__search_tools", ""}, // the server's own tool of a meta-tool's name
		{"call_tool_read", "files__secret_vault", `unknown tool "files__secret_vault"`},
		{"call_tool_read", "files__nothing", `unknown tool "files__nothing"`},
	}
	for _, c := range classes {
		before := len(p.calls())
		r, err := call(t, cs, c.via, map[string]any{"name": c.tool, "arguments": map[string]any{"path": "/a"}})
		if err != nil {
			t.Errorf("%s %s: %v", c.via, c.tool, err)
			continue
		}
		ran := len(p.calls()) > before
		if c.wantErr == "" {
			if r.IsError || !ran || textOf(r) != "ran "+strings.TrimPrefix(c.tool, "files__") {
				t.Errorf("%s %s = %q (isError %v, ran %v); want it run", c.via, c.tool, textOf(r), r.IsError, ran)
			}
			continue
		}
		if !r.IsError || ran || !strings.Contains(textOf(r), c.wantErr) {
			t.Errorf("%s %s = %q (isError %v, ran %v); want a tool error containing %q, nothing run", c.via, c.tool, textOf(r), r.IsError, ran, c.wantErr)
		}
	}
	if got := p.calls(); !slices.Contains(got, `read_text_file {"path":"/a"}`) {
		t.Errorf("upstream calls %q; want the inner arguments passed on as given", got)
	}
	// The search tool itself is the surface's, not the server's.
	if r, err := call(t, cs, "search_tools", map[string]any{"query": "widgets"}); err != nil || strings.HasPrefix(textOf(r), "ran ") {
		t.Errorf("search_tools in a search session reached the server: %v %q", err, textOf(r))
	}

	// The audit names the target, the call tool and the mode.
	var sawVia, sawWrong bool
	for _, l := range p.auditLines(t) {
		if l["catalog"] != "search" {
			t.Errorf("audit line without catalog \"search\": %v", l)
		}
		if l["exposed"] == "files__write_file" && l["via"] == "call_tool_write" && l["outcome"] == "ok" && l["original"] == "write_file" {
			sawVia = true
		}
		if l["exposed"] == "files__write_file" && l["via"] == "call_tool_read" && l["outcome"] == "wrong call tool" {
			sawWrong = true
		}
	}
	if !sawVia || !sawWrong {
		t.Errorf("audit lacks the call through call_tool_write (%v) or the refused one through call_tool_read (%v):\n%v", sawVia, sawWrong, p.auditLines(t))
	}

	// Status: the client, its mode and the size of its list.
	var st *ClientStatus
	for _, c := range p.s.Clients() {
		if c.Name == "Visual Studio Code" {
			st = &c
		}
	}
	if st == nil || st.Catalog != "search" || st.Tools != 6 || st.Version != "1.0" || st.Protocol != "2025-11-25" {
		t.Errorf("Clients() = %+v; want Visual Studio Code 1.0, 2025-11-25, search, 6 tools", p.s.Clients())
	}
}

// TestFullModeKnowsNoMetaTools: in a full-mode session the meta-tool names
// are the servers' (files__search_tools here, unprefixed names unknown).
func TestFullModeKnowsNoMetaTools(t *testing.T) {
	p := newSurfaceProxy(t, 0, CatalogOptions{Mode: ModeFull})
	cs := p.connect(t, "Visual Studio Code", "2025-11-25")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNamesOf(res); slices.Contains(got, "search_tools") || !slices.Contains(got, "files__read_text_file") {
		t.Errorf("full-mode tools/list = %v", got)
	}
	for _, name := range metaTools {
		if _, err := call(t, cs, name, map[string]any{"query": "x", "name": "files__read_text_file"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s in a full-mode session: %v; want unknown tool", name, err)
		}
	}
}

// TestAutoMode: auto gives the full list to clients that defer tools
// themselves and to everyone when the catalog is small, the search surface
// to other clients above search_above; a per-client entry wins; a session
// keeps its mode.
func TestAutoMode(t *testing.T) {
	tests := []struct {
		name   string
		pad    int
		opts   CatalogOptions
		client string
		want   string
	}{
		{"large, eager client", 40, CatalogOptions{Mode: ModeAuto}, "Visual Studio Code", ModeSearch},
		{"large, claude code", 40, CatalogOptions{Mode: ModeAuto}, "claude-code", ModeFull},
		{"large, codex", 40, CatalogOptions{Mode: ModeAuto}, "codex-mcp-client", ModeFull},
		{"small", 0, CatalogOptions{Mode: ModeAuto}, "Visual Studio Code", ModeFull},
		{"small, threshold lowered", 0, CatalogOptions{Mode: ModeAuto, SearchAbove: 3}, "Visual Studio Code", ModeSearch},
		{"client entry, glob", 40, CatalogOptions{Mode: ModeAuto, Clients: []ClientMode{{Name: "visual*", Mode: ModeFull}}}, "Visual Studio Code", ModeFull},
		{"client entry, case", 0, CatalogOptions{Mode: ModeFull, Clients: []ClientMode{{Name: "claude-code", Mode: ModeSearch}}}, "Claude-Code", ModeSearch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newSurfaceProxy(t, tt.pad, tt.opts)
			cs := p.connect(t, tt.client, "2025-06-18")
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ModeFull
			if slices.Contains(toolNamesOf(res), "search_tools") {
				got = ModeSearch
			}
			if got != tt.want {
				t.Errorf("%s got the %s list (%d tools); want %s", tt.client, got, len(res.Tools), tt.want)
			}
			// Its instructions lead with how to use what it lists.
			lead := summaryLead
			if tt.want == ModeSearch {
				lead = searchLead
			}
			if ins := cs.InitializeResult().Instructions; !strings.HasPrefix(ins, lead) {
				t.Errorf("%s's instructions = %q; want them to start with %q", tt.client, ins, lead)
			}
			// The session keeps its mode when the rules change.
			other := ModeFull
			if tt.want == ModeFull {
				other = ModeSearch
			}
			p.s.SetCatalog(CatalogOptions{Mode: other})
			res, err = cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if again := slices.Contains(toolNamesOf(res), "search_tools"); again != (tt.want == ModeSearch) {
				t.Errorf("after SetCatalog the session's list changed mode: %v", toolNamesOf(res))
			}
		})
	}
}

// recordedCatalog loads proxy/search/testdata/catalog into a proxy that
// is not started: each server's listing is set as if it had listed.
func recordedCatalog(t *testing.T, co CatalogOptions) *Server {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("search", "testdata", "catalog", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded catalog in search/testdata/catalog: %v", err)
	}
	var servers []ServerConfig
	listings := map[string][]*mcp.Tool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Server string      `json:"server"`
			Tools  []*mcp.Tool `json:"tools"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		listings[rec.Server] = rec.Tools
		servers = append(servers, ServerConfig{Upstream: upstream.Options{Name: rec.Server, Dial: func(context.Context) (mcp.Transport, error) {
			return nil, fmt.Errorf("the recorded catalog is not served")
		}}, Prefix: rec.Server})
	}
	s, err := New(Options{Servers: servers, Catalog: co})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, b := range s.gen.Load().backends {
		b.SetLists(supervise.Lists{Tools: listings[b.name]}, false)
	}
	s.rebuild()
	return s
}

// TestSearchListSize: on the recorded catalog (hundreds of real tools),
// the search surface's up-front tools/list is at most 5 % of the full
// list's, in bytes and in estimated tokens.
func TestSearchListSize(t *testing.T) {
	s := recordedCatalog(t, CatalogOptions{Mode: ModeSearch})
	size := s.CatalogSize()
	if size.Tools < 300 {
		t.Fatalf("the recorded catalog has %d tools; want at least 300", size.Tools)
	}
	sum := 0
	for _, sv := range size.Servers {
		sum += sv.FullBytes
	}
	if sum < size.FullBytes*9/10 || sum > size.FullBytes {
		t.Errorf("the servers' shares add up to %d bytes of a full list of %d", sum, size.FullBytes)
	}
	full, search := EstimateTokens(size.FullBytes), EstimateTokens(size.SearchBytes)
	t.Logf("recorded catalog: %d tools from %d servers; full list %d bytes (~%d tokens), search list %d bytes (~%d tokens): %.2f %%",
		size.Tools, len(size.Servers), size.FullBytes, full, size.SearchBytes, search, 100*float64(size.SearchBytes)/float64(size.FullBytes))
	if size.SearchBytes*20 > size.FullBytes {
		t.Errorf("search list %d bytes > 5 %% of the full list's %d", size.SearchBytes, size.FullBytes)
	}
	if search*20 > full {
		t.Errorf("search list ~%d tokens > 5 %% of the full list's ~%d", search, full)
	}
	// The size measured is the list a client gets.
	cs := connectSurface(t, s, "Visual Studio Code")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if n := len(b); n < size.SearchBytes-64 || n > size.SearchBytes+64 {
		t.Errorf("the search list a client gets is %d bytes; CatalogSize says %d", n, size.SearchBytes)
	}
}

// connectSurface is surfaceProxy.connect for a bare Server.
func connectSurface(t *testing.T, s *Server, name string) *mcp.ClientSession {
	return (&surfaceProxy{s: s}).connect(t, name, "2025-11-25")
}

// TestSearchBeforeFirstCatalog: a search-mode proxy answers search_tools
// before any server has listed (the catalog is the initial, empty one),
// instead of treating the name as an unknown upstream tool.
func TestSearchBeforeFirstCatalog(t *testing.T) {
	s, err := New(Options{
		Servers:          []ServerConfig{{Upstream: upstream.Options{Name: "x", Dial: func(context.Context) (mcp.Transport, error) { return nil, fmt.Errorf("not served") }}}},
		Catalog:          CatalogOptions{Mode: ModeSearch},
		FirstListWait:    time.Millisecond,
		FirstListTimeout: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := s.callTool(t.Context(), nil, "search_tools", map[string]json.RawMessage{"arguments": json.RawMessage(`{"query":"read a file"}`)})
	if err != nil || !strings.Contains(string(raw), `No tool matches \"read a file\"`) {
		t.Errorf("search_tools before the first catalog = %s, %v; want the no-match answer", raw, err)
	}
}

// TestListCacheScope: a modern client's tools/list is cacheScope "private"
// exactly when another client could get another list from the same catalog.
func TestListCacheScope(t *testing.T) {
	tests := []struct {
		name string
		pad  int
		opts CatalogOptions
		want string
	}{
		{"full for all", 40, CatalogOptions{Mode: ModeFull}, "public"},
		{"search for all", 40, CatalogOptions{Mode: ModeSearch}, "public"},
		{"auto, small", 0, CatalogOptions{Mode: ModeAuto}, "public"},
		{"auto, large", 40, CatalogOptions{Mode: ModeAuto}, "private"},
		{"full but one client", 0, CatalogOptions{Mode: ModeFull, Clients: []ClientMode{{Name: "zed", Mode: ModeSearch}}}, "private"},
		{"search, one client too", 0, CatalogOptions{Mode: ModeSearch, Clients: []ClientMode{{Name: "zed", Mode: ModeSearch}}}, "public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newSurfaceProxy(t, tt.pad, tt.opts)
			c := p.s.catalog.Load()
			c.Narrowed[catTools] = false // the proxy's policy hides a tool; this is about the modes
			if _, scope := c.listCache(true); scope != tt.want {
				t.Errorf("cacheScope %q; want %q", scope, tt.want)
			}
		})
	}
}

// TestCatalogSizeOncePerCatalog: the size and the listed names (which the
// status file asks for every second) are worked out once per catalog, what
// one caller does with them does not reach the next, and a new catalog has
// its own.
func TestCatalogSizeOncePerCatalog(t *testing.T) {
	s := recordedCatalog(t, CatalogOptions{Mode: ModeSearch})
	first := s.CatalogSize()
	full, search := s.ListedNames()
	if len(first.Servers) == 0 || len(full) == 0 || len(search) == 0 {
		t.Fatalf("size %+v, %d full names, %d search names; want some of each", first, len(full), len(search))
	}
	tools, name, meta := first.Servers[0].Tools, full[0], search[0]
	first.Servers[0].Tools, full[0], search[0] = -1, "changed", "changed"
	again := s.CatalogSize()
	full2, search2 := s.ListedNames()
	if again.Servers[0].Tools != tools || full2[0] != name || search2[0] != meta {
		t.Errorf("a caller's change reached the next caller: tools %d (want %d), names %q, %q (want %q, %q)",
			again.Servers[0].Tools, tools, full2[0], search2[0], name, meta)
	}
	s.SetCatalog(CatalogOptions{Mode: ModeSearch, Always: []string{name}})
	next := s.CatalogSize()
	_, search3 := s.ListedNames()
	if next.SearchBytes <= again.SearchBytes || !slices.Contains(search3, name) {
		t.Errorf("after always = [%q]: search list %d bytes (before %d), search names %v; want it larger, with the tool", name, next.SearchBytes, again.SearchBytes, search3)
	}
}
