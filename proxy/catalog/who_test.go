package catalog

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
)

func TestNarrowList(t *testing.T) {
	c := &Snapshot{Who: true, items: map[string]policy.Item{}}
	v := &View{hidden: map[string]bool{"tool\x00a__two": true}}
	prompts := []*mcp.Prompt{{Name: "p1"}, {Name: "p2"}}
	c.items["prompt\x00p1"] = policy.Item{}
	c.items["prompt\x00p2"] = policy.Item{}
	if out := NarrowList(c, v, prompts, func(p *mcp.Prompt) string { return "prompt\x00" + p.Name }); &out[0] != &prompts[0] || len(out) != 2 {
		t.Error("a list the view shows whole is not returned as is")
	}
	v.hidden["prompt\x00p1"] = true
	if out := NarrowList(c, v, prompts, func(p *mcp.Prompt) string { return "prompt\x00" + p.Name }); len(out) != 1 || out[0].Name != "p2" || prompts[0].Name != "p1" {
		t.Errorf("NarrowList = %v; want p2 alone, the input untouched", out)
	}
}
