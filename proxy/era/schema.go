package era

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Schema2020 is the dialect URI of JSON Schema 2020-12, the only dialect a
// 2026-07-28 client is promised for tool input and output schemas.
const Schema2020 = "https://json-schema.org/draft/2020-12/schema"

// Schema rewrites a JSON schema (as decoded from JSON: maps, slices,
// strings, float64s, bools) written for an older draft into JSON Schema
// 2020-12:
//
//   - definitions becomes $defs, and local $refs into it follow;
//   - draft-04 boolean exclusiveMinimum/exclusiveMaximum become the number
//     they qualify (minimum/maximum is then dropped);
//   - an array-form items becomes prefixItems, and additionalItems becomes
//     items (additionalItems beside a single-schema items, which draft 7
//     ignores, is dropped);
//   - dependencies becomes dependentRequired (array values) and
//     dependentSchemas (schema values);
//   - a draft $schema URI becomes the 2020-12 one at the root and is dropped
//     in subschemas.
//
// What it cannot translate it leaves as it is, and says so in problems (one
// line each, with the JSON pointer of the place). The input is never
// modified: the result shares no map or slice it changed.
func Schema(schema any) (out any, problems []string) {
	r := rewriter{}
	out = r.schema(schema, "", true)
	return out, r.problems
}

type rewriter struct {
	problems []string
}

func (r *rewriter) problem(at, format string, args ...any) {
	if at == "" {
		at = "/"
	}
	r.problems = append(r.problems, at+": "+fmt.Sprintf(format, args...))
}

// schemaMapKeys hold a map of name -> subschema; schemaKeys one subschema;
// schemaListKeys a list of subschemas.
var (
	schemaMapKeys  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaKeys     = []string{"additionalProperties", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "items", "additionalItems"}
	schemaListKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// schema rewrites the subschema s found at pointer at.
func (r *rewriter) schema(s any, at string, root bool) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // a boolean schema, or not a schema at all
	}
	out := maps.Clone(m)

	// $schema: the dialect of the whole document, declared at its root.
	if v, ok := out["$schema"]; ok {
		uri, _ := v.(string)
		switch {
		case isDraftURI(uri) && root:
			out["$schema"] = Schema2020
		case isDraftURI(uri):
			delete(out, "$schema")
		case uri == Schema2020 || strings.TrimSuffix(uri, "#") == Schema2020:
		default:
			r.problem(at, "$schema %v is not a known draft; left as it is", v)
		}
	}

	// definitions -> $defs.
	if defs, ok := out["definitions"]; ok {
		dm, isMap := defs.(map[string]any)
		existing, hasDefs := out["$defs"].(map[string]any)
		switch {
		case !isMap:
			r.problem(at, "definitions is not an object; left as it is")
		case hasDefs && overlaps(dm, existing):
			r.problem(at, "definitions and $defs both define %s; left as they are", strings.Join(overlap(dm, existing), ", "))
		default:
			merged := maps.Clone(existing)
			if merged == nil {
				merged = make(map[string]any, len(dm))
			}
			maps.Copy(merged, dm)
			out["$defs"] = merged
			delete(out, "definitions")
		}
	}

	// $ref into definitions.
	if ref, ok := out["$ref"].(string); ok {
		out["$ref"] = rewriteRef(ref)
	}

	// Draft-04 boolean exclusive bounds.
	for _, b := range []struct{ excl, bound string }{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		v, ok := out[b.excl].(bool)
		if !ok {
			continue
		}
		bound, hasBound := out[b.bound]
		switch {
		case !v:
			delete(out, b.excl) // false: the bound is inclusive, as 2020-12 reads it
		case !hasBound:
			delete(out, b.excl) // true without a bound qualifies nothing
		case isNumber(bound):
			out[b.excl] = bound
			delete(out, b.bound)
		default:
			r.problem(at+"/"+b.excl, "true with a %s that is not a number; left as it is", b.bound)
		}
	}

	// Array-form items -> prefixItems; additionalItems -> items.
	if items, ok := out["items"].([]any); ok {
		if _, has := out["prefixItems"]; has {
			r.problem(at+"/items", "an array of schemas beside prefixItems; left as it is")
		} else {
			out["prefixItems"] = items
			delete(out, "items")
			if add, ok := out["additionalItems"]; ok {
				out["items"] = add
				delete(out, "additionalItems")
			}
		}
	} else if _, ok := out["additionalItems"]; ok {
		if _, single := out["items"]; single {
			delete(out, "additionalItems") // ignored beside a single-schema items
		}
	}

	// dependencies -> dependentRequired / dependentSchemas.
	if deps, ok := out["dependencies"]; ok {
		if dm, ok := deps.(map[string]any); ok {
			req, _ := out["dependentRequired"].(map[string]any)
			sch, _ := out["dependentSchemas"].(map[string]any)
			req, sch = maps.Clone(req), maps.Clone(sch)
			left := map[string]any{}
			for _, k := range slices.Sorted(maps.Keys(dm)) {
				switch v := dm[k].(type) {
				case []any:
					if req == nil {
						req = map[string]any{}
					}
					if _, dup := req[k]; dup {
						left[k] = v
						continue
					}
					req[k] = v
				case map[string]any, bool:
					if sch == nil {
						sch = map[string]any{}
					}
					if _, dup := sch[k]; dup {
						left[k] = v
						continue
					}
					sch[k] = v
				default:
					left[k] = v
				}
			}
			if req != nil {
				out["dependentRequired"] = req
			}
			if sch != nil {
				out["dependentSchemas"] = sch
			}
			delete(out, "dependencies")
			if len(left) > 0 {
				out["dependencies"] = left
				r.problem(at+"/dependencies", "%s could not be translated; left as they are", strings.Join(slices.Sorted(maps.Keys(left)), ", "))
			}
		} else {
			r.problem(at+"/dependencies", "not an object; left as it is")
		}
	}

	// Subschemas.
	for _, k := range schemaMapKeys {
		sub, ok := out[k].(map[string]any)
		if !ok {
			continue
		}
		next := make(map[string]any, len(sub))
		for name, v := range sub {
			next[name] = r.schema(v, at+"/"+k+"/"+escapePointer(name), false)
		}
		out[k] = next
	}
	for _, k := range schemaKeys {
		if v, ok := out[k]; ok {
			out[k] = r.schema(v, at+"/"+k, false)
		}
	}
	for _, k := range schemaListKeys {
		list, ok := out[k].([]any)
		if !ok {
			continue
		}
		next := make([]any, len(list))
		for i, v := range list {
			next[i] = r.schema(v, fmt.Sprintf("%s/%s/%d", at, k, i), false)
		}
		out[k] = next
	}
	if left, ok := out["dependencies"].(map[string]any); ok {
		next := make(map[string]any, len(left))
		for name, v := range left {
			next[name] = r.schema(v, at+"/dependencies/"+escapePointer(name), false)
		}
		out["dependencies"] = next
	}
	return out
}

