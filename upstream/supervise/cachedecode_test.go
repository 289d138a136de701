package supervise

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// cacheSeeds are cache files as saveCatalog writes them: schemas with
// nesting, numbers large and small, escapes and non-ASCII text, nulls,
// annotations, metadata, prompts, resources and templates.
func cacheSeeds(t testing.TB) [][]byte {
	readOnly := true
	lists := []cachedLists{
		{},
		{Tools: []*mcp.Tool{{Name: "a", InputSchema: map[string]any{"type": "object"}}}},
		{
			Tools: []*mcp.Tool{
				{Name: "search", Title: "Search « ok » 🙂", Description: "Finds <b>things</b> & \"quotes\"\n\ttabs \\ \u2028",
					InputSchema: map[string]any{"type": "object", "properties": map[string]any{
						"q":     map[string]any{"type": "string", "x-mcp-header": "X-Query", "maxLength": 9007199254740993.0},
						"n":     map[string]any{"type": "integer", "minimum": -1e300, "default": 1.5e-7},
						"deep":  map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": []any{"null", "boolean"}}}},
						"enum":  map[string]any{"enum": []any{nil, true, false, 0.0, "", []any{}, map[string]any{}}},
						"Upper": map[string]any{"type": "string"},
					}, "required": []any{"q"}},
					OutputSchema: map[string]any{"type": "object"},
					Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: readOnly, Title: "t"},
					Meta:         mcp.Meta{"vendor/key": map[string]any{"v": 1.0}},
				},
				{Name: "empty"},
			},
			Prompts:   []*mcp.Prompt{{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "x", Required: true}}}},
			Resources: []*mcp.Resource{{URI: "file:///a%20b", Name: "a b", MIMEType: "text/plain", Size: 12}},
			Templates: []*mcp.ResourceTemplate{{URITemplate: "file:///{path}", Name: "t"}},
			Title:     "Server", Name: "srv", Instructions: "Use it.\nWell.",
			Saved: time.Date(2026, 12, 8, 0, 0, 0, 123456789, time.UTC),
		},
	}
	var out [][]byte
	for _, l := range lists {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkCacheDecoders fails t unless data, a file saveCatalog wrote, reads
// the same with encoding/json and with segmentio's decoder (loadCatalog's).
func checkCacheDecoders(t *testing.T, data []byte) {
	t.Helper()
	var want, got cachedLists
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if err := segjson.Unmarshal(data, &got); err != nil {
		t.Fatalf("segmentio: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the decoders differ on %s:\nencoding/json %#v\nsegmentio     %#v", data, want, got)
	}
}

// TestCacheDecodersAgree: loadCatalog reads the cache with segmentio's
// decoder; what it reads from saveCatalog's files is what encoding/json
// read before.
func TestCacheDecodersAgree(t *testing.T) {
	for _, data := range cacheSeeds(t) {
		checkCacheDecoders(t, data)
	}
}

// FuzzCacheDecodersAgree: for any lists encoding/json reads, the file
// saveCatalog would write of them reads the same with both decoders.
func FuzzCacheDecodersAgree(f *testing.F) {
	for _, data := range cacheSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var l cachedLists
		if json.Unmarshal(in, &l) != nil {
			return
		}
		data, err := json.Marshal(l)
		if err != nil {
			return
		}
		checkCacheDecoders(t, data)
	})
}
