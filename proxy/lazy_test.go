package proxy

import (
	"bytes"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// TestSaveCatalogOnlyOnChange: the catalog cache file is written when its
// content changes, not when only the time of writing would (a member named
// "saved" inside a tool's schema does not confuse the comparison), and
// what is written loads back.
func TestSaveCatalogOnlyOnChange(t *testing.T) {
	s, err := New(Options{CacheDir: t.TempDir(), Servers: []ServerConfig{{Upstream: upstream.Options{Name: "up", Command: "true"}, Prefix: "up"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := s.gen.Load().backends[0]
	schema := map[string]any{"type": "object", "properties": map[string]any{"saved": map[string]any{"type": "string"}}}
	l := lists{tools: []*mcp.Tool{{Name: "keep", InputSchema: schema}}}
	about := serverAbout{name: "up", instructions: "use it"}
	s.saveCatalog(b, l, about)
	path := s.cachePath(b)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s.saveCatalog(b, l, about)
	if again, _ := os.ReadFile(path); !bytes.Equal(again, first) {
		t.Errorf("the same catalog rewrote the file:\n%s\nthen\n%s", first, again)
	}
	l.tools = append(l.tools, &mcp.Tool{Name: "new", InputSchema: schema})
	s.saveCatalog(b, l, about)
	got, _, ok := s.loadCatalog(b)
	if !ok || len(got.tools) != 2 || got.tools[1].Name != "new" {
		t.Fatalf("after a tool was added: loaded %v (ok %v), want the two tools", got.tools, ok)
	}
	about.instructions = "use it well"
	s.saveCatalog(b, l, about)
	if _, a, _ := s.loadCatalog(b); a.instructions != "use it well" {
		t.Errorf("after the instructions changed: loaded %q", a.instructions)
	}
}
