package proxy

import (
	"context"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// This file narrows list answers per identity (who-rules, issue 15) by the
// catalog's views (catalog.Snapshot.ViewOf, proxy/catalog/who.go), and gives
// each identity the search surface's meta-tools as it sees them.

// narrowResult narrows a list answer (tools, prompts, resources, templates)
// to what the identity of ctx sees of the current catalog. The search
// surface's meta-tools are everyone's.
func (s *Server) narrowResult(ctx context.Context, req mcp.Request, res mcp.Result) mcp.Result {
	c := s.catalog.Load()
	if !c.Who {
		return res
	}
	id := session.RequestIdentity(ctx, req)
	v := c.ViewOf(id.Key(), id.Policy())
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		out := *r
		out.Tools = keepMeta(c, v, r.Tools)
		return &out
	case *mcp.ListPromptsResult:
		out := *r
		out.Prompts = cat.NarrowList(c.Snapshot, v, r.Prompts, func(p *mcp.Prompt) string { return "prompt\x00" + p.Name })
		return &out
	case *mcp.ListResourcesResult:
		out := *r
		out.Resources = cat.NarrowList(c.Snapshot, v, r.Resources, func(x *mcp.Resource) string { return "resource\x00" + x.URI })
		return &out
	case *mcp.ListResourceTemplatesResult:
		out := *r
		out.ResourceTemplates = cat.NarrowList(c.Snapshot, v, r.ResourceTemplates, func(x *mcp.ResourceTemplate) string { return "template\x00" + x.URITemplate })
		return &out
	}
	return res
}

// keepMeta is the tools of a list that v shows, the search surface's
// meta-tools included.
func keepMeta(c *catalog, v *cat.View, tools []*mcp.Tool) []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		if _, own := c.ToolDefs[t.Name]; !own && slices.Contains(metaTools, t.Name) {
			if m := c.metaFor(v)[t.Name]; m != nil {
				t = m // its description names only the servers the caller sees
			}
			out = append(out, t)
			continue
		}
		if c.Shows(v, "tool\x00"+t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// metaFor returns the search surface's meta-tools as v sees them: search_tools
// tells the number of tools and the servers the caller can find, never those
// hidden from it. The definitions are shared by every view that sees the same
// (so that the modern list cache, keyed by definition, stays bounded).
func (c *catalog) metaFor(v *cat.View) map[string]*mcp.Tool {
	v.MetaOnce.Do(func() {
		n := 0
		servers := map[string]bool{}
		for name := range c.ToolDefs {
			if !c.Shows(v, "tool\x00"+name) {
				continue
			}
			n++
			if c.Tools != nil {
				if e, ok := c.Tools.Lookup(name); ok {
					servers[e.Server] = true
				}
			}
		}
		v.Meta = c.surf.MetaDefs(n, slices.Sorted(maps.Keys(servers)))
	})
	return v.Meta
}