// isDraftURI reports whether uri names a JSON Schema draft before 2020-12.
func isDraftURI(uri string) bool {
	u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(uri, "http://"), "https://"), "#")
	u = strings.TrimSuffix(u, "/schema")
	switch u {
	case "json-schema.org/schema", "json-schema.org/draft-03", "json-schema.org/draft-04",
		"json-schema.org/draft-06", "json-schema.org/draft-07", "json-schema.org/draft/2019-09":
		return true
	}
	return false
}

// rewriteRef follows definitions -> $defs in a local JSON pointer $ref: a
// "definitions" segment in a keyword position (not a property's name)
// becomes "$defs".
func rewriteRef(ref string) string {
	if !strings.HasPrefix(ref, "#/") {
		return ref
	}
	segs := strings.Split(ref[2:], "/")
	changed := false
	for i, s := range segs {
		if s != "definitions" {
			continue
		}
		if i > 0 && slices.Contains(schemaMapKeys, segs[i-1]) && !isNameAfterName(segs, i-1) {
			continue // a property (or definition) named "definitions"
		}
		segs[i] = "$defs"
		changed = true
	}
	if !changed {
		return ref
	}
	return "#/" + strings.Join(segs, "/")
}

// isNameAfterName reports whether segs[i] is itself a name inside a map of
// subschemas (so the segment after it is a keyword again).
func isNameAfterName(segs []string, i int) bool {
	return i > 0 && slices.Contains(schemaMapKeys, segs[i-1]) && !isNameAfterName(segs, i-1)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, float32, int, int64, int32, uint, uint64, uint32:
		return true
	}
	return false
}

func overlaps(a, b map[string]any) bool { return len(overlap(a, b)) > 0 }

func overlap(a, b map[string]any) []string {
	var out []string
	for k := range a {
		if _, ok := b[k]; ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
