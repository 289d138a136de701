package era

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The results a client gets in its era: what the proxy relays or makes is
// era-neutral until it leaves at a face, where these take out what the
// client's protocol version lacks (the initialize era) or add what 2026-07-28
// results carry (resultType, Manifold's serverInfo).

// SessionVersion is the protocol version negotiated with a downstream
// session: the client's if the proxy supports it, else the latest.
func SessionVersion(sess mcp.Session) string {
	ss, ok := sess.(*mcp.ServerSession)
	if !ok || ss == nil {
		return LegacyVersions[0]
	}
	ip := ss.InitializeParams()
	if ip == nil {
		return LegacyVersions[0]
	}
	if slices.Contains(Versions, ip.ProtocolVersion) {
		return ip.ProtocolVersion
	}
	return LegacyVersions[0]
}

// ToolList returns a tools/list answer for a client of version: for the
// initialize era without the fields its version lacks (AdaptToolList), for
// 2026-07-28 as modern makes it (its schemas in JSON Schema 2020-12: the
// catalog keeps their translation).
func ToolList(res *mcp.ListToolsResult, version string, modern func(*mcp.ListToolsResult) *mcp.ListToolsResult) *mcp.ListToolsResult {
	if version < Version {
		return AdaptToolList(res, version)
	}
	return modern(res)
}

// AdaptToolList removes from tool definitions the fields the session's
// protocol version lacks (title, outputSchema and icons before 2025-06-18 /
// 2025-11-25; annotations before 2025-03-26). Tools are copied, never
// modified: the registered definitions are shared by every session.
func AdaptToolList(res *mcp.ListToolsResult, version string) *mcp.ListToolsResult {
	if version >= "2025-11-25" {
		return res
	}
	out := *res
	out.Tools = make([]*mcp.Tool, len(res.Tools))
	for i, t := range res.Tools {
		c := *t
		c.Icons = nil
		if version < "2025-06-18" {
			if c.Title != "" && c.Annotations != nil && c.Annotations.Title == "" {
				a := *c.Annotations
				a.Title = c.Title
				c.Annotations = &a
			}
			c.Title = ""
			c.OutputSchema = nil
		}
		if version < "2025-03-26" {
			c.Annotations = nil
		}
		out.Tools[i] = &c
	}
	return &out
}

var (
	markResultType   = []byte(`"resultType"`)
	markServerInfo   = []byte(`"` + KeyServerInfo + `"`)
	markStructured   = []byte(`"structuredContent"`)
	markResourceLink = []byte(`"resource_link"`)
)

// LegacyResultRaw takes out of a raw result what only 2026-07-28 results
// carry, for a client of the initialize era: resultType "complete" and the
// server's identity in _meta (a modern upstream sends both). A result
// without them is returned as it is, byte for byte.
func LegacyResultRaw(raw json.RawMessage) json.RawMessage {
	if !jsonscan.Contains(raw, markResultType) && !jsonscan.Contains(raw, markServerInfo) {
		return raw
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw
	}
	changed := false
	if rt, ok := m["resultType"]; ok && string(bytes.TrimSpace(rt)) == `"complete"` {
		delete(m, "resultType")
		changed = true
	}
	if meta, ok := m["_meta"]; ok {
		var mm map[string]json.RawMessage
		if json.Unmarshal(meta, &mm) == nil {
			if _, has := mm[KeyServerInfo]; has {
				delete(mm, KeyServerInfo)
				changed = true
				if len(mm) == 0 {
					delete(m, "_meta")
				} else if b, err := json.Marshal(mm); err == nil {
					m["_meta"] = b
				}
			}
		}
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// LegacyResult is LegacyResultRaw for the typed results the proxy relays
// from upstreams on the SDK path (a read, a prompt): they are re-encoded only
// when they carry something to take out.
func LegacyResult(res mcp.Result) mcp.Result {
	switch r := res.(type) {
	case *mcp.ReadResourceResult:
		return relegacy(r)
	case *mcp.GetPromptResult:
		return relegacy(r)
	case *mcp.CallToolResult:
		return relegacy(r)
	}
	return res
}

func relegacy[R any, P interface {
	*R
	mcp.Result
}](r P) mcp.Result {
	if r == nil {
		return r
	}
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	stripped := LegacyResultRaw(b)
	if bytes.Equal(stripped, b) {
		return r
	}
	out := P(new(R))
	if err := json.Unmarshal(stripped, out); err != nil {
		return r
	}
	return out
}

// AdaptCallResult rewrites a raw tools/call result for a session whose
// protocol version predates structured output and resource links
// (2025-06-18): structuredContent is dropped, with its JSON added as a text
// block if the result has no text, and resource links become text blocks.
func AdaptCallResult(raw json.RawMessage, version string) json.RawMessage {
	if version < Version {
		raw = LegacyResultRaw(raw)
	}
	if version >= "2025-06-18" || (!jsonscan.Contains(raw, markStructured) && !jsonscan.Contains(raw, markResourceLink)) {
		return raw
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw
	}
	var content []map[string]any
	if err := json.Unmarshal(m["content"], &content); err != nil && len(m["content"]) > 0 {
		return raw
	}
	hasText := false
	for i, c := range content {
		switch c["type"] {
		case "text":
			hasText = true
		case "resource_link":
			text := fmt.Sprintf("Resource link: %v", c["uri"])
			if name, ok := c["name"].(string); ok && name != "" {
				text += " (" + name + ")"
			}
			content[i] = map[string]any{"type": "text", "text": text}
		}
	}
	if sc, ok := m["structuredContent"]; ok {
		delete(m, "structuredContent")
		if !hasText {
			content = append(content, map[string]any{"type": "text", "text": string(sc)})
		}
	}
	if content == nil {
		content = []map[string]any{}
	}
	c, err := json.Marshal(content)
	if err != nil {
		return raw
	}
	m["content"] = c
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// ModernResult finishes a result for a modern request: the SDK adds
// resultType and the server's identity (_meta serverInfo) but keeps one that
// is already there, so an upstream's own identity is taken out first: the
// client talks to Manifold.
func ModernResult(res mcp.Result, serverInfo []byte) mcp.Result {
	if res == nil {
		return res
	}
	if m := res.GetMeta(); m != nil {
		if _, ok := m[KeyServerInfo]; ok {
			out := maps.Clone(m)
			delete(out, KeyServerInfo)
			res.SetMeta(out)
		}
	}
	// The SDK sets resultType only on the results of its own tool and
	// resource handlers; a call or read that the proxy answered is given it
	// here, as the lean path does (CallResult): through the wire form,
	// the only way to set it.
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if !r.NeedsInput() {
			return completed(r, serverInfo)
		}
	case *mcp.ReadResourceResult:
		if !r.NeedsInput() {
			return completed(r, serverInfo)
		}
	}
	return res
}

// completed returns r with resultType "complete" (and Manifold's
// serverInfo), or r itself if it cannot be re-encoded.
func completed[R any, P interface {
	*R
	mcp.Result
}](r P, serverInfo []byte) mcp.Result {
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	out := P(new(R))
	if err := json.Unmarshal(CallResult(b, serverInfo), out); err != nil {
		return r
	}
	return out
}
