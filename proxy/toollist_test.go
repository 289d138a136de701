package proxy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// TestHeaderToolsChecked checks the tools whose schema binds a parameter to
// a header: one the SDK would refuse to register is left out of the list
// (it was left out when every tool was registered), one it accepts is
// listed; a tool that binds nothing is listed without a check.
func TestHeaderToolsChecked(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hdr := func(name string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{
			"region": map[string]any{"type": "string", "x-mcp-header": name},
		}}
	}
	uris, err := naming.NewURIMap(nil)
	if err != nil {
		t.Fatal(err)
	}
	bld := cat.NewBuilder(cat.Options{Rules: &policy.Rules{}, URIs: uris})
	bld.Names([]cat.Listing{{Name: "a", Prefix: "a", Lists: supervise.Lists{Tools: []*mcp.Tool{
		{Name: "plain", InputSchema: map[string]any{"type": "object"}},
		{Name: "good", InputSchema: hdr("Region")},
		{Name: "bad", InputSchema: hdr("")},
		{Name: "nested", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"o": hdr("bad header\n")}}},
	}}}})
	s.builder.catMu.Lock()
	c := bld.Build(nil, s.checkHeaderTool)
	s.builder.catMu.Unlock()
	page, err := c.ToolPage("")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, t := range page.Tools {
		listed = append(listed, t.Name)
	}
	if diff := cmp.Diff([]string{"a__good", "a__plain"}, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	for _, name := range []string{"a__bad", "a__nested"} {
		if c.Unlisted(name) == nil {
			t.Errorf("%s: no reason recorded", name)
		}
	}
}
