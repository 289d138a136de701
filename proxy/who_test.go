package proxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/surface"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

func TestNarrowLists(t *testing.T) {
	// a__two is hidden from alice, carol and dave; b__three from carol and
	// dave too.
	var who []policy.Principal
	for _, n := range []string{"user:alice", "user:carol", "user:dave"} {
		p, err := policy.ParsePrincipal(n)
		if err != nil {
			t.Fatal(err)
		}
		who = append(who, p)
	}
	rules := &policy.Rules{TableRules: []policy.Rule{
		{Name: "no-two", Match: "a__two", Deny: true, Who: who, Source: "test:1"},
		{Name: "no-three", Match: "b__three", Deny: true, Who: who[1:], Source: "test:2"},
	}}
	uris, err := naming.NewURIMap(nil)
	if err != nil {
		t.Fatal(err)
	}
	bld := cat.NewBuilder(cat.Options{Rules: rules, URIs: uris})
	tool := func(n string) *mcp.Tool { return &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}} }
	bld.Names([]cat.Listing{
		{Name: "a", Prefix: "a", Lists: supervise.Lists{Tools: []*mcp.Tool{tool("one"), tool("two")}}},
		{Name: "b", Prefix: "b", Lists: supervise.Lists{Tools: []*mcp.Tool{tool("three")}}},
	})
	c := &catalog{Snapshot: bld.Build(nil, nil)}
	c.surf = surface.New(CatalogOptions{}, c.ToolDefs, c.Tools, nil, nil)
	view := func(user string) *cat.View { return c.ViewOf("user:"+user, policy.Identity{User: user}) }
	v := view("alice")
	tools := []*mcp.Tool{{Name: "search_tools"}, c.ToolDefs["a__one"], c.ToolDefs["a__two"], {Name: "unknown__x"}, c.ToolDefs["b__three"]}
	var got []string
	for _, tl := range keepMeta(c, v, tools) {
		got = append(got, tl.Name)
	}
	// The meta-tool stays; the hidden and the unknown (not decided) go.
	if diff := cmp.Diff([]string{"search_tools", "a__one", "b__three"}, got); diff != "" {
		t.Errorf("keepMeta (-want +got):\n%s", diff)
	}
	// The meta-tools name only what the caller can find.
	narrow := view("carol")
	meta := keepMeta(c, narrow, tools)[0]
	if !strings.Contains(meta.Description, "among 1 tools from the servers a.") {
		t.Errorf("search_tools for a view of a__one alone: %q; want 1 tool of server a", meta.Description)
	}
	if again := keepMeta(c, view("dave"), tools)[0]; again != meta {
		t.Error("two views that see the same get two meta-tool definitions")
	}
}
