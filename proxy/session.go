package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
)

// initialize handles a downstream initialize: the first one fixes the client
// capabilities offered to upstreams (Options.WaitForClient) and starts them; the
// result carries the summary of the servers (summary.go).
func (s *Server) initialize(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
		s.learnClient(p.Capabilities, false)
	}
	res, err := next(ctx, method, req)
	ir, ok := res.(*mcp.InitializeResult)
	if err != nil || !ok {
		return res, err
	}
	var client string
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil && p.ClientInfo != nil {
		client = p.ClientInfo.Name
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if text := s.instructions(ctx, ss, client); text != "" {
		out := *ir
		out.Instructions = text
		return &out, nil
	}
	return res, nil
}

// learnClient records, once, the capabilities of the first downstream client
// (its initialize, or its first modern request) as those offered to upstreams,
// and its era (a server that speaks both is spoken to in it), and lets them
// start (Options.WaitForClient; a no-op without it).
func (s *Server) learnClient(caps *mcp.ClientCapabilities, modern bool) {
	if !s.opts.WaitForClient {
		return
	}
	s.clientOnce.Do(func() {
		s.clientModern.Store(modern)
		s.setClientCaps(caps)
		close(s.clientUp)
	})
}

// sessionVersion is the protocol version negotiated with a downstream
// session: the client's if the proxy supports it, else the latest.
func sessionVersion(sess mcp.Session) string {
	ss, ok := sess.(*mcp.ServerSession)
	if !ok || ss == nil {
		return era.LegacyVersions[0]
	}
	ip := ss.InitializeParams()
	if ip == nil {
		return era.LegacyVersions[0]
	}
	if slices.Contains(era.Versions, ip.ProtocolVersion) {
		return ip.ProtocolVersion
	}
	return era.LegacyVersions[0]
}

// adaptToolList removes from tool definitions the fields the session's
// protocol version lacks (title, outputSchema and icons before 2025-06-18 /
// 2025-11-25; annotations before 2025-03-26). Tools are copied, never
// modified: the registered definitions are shared by every session.
func adaptToolList(res *mcp.ListToolsResult, version string) *mcp.ListToolsResult {
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
	markServerInfo   = []byte(`"` + era.KeyServerInfo + `"`)
	markStructured   = []byte(`"structuredContent"`)
	markResourceLink = []byte(`"resource_link"`)
)

// legacyResultRaw takes out of a raw result what only 2026-07-28 results
// carry, for a client of the initialize era: resultType "complete" and the
// server's identity in _meta (a modern upstream sends both). A result
// without them is returned as it is, byte for byte.
func legacyResultRaw(raw json.RawMessage) json.RawMessage {
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
			if _, has := mm[era.KeyServerInfo]; has {
				delete(mm, era.KeyServerInfo)
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

// legacyResult is legacyResultRaw for the typed results the proxy relays
// from upstreams on the SDK path (a read, a prompt): they are re-encoded only
// when they carry something to take out.
func legacyResult(res mcp.Result) mcp.Result {
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
	stripped := legacyResultRaw(b)
	if bytes.Equal(stripped, b) {
		return r
	}
	out := P(new(R))
	if err := json.Unmarshal(stripped, out); err != nil {
		return r
	}
	return out
}

// adaptCallResult rewrites a raw tools/call result for a session whose
// protocol version predates structured output and resource links
// (2025-06-18): structuredContent is dropped, with its JSON added as a text
// block if the result has no text, and resource links become text blocks.
func adaptCallResult(raw json.RawMessage, version string) json.RawMessage {
	if version < era.Version {
		raw = legacyResultRaw(raw)
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
