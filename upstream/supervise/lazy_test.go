package supervise

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
	b := New("up", Config{Upstream: upstream.Options{Name: "up", Command: "true"}, CacheKey: "up"}, nil, Runtime{CacheDir: t.TempDir()}, Hooks{})
	schema := map[string]any{"type": "object", "properties": map[string]any{"saved": map[string]any{"type": "string"}}}
	l := Lists{Tools: []*mcp.Tool{{Name: "keep", InputSchema: schema}}}
	about := About{Name: "up", Instructions: "use it"}
	b.saveCatalog(l, about)
	path := b.cachePath()
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b.saveCatalog(l, about)
	if again, _ := os.ReadFile(path); !bytes.Equal(again, first) {
		t.Errorf("the same catalog rewrote the file:\n%s\nthen\n%s", first, again)
	}
	l.Tools = append(l.Tools, &mcp.Tool{Name: "new", InputSchema: schema})
	b.saveCatalog(l, about)
	got, _, ok := b.loadCatalog()
	if !ok || len(got.Tools) != 2 || got.Tools[1].Name != "new" {
		t.Fatalf("after a tool was added: loaded %v (ok %v), want the two tools", got.Tools, ok)
	}
	about.Instructions = "use it well"
	b.saveCatalog(l, about)
	if _, a, _ := b.loadCatalog(); a.Instructions != "use it well" {
		t.Errorf("after the instructions changed: loaded %q", a.Instructions)
	}
}
