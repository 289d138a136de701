package surface

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestServeHelpers(t *testing.T) {
	if got := toolSummary("Reads a file.  Then more.\nAnd more."); got != "Reads a file." {
		t.Errorf("toolSummary = %q", got)
	}
	if got := []rune(toolSummary(strings.Repeat("é", 200))); len(got) != 160 || got[159] != '…' {
		t.Errorf("toolSummary of a long line: %d runes", len(got))
	}
	if got := signature("f__read", []Param{{Name: "path", Required: true}, {Name: "n"}}); got != "f__read(path*, n?)" {
		t.Errorf("signature = %q", got)
	}
	if got := string(toolResult("hi", nil)); got != `{"content":[{"type":"text","text":"hi"}]}` {
		t.Errorf("toolResult = %s", got)
	}

	if _, bad := Arguments(ToolSearch, map[string]json.RawMessage{"arguments": json.RawMessage(`[1]`)}); !strings.Contains(string(bad), "arguments must be an object") {
		t.Errorf("Arguments of an array: %s", bad)
	}
	args, bad := Arguments(ToolSearch, map[string]json.RawMessage{"arguments": json.RawMessage(`{"query":"x"}`)})
	if bad != nil || string(args["query"]) != `"x"` {
		t.Errorf("Arguments = %v, %s", args, bad)
	}
	if _, _, bad := CallTarget(ToolCallRead, nil); !strings.Contains(string(bad), "needs the name of the tool") {
		t.Errorf("CallTarget without a name: %s", bad)
	}
	if _, _, bad := CallTarget(ToolCallRead, map[string]json.RawMessage{"name": json.RawMessage(`"t"`), "arguments": json.RawMessage(`3`)}); !strings.Contains(string(bad), "must be an object") {
		t.Errorf("CallTarget with arguments not an object: %s", bad)
	}
	target, inner, bad := CallTarget(ToolCallRead, map[string]json.RawMessage{"name": json.RawMessage(`"t"`), "arguments": json.RawMessage(`{"a":1}`)})
	if target != "t" || string(inner) != `{"a":1}` || bad != nil {
		t.Errorf("CallTarget = %q, %s, %s", target, inner, bad)
	}
	f := InnerFields(map[string]json.RawMessage{"name": json.RawMessage(`"call_tool_read"`), "arguments": json.RawMessage(`{}`), "_meta": json.RawMessage(`{}`)}, inner)
	if len(f) != 3 || string(f["arguments"]) != `{"a":1}` {
		t.Errorf("InnerFields = %v", f)
	}
	if f := InnerFields(map[string]json.RawMessage{"arguments": json.RawMessage(`{}`)}, json.RawMessage("null")); len(f) != 0 {
		t.Errorf("InnerFields without inner arguments = %v", f)
	}
	if got := string(WrongCallTool("t", ClassWrite, ToolCallRead)); !strings.Contains(got, "call it with "+ToolCallWrite) || !strings.Contains(got, `"isError":true`) {
		t.Errorf("WrongCallTool = %s", got)
	}
}
