package e2e

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureTools are the fixture's short tool names: the ones exposed as
// "<prefix>__<name>" unchanged.
var fixtureTools = []string{"args", "big", "crash", "echo", "fail", "link", "pid", "rpcerror", "sleep", "whoami"}

// Descriptions that identify the fixture tools whose exposed names are
// rewritten.
const (
	longToolDesc   = "A tool whose name is too long to expose."
	dottedToolDesc = "A tool with a dot in its name."
)

// exposedNameRE is what clients accept as a tool or prompt name.
var exposedNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func twoFixtures() string {
	return `call_timeout = "20s"` + "\n" + fixture("alpha", nil) + fixture("beta", nil)
}

func TestTwoServersSameToolNames(t *testing.T) {
	t.Parallel()
	sp := startStdio(t, writeConfig(t, twoFixtures()))
	ctx := testCtx(t)
	tools := listTools(ctx, t, sp.cs)

	t.Run("names", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			for _, n := range fixtureTools {
				if tools[server+"__"+n] == nil {
					t.Errorf("tool %s__%s not listed; listed: %v", server, n, toolNames(tools))
				}
			}
		}
		for _, n := range toolNames(tools) {
			if !exposedNameRE.MatchString(n) {
				t.Errorf("exposed name %q: want ^[A-Za-z0-9_-]{1,64}$", n)
			}
		}
		if got, want := len(tools), 2*(len(fixtureTools)+2); got != want {
			t.Errorf("listed %d tools, want %d: %v", got, want, toolNames(tools))
		}
	})

	t.Run("each echo answers with its own server", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			res := call(ctx, t, sp.cs, server+"__echo", map[string]any{"message": "hi"})
			if diff := cmp.Diff([]string{server + ": hi"}, texts(res.Content)); diff != "" {
				t.Errorf("%s__echo content (-want +got):\n%s", server, diff)
			}
			wantSC := map[string]any{"server": server, "message": "hi"}
			if diff := cmp.Diff(any(wantSC), asJSON(t, res.StructuredContent)); diff != "" {
				t.Errorf("%s__echo structuredContent (-want +got):\n%s", server, diff)
			}
			if diff := cmp.Diff(any(map[string]any{"fixture": server}), asJSON(t, res.Meta)); diff != "" {
				t.Errorf("%s__echo _meta (-want +got):\n%s", server, diff)
			}
			if res.IsError {
				t.Errorf("%s__echo: isError true", server)
			}
		}
	})

	t.Run("outputSchema survives", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			tool := tools[server+"__echo"]
			if tool == nil {
				t.Fatalf("%s__echo not listed", server)
			}
			schema, _ := asJSON(t, tool.OutputSchema).(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			var got []string
			for k := range props {
				got = append(got, k)
			}
			slices.Sort(got)
			if diff := cmp.Diff([]string{"message", "server"}, got); diff != "" {
				t.Errorf("%s__echo outputSchema properties (-want +got):\n%s\nschema: %v", server, diff, schema)
			}
		}
	})

	t.Run("annotations and title survive", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			tool := tools[server+"__whoami"]
			if tool == nil {
				t.Fatalf("%s__whoami not listed", server)
			}
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.Annotations.Title != "Who am I" {
				t.Errorf("%s__whoami annotations = %+v, want readOnlyHint true and title \"Who am I\"", server, tool.Annotations)
			}
			res := call(ctx, t, sp.cs, server+"__whoami", nil)
			if got := text(res); got != server {
				t.Errorf("%s__whoami = %q, want %q", server, got, server)
			}
		}
	})

	t.Run("isError survives", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			res := call(ctx, t, sp.cs, server+"__fail", nil)
			if !res.IsError {
				t.Errorf("%s__fail: isError false, want true", server)
			}
			if got, want := text(res), server+": failed on purpose"; got != want {
				t.Errorf("%s__fail text = %q, want %q", server, got, want)
			}
		}
	})

	t.Run("arguments byte-exact", func(t *testing.T) {
		tests := []struct {
			name string
			args string // compact JSON, as the client's encoder sends it
		}{
			{name: "unicode", args: `{"s":"héllo wörld ✓ 𝄞 日本語","e":"\u00e9\n\t\"q\""}`},
			{name: "nested", args: `{"z":{"y":[1,{"x":[[],{}]},null,true,false]},"a":{}}`},
			{name: "key order kept", args: `{"b":1,"a":2,"c":{"z":0,"y":1}}`},
			{name: "numbers kept as written", args: `{"big":12345678901234567890,"precise":0.10000000000000000555,"exp":1E+2,"neg":-0.0,"huge":1e400}`},
			{name: "empty object", args: `{}`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, server := range []string{"alpha", "beta"} {
					res := call(ctx, t, sp.cs, server+"__args", json.RawMessage(tt.args))
					if got := text(res); got != tt.args {
						t.Errorf("%s__args received\n%s\nwant\n%s", server, got, tt.args)
					}
				}
			})
		}
	})

	t.Run("JSON-RPC error code and data survive", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			_, err := sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__rpcerror"})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) {
				t.Fatalf("%s__rpcerror: error %v, want a *jsonrpc.Error", server, err)
			}
			if rpcErr.Code != -32001 {
				t.Errorf("%s__rpcerror: code %d, want -32001", server, rpcErr.Code)
			}
			if want := server + ": rpc error on purpose"; rpcErr.Message != want {
				t.Errorf("%s__rpcerror: message %q, want %q", server, rpcErr.Message, want)
			}
			var data any
			if err := json.Unmarshal(rpcErr.Data, &data); err != nil {
				t.Fatalf("%s__rpcerror: data %q: %v", server, rpcErr.Data, err)
			}
			want := map[string]any{"why": "on purpose", "server": server}
			if diff := cmp.Diff(any(want), data); diff != "" {
				t.Errorf("%s__rpcerror data (-want +got):\n%s", server, diff)
			}
		}
	})

	t.Run("unknown tool is -32602", func(t *testing.T) {
		for _, name := range []string{"nope", "alpha__nope", "gamma__echo", "echo"} {
			_, err := sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("call %q: error %v, want a JSON-RPC error with code -32602", name, err)
			}
		}
	})

	t.Run("long tool name", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			name := findTool(tools, server+"__", longToolDesc)
			if name == "" {
				t.Fatalf("no %s tool described %q in %v", server, longToolDesc, toolNames(tools))
			}
			if len(name) > 64 || !exposedNameRE.MatchString(name) {
				t.Errorf("long tool exposed as %q (%d chars), want at most 64 of [A-Za-z0-9_-]", name, len(name))
			}
			if got, want := text(call(ctx, t, sp.cs, name, nil)), server+": long"; got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
	})

	t.Run("dotted tool name", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			name := findTool(tools, server+"__", dottedToolDesc)
			if name == "" {
				t.Fatalf("no %s tool described %q in %v", server, dottedToolDesc, toolNames(tools))
			}
			if strings.Contains(name, ".") {
				t.Errorf("dotted tool exposed as %q, want no dot", name)
			}
			if got, want := text(call(ctx, t, sp.cs, name, nil)), server+": dotted"; got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
	})
}

