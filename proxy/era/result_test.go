package era

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyResult: a result relayed from a 2026-07-28 upstream reaches a
// legacy client without resultType "complete" and without the upstream's
// serverInfo; anything else is kept, and a result without them is the same
// bytes.
func TestLegacyResult(t *testing.T) {
	info := `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`
	tests := []struct{ in, want string }{
		{`{"content":[{"type":"text","text":"x"}]}`, `{"content":[{"type":"text","text":"x"}]}`},
		{`{"_meta":{` + info + `},"content":[],"resultType":"complete"}`, `{"content":[]}`},
		{`{"_meta":{` + info + `,"progressToken":1},"content":[]}`, `{"_meta":{"progressToken":1},"content":[]}`},
		{`{"content":[],"resultType":"input_required"}`, `{"content":[],"resultType":"input_required"}`},
		{`{"content":[{"type":"text","text":"resultType"}]}`, `{"content":[{"type":"text","text":"resultType"}]}`},
	}
	for _, tc := range tests {
		if got := string(LegacyResultRaw([]byte(tc.in))); got != tc.want {
			t.Errorf("LegacyResultRaw(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if got := string(AdaptCallResult([]byte(tc.in), "2025-11-25")); got != tc.want {
			t.Errorf("AdaptCallResult for a 2025-11-25 session: %s, want %s", got, tc.want)
		}
		if got := string(AdaptCallResult([]byte(tc.in), Version)); got != tc.in {
			t.Errorf("AdaptCallResult for a modern session changed %s to %s", tc.in, got)
		}
	}
	var rr mcp.ReadResourceResult
	if err := json.Unmarshal([]byte(`{"_meta":{`+info+`},"contents":[{"uri":"a://b","text":"t"}],"resultType":"complete","ttlMs":5,"cacheScope":"public"}`), &rr); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(LegacyResult(&rr))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ttlMs":5,"cacheScope":"public","contents":[{"uri":"a://b","text":"t"}]}`; string(got) != want {
		t.Errorf("legacy read = %s, want %s", got, want)
	}
}

// TestToolList: a client of the initialize era gets the fields its version
// has (AdaptToolList, the registered definitions untouched); a modern one
// what modern makes.
func TestToolList(t *testing.T) {
	tool := &mcp.Tool{Name: "t", Title: "T", Annotations: &mcp.ToolAnnotations{}, Icons: []mcp.Icon{{Source: "x"}}}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{tool}}
	modernCalled := false
	modern := func(r *mcp.ListToolsResult) *mcp.ListToolsResult { modernCalled = true; return r }
	if got := ToolList(res, "2025-11-25", modern); got != res || modernCalled {
		t.Errorf("2025-11-25: the list was changed (or modern called)")
	}
	got := ToolList(res, "2025-03-26", modern)
	if modernCalled || got == res || got.Tools[0].Title != "" || got.Tools[0].Icons != nil || got.Tools[0].Annotations.Title != "T" {
		t.Errorf("2025-03-26: got %+v", got.Tools[0])
	}
	if tool.Title != "T" || tool.Icons == nil || tool.Annotations.Title != "" {
		t.Errorf("the registered definition was modified: %+v", tool)
	}
	if got := ToolList(res, "2024-11-05", modern); got.Tools[0].Annotations != nil {
		t.Errorf("2024-11-05: annotations kept")
	}
	if ToolList(res, Version, modern); !modernCalled {
		t.Errorf("%s: modern not called", Version)
	}
}

// TestModernResult: a result for a modern client loses an upstream's
// serverInfo, and a call or read is completed with Manifold's.
func TestModernResult(t *testing.T) {
	info := []byte(`{"name":"manifold","version":"1"}`)
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"2"},"k":1},"content":[]}`), &r); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(ModernResult(&r, info))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Meta       map[string]json.RawMessage `json:"_meta"`
		ResultType string                     `json:"resultType"`
	}
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if m.ResultType != "complete" || string(m.Meta[KeyServerInfo]) != string(info) || string(m.Meta["k"]) != "1" {
		t.Errorf("ModernResult = %s", got)
	}
	if ModernResult(nil, info) != nil {
		t.Errorf("ModernResult(nil) is not nil")
	}
}
