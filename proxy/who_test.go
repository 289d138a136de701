package proxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

func TestNarrowLists(t *testing.T) {
	c := &catalog{who: true, toolDefs: map[string]*mcp.Tool{}, items: map[string]policy.Item{},
		tools: mustTable([]naming.Group{{Server: "a", Prefix: "a", Names: []string{"one", "two"}}, {Server: "b", Prefix: "b", Names: []string{"three"}}})}
	for _, n := range []string{"a__one", "a__two", "b__three"} {
		c.toolDefs[n] = &mcp.Tool{Name: n}
		c.items["tool\x00"+n] = policy.Item{}
	}
	v := &view{hidden: map[string]bool{"tool\x00a__two": true}}
	tools := []*mcp.Tool{{Name: "search_tools"}, c.toolDefs["a__one"], c.toolDefs["a__two"], {Name: "unknown__x"}, c.toolDefs["b__three"]}
	var got []string
	for _, tl := range keepMeta(c, v, tools) {
		got = append(got, tl.Name)
	}
	// The meta-tool stays; the hidden and the unknown (not decided) go.
	if diff := cmp.Diff([]string{"search_tools", "a__one", "b__three"}, got); diff != "" {
		t.Errorf("keepMeta (-want +got):\n%s", diff)
	}
	// The meta-tools name only what the caller can find.
	narrow := &view{hidden: map[string]bool{"tool\x00a__two": true, "tool\x00b__three": true}}
	meta := keepMeta(c, narrow, tools)[0]
	if !strings.Contains(meta.Description, "among 1 tools from the servers a.") {
		t.Errorf("search_tools for a view of a__one alone: %q; want 1 tool of server a", meta.Description)
	}
	if again := keepMeta(c, &view{hidden: narrow.hidden}, tools)[0]; again != meta {
		t.Error("two views that see the same get two meta-tool definitions")
	}
	prompts := []*mcp.Prompt{{Name: "p1"}, {Name: "p2"}}
	c.items["prompt\x00p1"] = policy.Item{}
	c.items["prompt\x00p2"] = policy.Item{}
	if out := narrowList(c, v, prompts, func(p *mcp.Prompt) string { return "prompt\x00" + p.Name }); &out[0] != &prompts[0] || len(out) != 2 {
		t.Error("a list the view shows whole is not returned as is")
	}
	v.hidden["prompt\x00p1"] = true
	if out := narrowList(c, v, prompts, func(p *mcp.Prompt) string { return "prompt\x00" + p.Name }); len(out) != 1 || out[0].Name != "p2" || prompts[0].Name != "p1" {
		t.Errorf("narrowList = %v; want p2 alone, the input untouched", out)
	}
}
