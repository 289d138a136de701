package naming

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func prefixFiles(uri string) string { return "files+" + uri }

func TestRewriteContentURIs(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		want        string
		wantChanged bool
	}{
		{
			name: "tool result: text, resource_link, embedded resource, structured content",
			in: `{
				"content": [
					{"type": "text", "text": "see resource_link below; uri: file:///x"},
					{"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"},
					{"type": "resource", "resource": {"uri": "test://static/resource/1", "mimeType": "text/plain", "text": "hi"},
					 "annotations": {"audience": ["user"]}},
					{"type": "image", "data": "AAAA", "mimeType": "image/png"}
				],
				"structuredContent": {"type": "resource_link", "uri": "file:///kept", "items": [{"type": "resource", "resource": {"uri": "file:///kept"}}]},
				"_meta": {"uri": "file:///kept"},
				"isError": false
			}`,
			want: `{
				"content": [
					{"type": "text", "text": "see resource_link below; uri: file:///x"},
					{"type": "resource_link", "uri": "files+file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"},
					{"type": "resource", "resource": {"uri": "files+test://static/resource/1", "mimeType": "text/plain", "text": "hi"},
					 "annotations": {"audience": ["user"]}},
					{"type": "image", "data": "AAAA", "mimeType": "image/png"}
				],
				"structuredContent": {"type": "resource_link", "uri": "file:///kept", "items": [{"type": "resource", "resource": {"uri": "file:///kept"}}]},
				"_meta": {"uri": "file:///kept"},
				"isError": false
			}`,
			wantChanged: true,
		},
		{
			name:        "tool result: text only",
			in:          `{"content": [{"type": "text", "text": "hello"}]}`,
			want:        `{"content": [{"type": "text", "text": "hello"}]}`,
			wantChanged: false,
		},
		{
			name: "read result",
			in: `{"contents": [
				{"uri": "file:///a", "mimeType": "text/plain", "text": "a"},
				{"uri": "file:///b.bin", "blob": "AAEC"}
			]}`,
			want: `{"contents": [
				{"uri": "files+file:///a", "mimeType": "text/plain", "text": "a"},
				{"uri": "files+file:///b.bin", "blob": "AAEC"}
			]}`,
			wantChanged: true,
		},
		{
			name: "prompt result: single and array content",
			in: `{"description": "d", "messages": [
				{"role": "user", "content": {"type": "text", "text": "hi"}},
				{"role": "user", "content": {"type": "resource", "resource": {"uri": "file:///p", "text": "x"}}},
				{"role": "assistant", "content": [
					{"type": "resource_link", "uri": "file:///q", "name": "q"},
					{"type": "text", "text": "t"}
				]}
			]}`,
			want: `{"description": "d", "messages": [
				{"role": "user", "content": {"type": "text", "text": "hi"}},
				{"role": "user", "content": {"type": "resource", "resource": {"uri": "files+file:///p", "text": "x"}}},
				{"role": "assistant", "content": [
					{"type": "resource_link", "uri": "files+file:///q", "name": "q"},
					{"type": "text", "text": "t"}
				]}
			]}`,
			wantChanged: true,
		},
		{
			name:        "sampling result: single content object",
			in:          `{"role": "assistant", "model": "m", "content": {"type": "resource_link", "uri": "file:///s", "name": "s"}}`,
			want:        `{"role": "assistant", "model": "m", "content": {"type": "resource_link", "uri": "files+file:///s", "name": "s"}}`,
			wantChanged: true,
		},
		{
			name:        "bare block",
			in:          `{"type": "resource_link", "uri": "file:///b", "name": "b"}`,
			want:        `{"type": "resource_link", "uri": "files+file:///b", "name": "b"}`,
			wantChanged: true,
		},
		{
			name:        "array of blocks",
			in:          `[{"type": "text", "text": "x"}, {"type": "resource", "resource": {"uri": "u"}}, 3, null]`,
			want:        `[{"type": "text", "text": "x"}, {"type": "resource", "resource": {"uri": "files+u"}}, 3, null]`,
			wantChanged: true,
		},
		{
			name: "malformed shapes left alone",
			in: `{"content": [
				{"type": "resource_link", "uri": 5},
				{"type": "resource", "resource": "file:///x"},
				{"type": "resource"},
				{"type": ["resource_link"], "uri": "file:///x"},
				"resource_link"
			], "contents": [{"uri": null}, "x"], "messages": [{"role": "user"}, 7]}`,
			want: `{"content": [
				{"type": "resource_link", "uri": 5},
				{"type": "resource", "resource": "file:///x"},
				{"type": "resource"},
				{"type": ["resource_link"], "uri": "file:///x"},
				"resource_link"
			], "contents": [{"uri": null}, "x"], "messages": [{"role": "user"}, 7]}`,
			wantChanged: false,
		},
		{
			name:        "scalar",
			in:          `"file:///x"`,
			want:        `"file:///x"`,
			wantChanged: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decode(t, tt.in)
			changed := RewriteContentURIs(v, prefixFiles)
			if changed != tt.wantChanged {
				t.Errorf("RewriteContentURIs() = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(decode(t, tt.want), v); diff != "" {
				t.Errorf("rewritten value (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRewriteContentURIsIdentity(t *testing.T) {
	in := `{"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]}`
	v := decode(t, in)
	if RewriteContentURIs(v, func(s string) string { return s }) {
		t.Errorf("RewriteContentURIs() with the identity = true, want false")
	}
	if diff := cmp.Diff(decode(t, in), v); diff != "" {
		t.Errorf("value changed (-want +got):\n%s", diff)
	}
}

func TestMayContainURIs(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want bool
	}{
		{name: "empty", raw: ``, want: false},
		{name: "text only", raw: `{"content":[{"type":"text","text":"hello"}],"isError":false}`, want: false},
		{name: "resource word in text", raw: `{"content":[{"type":"text","text":"a resource, resources"}]}`, want: false},
		{name: "quoted resource inside text", raw: `{"content":[{"type":"text","text":"type is \"resource\""}]}`, want: false},
		{name: "go html escapes", raw: `{"content":[{"type":"text","text":"\u003cb\u003e \u0026 \u2028"}]}`, want: false},
		{name: "resource_link", raw: `{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`, want: true},
		{name: "embedded", raw: `{"content":[{"type":"resource","resource":{"uri":"file:///a","text":""}}]}`, want: true},
		{name: "spaces around", raw: `{"type" : "resource" , "resource" : {}}`, want: true},
		{name: "at the start", raw: `resource_link`, want: true},
		{name: "escaped letter", raw: `{"content":[{"type":"\u0072esource_link","uri":"file:///a"}]}`, want: true},
		{name: "escaped underscore", raw: `{"content":[{"type":"resource\u005flink","uri":"file:///a"}]}`, want: true},
		{name: "escape cut at the end", raw: `"\u00`, want: false},
		{name: "word cut at the end", raw: `"resource`, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MayContainURIs([]byte(tt.raw)); got != tt.want {
				t.Errorf("MayContainURIs(%s) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

// FuzzMayContainURIs checks that MayContainURIs never says false for JSON
// that RewriteContentURIs would change.
func FuzzMayContainURIs(f *testing.F) {
	f.Add(`{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`)
	f.Add(`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"x"}}}]}`)
	f.Add(`{"contents":[{"uri":"file:///a","text":"resource"}]}`)
	f.Add(`{"content":[{"type":"\u0072esource","resource":{"uri":"x"}}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			return
		}
		// Read results ("contents") carry no marker: the hot path only
		// skips tools/call results, whose URIs are always in marked blocks.
		dropContents(v)
		if RewriteContentURIs(v, func(s string) string { return s + "!" }) && !MayContainURIs([]byte(raw)) {
			t.Errorf("MayContainURIs(%q) = false, but content URIs were rewritten", raw)
		}
	})
}

// dropContents deletes the "contents" keys that RewriteContentURIs looks at.
func dropContents(v any) {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "contents")
	case []any:
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				delete(m, "contents")
			}
		}
	}
}

func BenchmarkMayContainURIs(b *testing.B) {
	raw := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(`some ordinary tool output, \u003cb\u003e `, 2000) + `"}]}`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		MayContainURIs(raw)
	}
}

func TestFilterContentResources(t *testing.T) {
	in := `{
		"content": [
			{"type": "text", "text": "keep"},
			{"type": "resource_link", "uri": "file:///secret/a.txt", "name": "a.txt"},
			{"type": "resource", "resource": {"uri": "file:///secret/b.txt", "text": "SECRET"}},
			{"type": "resource", "resource": {"text": "NO URI"}},
			{"type": "resource", "resource": {"uri": "file:///public/c.txt", "text": "public"}}
		],
		"contents": [{"uri": "file:///secret/d.txt", "text": "SECRET"}, {"uri": "file:///public/e.txt", "text": "e"}],
		"messages": [{"role": "user", "content": {"type": "resource", "resource": {"uri": "file:///secret/f.txt", "blob": "U0VDUkVU"}}}],
		"structuredContent": {"content": [{"type": "resource", "resource": {"uri": "file:///secret/g.txt", "blob": "U0VDUkVU"}},
			{"type": "resource_link", "uri": "file:///public/h.txt"}], "n": 1}
	}`
	note := map[string]any{"type": "text", "text": WithheldNote}
	want := map[string]any{
		"content": []any{
			map[string]any{"type": "text", "text": "keep"},
			note, note, note,
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "p+file:///public/c.txt", "text": "public"}},
		},
		"contents":          []any{map[string]any{"uri": "p+file:///public/e.txt", "text": "e"}},
		"messages":          []any{map[string]any{"role": "user", "content": note}},
		"structuredContent": map[string]any{"content": []any{note, map[string]any{"type": "resource_link", "uri": "file:///public/h.txt"}}, "n": 1.0},
	}
	v := decode(t, in)
	changed := FilterContentResources(v, func(uri string) (string, bool) {
		if uri == "" || strings.HasPrefix(uri, "file:///secret/") {
			return "", false
		}
		return "p+" + uri, true
	})
	if !changed {
		t.Errorf("FilterContentResources() = false, want true")
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("filtered (-want +got):\n%s", diff)
	}
}
