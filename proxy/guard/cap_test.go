package guard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

// TestCapResult checks that max_result_bytes bounds the whole result, every
// member counted: big _meta, unknown members and text full of characters
// that grow when encoded are cut too, and the note says what was left out.
func TestCapResult(t *testing.T) {
	const max = 10_000
	d := policy.Decision{Visible: true, Limits: policy.Limits{MaxResultBytes: max, MaxResultBytesSource: "policy/limits.toml:3"}}
	text := func(s string) string { return `{"type":"text","text":` + mustJSON(t, s) + `}` }
	big := strings.Repeat("x", 1<<20)
	tests := []struct {
		name       string
		raw        string
		wantCut    bool
		wantKeys   []string // top-level members of the result
		wantBlocks int      // content blocks, the note included
		wantInNote []string
	}{
		{
			name:     "small result unchanged",
			raw:      `{"content":[` + text("hi") + `],"_meta":{"a":1},"extra":true}`,
			wantKeys: []string{"_meta", "content", "extra"},
		},
		{
			name: "long text cut", raw: `{"content":[` + text(big) + `]}`, wantCut: true,
			wantKeys: []string{"content"}, wantBlocks: 2, wantInNote: []string{"max_result_bytes = 10000", "policy/limits.toml:3"},
		},
		{
			name: "big _meta left out", raw: `{"content":[` + text("hi") + `],"_meta":{"pad":"` + big + `"}}`, wantCut: true,
			wantKeys: []string{"content"}, wantBlocks: 2, wantInNote: []string{"Left out as well: _meta."},
		},
		{
			name: "big unknown member left out", raw: `{"unknownPadding":"` + big + `","content":[` + text("hi") + `],"isError":true}`, wantCut: true,
			wantKeys: []string{"content", "isError"}, wantBlocks: 2, wantInNote: []string{"Left out as well: unknownPadding."},
		},
		{
			name: "isError that is not a boolean left out", raw: `{"content":[` + text("hi") + `],"isError":"` + big + `"}`, wantCut: true,
			wantKeys: []string{"content"}, wantBlocks: 2,
		},
		{
			name: "text that grows when encoded", raw: `{"content":[` + text(strings.Repeat("<\u2028\"", 100_000)) + `]}`, wantCut: true,
			wantKeys: []string{"content"}, wantBlocks: 2,
		},
		{
			name: "structuredContent and a big second block left out", raw: `{"content":[` + text("hi") + `,{"type":"image","data":"` + big + `","mimeType":"image/png"}],"structuredContent":{"a":"` + big + `"}}`, wantCut: true,
			wantKeys: []string{"content"}, wantBlocks: 2, wantInNote: []string{"Left out as well: structuredContent."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, cut := capResult(json.RawMessage(tt.raw), max, d)
			if cut != tt.wantCut {
				t.Fatalf("cut = %v, want %v", cut, tt.wantCut)
			}
			if !cut {
				if string(out) != tt.raw {
					t.Errorf("result changed although under the cap")
				}
				return
			}
			if len(out) > max {
				t.Errorf("cut result is %d bytes, over max_result_bytes = %d", len(out), max)
			}
			var res map[string]json.RawMessage
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("cut result is not a JSON object: %v", err)
			}
			var keys []string
			for k := range res {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if diff := cmp.Diff(tt.wantKeys, keys); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			var blocks []map[string]any
			if err := json.Unmarshal(res["content"], &blocks); err != nil {
				t.Fatalf("content: %v", err)
			}
			if len(blocks) != tt.wantBlocks {
				t.Fatalf("%d content blocks, want %d", len(blocks), tt.wantBlocks)
			}
			note, _ := blocks[len(blocks)-1]["text"].(string)
			for _, s := range append(tt.wantInNote, "this result was cut") {
				if !strings.Contains(note, s) {
					t.Errorf("note %q does not contain %q", note, s)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCapResultSmallMax: a max_result_bytes far below the long note still
// shows as much of the text as fits, and the whole result fits in max.
func TestCapResultSmallMax(t *testing.T) {
	long := strings.Repeat("abcdefghij", 500)
	raw := json.RawMessage(`{"content":[{"type":"text","text":"` + long + `"}]}`)
	for _, max := range []int{200, 300, 511, 800, 1500} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			d := policy.Decision{Visible: true, Limits: policy.Limits{MaxResultBytes: max, MaxResultBytesSource: "policy/limits.toml:3"}}
			out, cut := capResult(raw, max, d)
			if !cut {
				t.Fatal("not cut")
			}
			if len(out) > max {
				t.Errorf("cut result has %d bytes, over max %d: %s", len(out), max, out)
			}
			var res struct {
				Content []struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 2 {
				t.Fatalf("cut result %s: %v, want a text block and the note", out, err)
			}
			shown := res.Content[0].Text
			if len(shown) < max/10 || !strings.HasPrefix(long, shown) {
				t.Errorf("%d bytes of the text shown under max %d, want its start and at least %d bytes: %q", len(shown), max, max/10, shown)
			}
			if note := res.Content[1].Text; !strings.Contains(note, fmt.Sprintf("max_result_bytes = %d", max)) || !strings.Contains(note, "policy/limits.toml:3") {
				t.Errorf("note %q does not name the limit and its source", note)
			}
		})
	}
}
