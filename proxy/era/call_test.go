//lint:file-ignore SA1019 roots are deprecated as of protocol 2026-07-28, and what a modern server is told of them is what is tested.

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

// TestForUpstream: a legacy request to a legacy server is forwarded as it
// came; a modern request loses the era's own keys; a modern server is told
// the client's capabilities (roots only when its process serves one client).
func TestForUpstream(t *testing.T) {
	meta := json.RawMessage(`{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, RootsV2: &mcp.RootCapabilities{}}
	for _, tc := range []struct {
		name      string
		e         Request
		upModern  bool
		oneClient bool
		want      string
	}{
		{name: "legacy to legacy", e: Request{Caps: caps}, want: string(meta)},
		{name: "modern to legacy", e: Request{Modern: true, Caps: caps}, want: `{"progressToken":1}`},
		{name: "modern to modern", e: Request{Modern: true, Caps: caps}, upModern: true,
			want: `{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":1}`},
		{name: "modern to modern, one client", e: Request{Modern: true, Caps: caps}, upModern: true, oneClient: true,
			want: `{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}},"progressToken":1}`},
	} {
		fields := map[string]json.RawMessage{"_meta": meta}
		var memo CapsMemo
		if err := ForUpstream(fields, tc.e, tc.upModern, &memo, tc.oneClient); err != nil || string(fields["_meta"]) != tc.want {
			t.Errorf("%s: _meta = %s, %v; want %s", tc.name, fields["_meta"], err, tc.want)
		}
	}
}
