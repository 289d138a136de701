package naming

import "bytes"

// RewriteContentURIs rewrites, in place, the resource URIs of a decoded MCP
// message value (map[string]any and []any as produced by encoding/json). It
// looks only where the protocol puts resource URIs in content, and returns
// whether anything changed:
//
//   - a content block with "type":"resource_link": its "uri";
//   - a content block with "type":"resource": its "resource"."uri";
//   - "content", a single block or an array of blocks (tool results, sampling
//     results, messages);
//   - "contents"[i]."uri" (resources/read results);
//   - "messages"[i]."content", a single block or an array (prompts/get
//     results, sampling requests).
//
// v may be such a result or params object, a single block, or an array of
// blocks or messages. Anything else, notably "structuredContent" and
// "_meta", is left alone. Only string URIs are passed to rewrite.
func RewriteContentURIs(v any, rewrite func(string) string) bool {
	return FilterContentResources(v, func(uri string) (string, bool) { return rewrite(uri), true })
}

// WithheldNote is the text of the block that [FilterContentResources] puts
// in place of a resource it withholds.
const WithheldNote = "[manifold: a resource in this content was withheld by the proxy's resource policy; it cannot be read through this proxy]"

// FilterContentResources is [RewriteContentURIs] with a decision: filter
// returns the new URI of each resource link, embedded resource and read
// result entry, and whether it may be kept at all. A block that may not is
// replaced, in place, by a text block saying so ([WithheldNote]); a
// "contents" entry (of a resources/read result) is removed. Such blocks are
// also withheld anywhere inside "structuredContent" (whose URIs are not
// rewritten). Nothing of a withheld resource remains, neither its URI nor
// its text or blob.
func FilterContentResources(v any, filter func(uri string) (string, bool)) bool {
	switch v := v.(type) {
	case map[string]any:
		return filterObject(v, filter)
	case []any:
		changed := false
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				changed = filterObject(m, filter) || changed
			}
		}
		return changed
	}
	return false
}

func filterObject(m map[string]any, filter func(string) (string, bool)) bool {
	changed := filterBlock(m, filter)
	if c, ok := m["content"]; ok {
		changed = filterContent(c, filter) || changed
	}
	if cs, ok := m["contents"].([]any); ok {
		kept := cs[:0:0]
		for _, c := range cs {
			if c, ok := c.(map[string]any); ok {
				if u, isStr := c["uri"].(string); isStr {
					nu, keep := filter(u)
					if !keep {
						changed = true
						continue
					}
					if nu != u {
						c["uri"] = nu
						changed = true
					}
				}
			}
			kept = append(kept, c)
		}
		if len(kept) != len(cs) {
			m["contents"] = kept
		}
	}
	if ms, ok := m["messages"].([]any); ok {
		for _, msg := range ms {
			if msg, ok := msg.(map[string]any); ok {
				changed = filterContent(msg["content"], filter) || changed
			}
		}
	}
	if sc, ok := m["structuredContent"]; ok {
		changed = withholdDeep(sc, filter) || changed
	}
	return changed
}

// withholdDeep withholds, anywhere in v (a tool result's structuredContent,
// which servers often make a copy of the content), every resource link and
// embedded resource that filter refuses. The URIs of the others are left as
// they are: structured content is the tool's own data.
func withholdDeep(v any, filter func(string) (string, bool)) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		if t := v["type"]; t == "resource" || t == "resource_link" {
			holder := v
			if t == "resource" {
				holder, _ = v["resource"].(map[string]any)
			}
			if holder != nil {
				uri, _ := holder["uri"].(string)
				if _, keep := filter(uri); !keep {
					clear(v)
					v["type"], v["text"] = "text", WithheldNote
					return true
				}
			}
		}
		for _, e := range v {
			changed = withholdDeep(e, filter) || changed
		}
	case []any:
		for _, e := range v {
			changed = withholdDeep(e, filter) || changed
		}
	}
	return changed
}

// filterContent filters a "content" value: one block or an array of them.
func filterContent(c any, filter func(string) (string, bool)) bool {
	switch c := c.(type) {
	case map[string]any:
		return filterBlock(c, filter)
	case []any:
		changed := false
		for _, b := range c {
			if b, ok := b.(map[string]any); ok {
				changed = filterBlock(b, filter) || changed
			}
		}
		return changed
	}
	return false
}

func filterBlock(b map[string]any, filter func(string) (string, bool)) bool {
	var holder map[string]any // the map holding the URI
	switch b["type"] {
	case "resource_link":
		holder = b
	case "resource":
		holder, _ = b["resource"].(map[string]any)
	}
	if holder == nil {
		return false
	}
	old, ok := holder["uri"].(string)
	uri, keep := filter(old) // a missing or non-string URI is filtered as ""
	if !keep {
		clear(b)
		b["type"], b["text"] = "text", WithheldNote
		return true
	}
	if !ok || uri == old {
		return false
	}
	holder["uri"] = uri
	return true
}

var (
	resourceWord = []byte("resource")
	linkSuffix   = []byte("_link")
	unicodeEsc   = []byte(`\u00`)
)

// MayContainURIs reports, without decoding, whether raw JSON (a tools/call
// result) may hold content for [RewriteContentURIs]: a "resource_link" or
// "resource" marker. A false answer is certain, so the hot path can forward
// the bytes untouched; a true one may be wrong (the words inside text).
// JSON that spells a letter or "_" as a \u escape also answers true, since
// the markers could hide behind it.
func MayContainURIs(raw []byte) bool {
	for rest := raw; ; {
		i := bytes.Index(rest, resourceWord)
		if i < 0 {
			break
		}
		after := rest[i+len(resourceWord):]
		if bytes.HasPrefix(after, linkSuffix) || i > 0 && rest[i-1] == '"' && len(after) > 0 && after[0] == '"' {
			return true
		}
		rest = after
	}
	// The escapes of "_" and the letters are \u005f and \u0061…\u007a;
	// encoders escape <, >, & (\u003c…) and control characters, not these.
	for rest := raw; ; {
		i := bytes.Index(rest, unicodeEsc)
		if i < 0 {
			return false
		}
		rest = rest[i+len(unicodeEsc):]
		if len(rest) > 0 && '5' <= rest[0] && rest[0] <= '7' {
			return true
		}
	}
}
