package era

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDeclareCaps: the capabilities set in a raw _meta read back as the
// decoded and re-encoded _meta would: added where absent, replacing a
// value there (spelled plainly or with escapes), the other members kept,
// and an invalid _meta refused.
func TestDeclareCaps(t *testing.T) {
	caps := json.RawMessage(`{"elicitation":{}}`)
	for _, meta := range []string{``, `null`, `{}`, ` { } `, `{"a":1}`, `{"a":{"b":[1,"}"]},"c":"\"x"}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"a":1}`,
		`{"io.modelcontextprotocol/clientCapabilit\u0069es":{"sampling":{}}}`,
		`{"a":1,"a":2}`} {
		got, err := DeclareCaps(json.RawMessage(meta), caps)
		if err != nil {
			t.Errorf("%s: %v", meta, err)
			continue
		}
		want := map[string]json.RawMessage{}
		if meta != "" && meta != "null" {
			if err := json.Unmarshal([]byte(meta), &want); err != nil {
				t.Fatal(err)
			}
		}
		want[mcp.MetaKeyClientCapabilities] = caps
		var m map[string]json.RawMessage
		if err := json.Unmarshal(got, &m); err != nil {
			t.Errorf("%s: declared %s, not a JSON object: %v", meta, got, err)
			continue
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(m)
		if !bytes.Equal(wb, gb) {
			t.Errorf("%s: declared %s, reads as %s, want %s", meta, got, gb, wb)
		}
	}
	if _, err := DeclareCaps(json.RawMessage(`[1]`), caps); err == nil {
		t.Error("a _meta that is not an object: no error")
	}
}
