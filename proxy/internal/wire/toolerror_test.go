package wire_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// oldToolError is the function ToolError replaced (proxy, proxy/guard and
// proxy/confirm each had a copy): the SDK's text content, encoded.
func oldToolError(format string, args ...any) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content []mcp.TextContent `json:"content"`
		IsError bool              `json:"isError"`
	}{[]mcp.TextContent{{Text: fmt.Sprintf(format, args...)}}, true})
	return b
}

// TestToolError: the bytes are those the SDK's types made, for texts that
// JSON escapes (quotes, backslashes, controls, HTML, line separators,
// invalid UTF-8) and for plain and empty ones.
func TestToolError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format string
		args   []any
	}{
		{name: "plain", format: "upstream %q is busy; retry later", args: []any{"fx"}},
		{name: "empty", format: ""},
		{name: "quotes and backslashes", format: `a "b" \c %s`, args: []any{`d\"e`}},
		{name: "controls", format: "line\nnext\ttab\r\x00\x1f\x7f"},
		{name: "html", format: "<script>&amp;</script> %s", args: []any{"a>b"}},
		{name: "line separators", format: "a\u2028b\u2029c"},
		{name: "invalid utf-8", format: "bad \xff\xfe byte %s", args: []any{"\xc3"}},
		{name: "unicode", format: "héllo 世界 🎉 %v", args: []any{fmt.Errorf("wrapped: %w", fmt.Errorf("x"))}},
		{name: "percent", format: "%s", args: []any{"100% %d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := wire.ToolError(tc.format, tc.args...), oldToolError(tc.format, tc.args...)
			if string(got) != string(want) {
				t.Errorf("ToolError = %s\nwant        %s", got, want)
			}
		})
	}
}
