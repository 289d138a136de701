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
	switch v := v.(type) {
	case map[string]any:
		return rewriteObject(v, rewrite)
	case []any:
		changed := false
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				changed = rewriteObject(m, rewrite) || changed
			}
		}
		return changed
	}
	return false
}

func rewriteObject(m map[string]any, rewrite func(string) string) bool {
	changed := rewriteBlock(m, rewrite)
	if c, ok := m["content"]; ok {
		changed = rewriteContent(c, rewrite) || changed
	}
	if cs, ok := m["contents"].([]any); ok {
		for _, c := range cs {
			if c, ok := c.(map[string]any); ok {
				changed = rewriteField(c, "uri", rewrite) || changed
			}
		}
	}
	if ms, ok := m["messages"].([]any); ok {
		for _, msg := range ms {
			if msg, ok := msg.(map[string]any); ok {
				changed = rewriteContent(msg["content"], rewrite) || changed
			}
		}
	}
	return changed
}

// rewriteContent rewrites a "content" value: one block or an array of them.
func rewriteContent(c any, rewrite func(string) string) bool {
	switch c := c.(type) {
	case map[string]any:
		return rewriteBlock(c, rewrite)
	case []any:
		changed := false
		for _, b := range c {
			if b, ok := b.(map[string]any); ok {
				changed = rewriteBlock(b, rewrite) || changed
			}
		}
		return changed
	}
	return false
}

func rewriteBlock(b map[string]any, rewrite func(string) string) bool {
	switch b["type"] {
	case "resource_link":
		return rewriteField(b, "uri", rewrite)
	case "resource":
		if r, ok := b["resource"].(map[string]any); ok {
			return rewriteField(r, "uri", rewrite)
		}
	}
	return false
}

func rewriteField(m map[string]any, key string, rewrite func(string) string) bool {
	old, ok := m[key].(string)
	if !ok {
		return false
	}
	s := rewrite(old)
	if s == old {
		return false
	}
	m[key] = s
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
