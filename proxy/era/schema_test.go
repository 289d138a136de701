package era

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func TestSchema(t *testing.T) {
	tests := []struct {
		name     string
		in, want string
		problems []string
	}{
		{name: "2020-12 unchanged", in: `{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
			want: `{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`},
		{name: "draft-07 $schema at the root", in: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
			want: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`},
		{name: "draft $schema in a subschema is dropped", in: `{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#","type":"string"}}}`,
			want: `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{name: "2019-09 $schema", in: `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`,
			want: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`},
		{name: "unknown $schema stays", in: `{"$schema":"https://example.com/my-dialect","type":"object"}`,
			want: `{"$schema":"https://example.com/my-dialect","type":"object"}`, problems: []string{"/: $schema https://example.com/my-dialect is not a known draft; left as it is"}},
		{name: "definitions and refs", in: `{"type":"object","definitions":{"n":{"type":"integer"},"o":{"type":"object","properties":{"k":{"$ref":"#/definitions/n"}}}},"properties":{"a":{"$ref":"#/definitions/o"},"b":{"items":{"$ref":"#/definitions/n"}}}}`,
			want: `{"type":"object","$defs":{"n":{"type":"integer"},"o":{"type":"object","properties":{"k":{"$ref":"#/$defs/n"}}}},"properties":{"a":{"$ref":"#/$defs/o"},"b":{"items":{"$ref":"#/$defs/n"}}}}`},
		{name: "a property named definitions keeps its ref", in: `{"type":"object","properties":{"definitions":{"type":"string"},"b":{"$ref":"#/properties/definitions"}}}`,
			want: `{"type":"object","properties":{"definitions":{"type":"string"},"b":{"$ref":"#/properties/definitions"}}}`},
		{name: "nested definitions in a ref", in: `{"type":"object","properties":{"p":{"definitions":{"x":{"type":"string"}}},"q":{"$ref":"#/properties/p/definitions/x"}}}`,
			want: `{"type":"object","properties":{"p":{"$defs":{"x":{"type":"string"}}},"q":{"$ref":"#/properties/p/$defs/x"}}}`},
		{name: "remote ref unchanged", in: `{"$ref":"https://example.com/s.json#/definitions/a"}`, want: `{"$ref":"https://example.com/s.json#/definitions/a"}`},
		{name: "definitions beside $defs merge", in: `{"definitions":{"a":{}},"$defs":{"b":{}}}`, want: `{"$defs":{"a":{},"b":{}}}`},
		{name: "definitions clashing with $defs stay", in: `{"definitions":{"a":{"type":"string"}},"$defs":{"a":{}}}`, want: `{"definitions":{"a":{"type":"string"}},"$defs":{"a":{}}}`,
			problems: []string{"/: definitions and $defs both define a; left as they are"}},
		{name: "exclusiveMinimum true", in: `{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true}`,
			want: `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10}`},
		{name: "exclusiveMinimum false", in: `{"type":"number","minimum":0,"exclusiveMinimum":false}`, want: `{"type":"number","minimum":0}`},
		{name: "exclusiveMaximum true without maximum", in: `{"type":"number","exclusiveMaximum":true}`, want: `{"type":"number"}`},
		{name: "numeric exclusive bounds unchanged", in: `{"type":"number","exclusiveMinimum":1}`, want: `{"type":"number","exclusiveMinimum":1}`},
		{name: "exclusiveMinimum true over a non-number", in: `{"minimum":"0","exclusiveMinimum":true}`, want: `{"minimum":"0","exclusiveMinimum":true}`,
			problems: []string{"/exclusiveMinimum: true with a minimum that is not a number; left as it is"}},
		{name: "tuple items", in: `{"type":"array","items":[{"type":"string"},{"type":"number"}],"additionalItems":false}`,
			want: `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`},
		{name: "tuple items without additionalItems", in: `{"type":"array","items":[{"type":"string"}]}`, want: `{"type":"array","prefixItems":[{"type":"string"}]}`},
		{name: "additionalItems beside one items schema is dropped", in: `{"type":"array","items":{"type":"string"},"additionalItems":false}`, want: `{"type":"array","items":{"type":"string"}}`},
		{name: "tuple items beside prefixItems stay", in: `{"items":[{}],"prefixItems":[{}]}`, want: `{"items":[{}],"prefixItems":[{}]}`,
			problems: []string{"/items: an array of schemas beside prefixItems; left as it is"}},
		{name: "dependencies", in: `{"type":"object","dependencies":{"a":["b","c"],"d":{"required":["e"]},"f":true}}`,
			want: `{"type":"object","dependentRequired":{"a":["b","c"]},"dependentSchemas":{"d":{"required":["e"]},"f":true}}`},
		{name: "dependencies of a bad kind", in: `{"dependencies":{"a":"b"}}`, want: `{"dependencies":{"a":"b"}}`,
			problems: []string{"/dependencies: a could not be translated; left as they are"}},
		{name: "deep in combinators", in: `{"anyOf":[{"definitions":{"x":{}},"$ref":"#/definitions/x"}],"not":{"items":[true]},"if":{"minimum":1,"exclusiveMinimum":true}}`,
			want: `{"anyOf":[{"$defs":{"x":{}},"$ref":"#/$defs/x"}],"not":{"prefixItems":[true]},"if":{"exclusiveMinimum":1}}`},
		{name: "problem pointers name the place", in: `{"properties":{"a/b":{"$schema":"urn:x"}}}`, want: `{"properties":{"a/b":{"$schema":"urn:x"}}}`,
			problems: []string{"/properties/a~1b: $schema urn:x is not a known draft; left as it is"}},
		{name: "boolean schema", in: `true`, want: `true`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := decode(t, tc.in)
			got, problems := Schema(in)
			if diff := cmp.Diff(decode(t, tc.want), got); diff != "" {
				t.Errorf("Schema(%s) (-want +got):\n%s", tc.in, diff)
			}
			if diff := cmp.Diff(tc.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(decode(t, tc.in), in); diff != "" {
				t.Errorf("Schema modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestStripMetaRaw(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info"}`, `{"progressToken":1}`},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, ``},
		{`{"traceparent":"00-x"}`, `{"traceparent":"00-x"}`},
		{`"not an object"`, `"not an object"`},
	}
	for _, tc := range tests {
		got := string(StripMetaRaw([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("StripMetaRaw(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestListCache(t *testing.T) {
	tests := []struct {
		narrowed, ready bool
		ttl             int
		scope           string
	}{
		{false, true, 60000, "public"},
		{true, true, 60000, "private"},
		{false, false, 0, "public"},
		{true, false, 0, "private"},
	}
	for _, tc := range tests {
		ttl, scope := ListCache(tc.narrowed, tc.ready)
		if ttl != tc.ttl || scope != tc.scope {
			t.Errorf("ListCache(narrowed %v, ready %v) = %d, %q; want %d, %q", tc.narrowed, tc.ready, ttl, scope, tc.ttl, tc.scope)
		}
	}
}

func TestDropCacheFields(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"ttlMs":0,"cacheScope":"public","resources":[{"uri":"a","ttlMs":5}]}`, `{"resources":[{"uri":"a","ttlMs":5}]}`},
		{`{"_meta":{"x":1},"ttlMs":60000,"cacheScope":"private","nextCursor":"c","tools":`, `{"_meta":{"x":1},"nextCursor":"c","tools":`},
		{`{"contents":[],"ttlMs":0,"cacheScope":"public"}`, `{"contents":[]}`},
		{`{"ttlMs":0}`, `{}`},
		{`{"contents":[{"text":"\"ttlMs\":1"}]}`, `{"contents":[{"text":"\"ttlMs\":1"}]}`},
		{`{"a":1}`, `{"a":1}`},
	} {
		if got := string(DropCacheFields([]byte(tt.in))); got != tt.want {
			t.Errorf("DropCacheFields(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