func TestEmptyPrefixKeepsNames(t *testing.T) {
	t.Parallel()
	cfg := fixture("alpha", nil) + fixture("beta", nil, `prefix = ""`)
	sp := startStdio(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	tools := listTools(ctx, t, sp.cs)
	for _, n := range fixtureTools {
		if tools[n] == nil {
			t.Errorf("beta's %q not listed unchanged; listed: %v", n, toolNames(tools))
		}
		if tools["alpha__"+n] == nil {
			t.Errorf("alpha__%s not listed; listed: %v", n, toolNames(tools))
		}
		if tools["beta__"+n] != nil {
			t.Errorf("beta__%s listed, but beta has prefix \"\"", n)
		}
	}
	tests := []struct {
		tool string
		want string
	}{
		{tool: "echo", want: "beta: hi"},
		{tool: "alpha__echo", want: "alpha: hi"},
	}
	for _, tt := range tests {
		if got := text(call(ctx, t, sp.cs, tt.tool, map[string]any{"message": "hi"})); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.tool, got, tt.want)
		}
	}
	// An unprefixed server keeps its resource URIs too.
	rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://beta/readme.txt"})
	if err != nil {
		t.Fatalf("read fixture://beta/readme.txt: %v", err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != "readme of beta" || rr.Contents[0].URI != "fixture://beta/readme.txt" {
		t.Errorf("read fixture://beta/readme.txt = %+v, want beta's readme under its own URI", rr.Contents)
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	// alpha serves its lists two entries a page, beta three: the proxy must
	// drain every page of both. The proxy serves its own lists with the
	// SDK's default page size (1000), so the client's iterator gets them in
	// one page; it drains further pages if there are any.
	cfg := fixture("alpha", []string{"-pages", "2"}) + fixture("beta", []string{"-pages", "3"})
	sp := startStdio(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	tools := listTools(ctx, t, sp.cs)
	var want []string
	for _, server := range []string{"alpha", "beta"} {
		for _, n := range fixtureTools {
			want = append(want, server+"__"+n)
		}
	}
	var got []string
	for _, n := range toolNames(tools) {
		if tools[n].Description == longToolDesc || tools[n].Description == dottedToolDesc {
			continue
		}
		got = append(got, n)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if len(tools) != len(want)+4 {
		t.Errorf("listed %d tools, want %d", len(tools), len(want)+4)
	}

	var uris []string
	for r, err := range sp.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	wantURIs := []string{"alpha+file:///shared/same.txt", "alpha+fixture://alpha/readme.txt", "beta+file:///shared/same.txt", "beta+fixture://beta/readme.txt"}
	if diff := cmp.Diff(wantURIs, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}

	var prompts []string
	for p, err := range sp.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(prompts)
	if diff := cmp.Diff([]string{"alpha__greet", "beta__greet"}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
}
