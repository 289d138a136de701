package supervise

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKeepSame checks that a re-listing hands the rebuild the definitions
// it had where they did not change (so what was derived from them is
// reused), the new ones where they did, and leaves the listing it was given
// as it was.
func TestKeepSame(t *testing.T) {
	schema := func(p string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{p: map[string]any{"type": "string"}}}
	}
	prev := Lists{Tools: []*mcp.Tool{
		{Name: "a", InputSchema: schema("x")},
		{Name: "b", InputSchema: schema("y")},
		{Name: "c", InputSchema: schema("z")},
	}}
	fresh := []*mcp.Tool{
		{Name: "a", InputSchema: schema("x")},                      // the same, decoded again
		{Name: "b", InputSchema: schema("changed")},                // changed
		{Name: "c", InputSchema: schema("z")},                      // the same
		{Name: "d", InputSchema: map[string]any{"type": "object"}}, // new
	}
	given := append([]*mcp.Tool(nil), fresh...)
	got := keepSame(prev, Lists{Tools: fresh}).Tools
	if len(got) != 4 {
		t.Fatalf("%d tools, want 4", len(got))
	}
	for i, want := range []*mcp.Tool{prev.Tools[0], fresh[1], prev.Tools[2], fresh[3]} {
		if got[i] != want {
			t.Errorf("tool %d (%s): not the definition wanted", i, got[i].Name)
		}
	}
	for i := range fresh {
		if fresh[i] != given[i] {
			t.Errorf("the listing given was changed at %d", i)
		}
	}
	// A listing that is prev itself (a kind whose listing failed) stays.
	if l := keepSame(prev, prev); &l.Tools[0] != &prev.Tools[0] {
		t.Error("prev given back as a copy")
	}
	// Nothing before: the listing as it came.
	if l := keepSame(Lists{}, Lists{Tools: fresh}); &l.Tools[0] != &fresh[0] {
		t.Error("a first listing was copied")
	}
}
