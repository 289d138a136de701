package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
	}{
		{name: "object kept", in: map[string]any{"type": "object", "required": []any{"a"}}, want: map[string]any{"type": "object", "required": []any{"a"}}},
		{name: "missing type added", in: map[string]any{"properties": map[string]any{}}, want: map[string]any{"type": "object", "properties": map[string]any{}}},
		{name: "nil", in: nil, want: map[string]any{"type": "object"}},
		{name: "not an object", in: []any{1}, want: map[string]any{"type": "object"}},
		{name: "draft-07 schema kept", in: map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
			want: map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, normalizeSchema(tt.in)); diff != "" {
				t.Errorf("normalizeSchema (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeSchemaDoesNotMutateInput(t *testing.T) {
	in := map[string]any{"properties": map[string]any{}}
	_ = normalizeSchema(in)
	if _, ok := in["type"]; ok {
		t.Fatal("normalizeSchema wrote into the upstream's schema map")
	}
}

func TestTemplateMatches(t *testing.T) {
	tests := []struct {
		tmpl, uri string
		want      bool
	}{
		{"file:///{path}", "file:///tmp/a", true},
		{"file:///{path}", "http://x", false},
		{"{scheme}://x", "a://x", false}, // no literal head: cannot claim ownership
		{"test://static/resource/{id}", "test://static/resource/1", true},
	}
	for _, tt := range tests {
		if got := templateMatches(tt.tmpl, tt.uri); got != tt.want {
			t.Errorf("templateMatches(%q, %q) = %v, want %v", tt.tmpl, tt.uri, got, tt.want)
		}
	}
}
