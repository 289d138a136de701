package proxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

func TestIdentityPolicy(t *testing.T) {
	tests := []struct {
		name string
		ti   *auth.TokenInfo
		want policy.Identity
	}{
		{"anonymous", nil, policy.Identity{}},
		{"token", &auth.TokenInfo{UserID: "jwt:https://idp alice", Extra: map[string]any{
			extraSubject: "alice", extraGroups: []string{"eng", "ops"}, extraMethod: "jwt"}},
			policy.Identity{User: "alice", Groups: []string{"eng", "ops"}}},
		{"API key", &auth.TokenInfo{UserID: "key:ci-bot", Extra: map[string]any{
			extraSubject: "ci-bot", extraGroups: []string{"ci"}, extraMethod: methodAPIKey}},
			policy.Identity{Key: "ci-bot", Groups: []string{"ci"}}},
		{"groups with control characters are dropped", &auth.TokenInfo{UserID: "jwt:i m", Extra: map[string]any{
			extraSubject: "m", extraGroups: []string{"eng\x00", "", "a\nb", "ok"}, extraMethod: "jwt"}},
			policy.Identity{User: "m", Groups: []string{"ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, identityOf(tt.ti).policy(), cmp.AllowUnexported(policy.Identity{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Keys tell identities apart: a key from a token, one group set from
	// another, and nothing in a claim can make two sets look alike.
	keys := map[string]string{}
	for _, ti := range []*auth.TokenInfo{
		{UserID: "jwt:i a", Extra: map[string]any{extraGroups: []string{"x", "y"}}},
		{UserID: "jwt:i a", Extra: map[string]any{extraGroups: []string{"x\x00y"}}},
		{UserID: "jwt:i a", Extra: map[string]any{extraGroups: []string{"xy"}}},
		{UserID: "key:a", Extra: map[string]any{extraGroups: []string{"x", "y"}}},
	} {
		k := identityOf(ti).key()
		if prev, dup := keys[k]; dup {
			t.Errorf("identities %s and %v share the key %q", prev, ti.Extra, k)
		}
		keys[k] = ti.UserID
	}
	if k := identityOf(nil).key(); k != "" {
		t.Errorf("anonymous key %q, want \"\" (one shared bucket)", k)
	}
}

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
