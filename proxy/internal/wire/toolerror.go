package wire

import (
	"encoding/json"
	"fmt"
)

// ToolError is a tools/call result with isError set and one text content,
// the message format makes of args: how the proxy refuses a call or says
// why a result was withheld, so that the model reads it. Its bytes are
// what encoding/json makes of the SDK's CallToolResult shape
// ({"content":[{"type":"text","text":…}],"isError":true}), the text
// escaped as json.Marshal escapes a string.
func ToolError(format string, args ...any) json.RawMessage {
	text, _ := json.Marshal(fmt.Sprintf(format, args...))
	const head, tail = `{"content":[{"type":"text","text":`, `}],"isError":true}`
	out := make([]byte, 0, len(head)+len(text)+len(tail))
	return append(append(append(out, head...), text...), tail...)
}
