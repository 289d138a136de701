package proxy

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// This file makes the policy's decisions per identity (who-rules, issue 15).
// The catalog is built on what someone may see (policy.Widest) and that is
// what the SDK holds; each list answer is then narrowed to what the asking
// identity sees, and each call, get and read is decided for it, by the same
// catalog.decision, so that lists and calls never disagree. Without
// who-rules nothing here changes a thing: every decision is the one the
// catalog was built on.

// decision is the one decision of a catalog item (key "tool\x00NAME",
// "prompt\x00NAME", "resource\x00URI" or "template\x00TEMPLATE") for id:
// what lists, calls, search and explain all use.
func (c *catalog) decision(key string, id policy.Identity) policy.Decision {
	d := c.decisions[key]
	if !c.who || !d.Visible {
		return d // the same for everyone, or hidden for everyone (or held by the pin check)
	}
	it, ok := c.items[key]
	if !ok {
		return policy.Decision{Rule: "catalog", Reason: "not in the catalog"}
	}
	it.Who = id
	return c.rules.Decide(it)
}

// view is what one identity sees of a catalog: the keys of the items that
// are hidden for it.
type view struct {
	hidden map[string]bool

	metaOnce sync.Once
	meta     map[string]*mcp.Tool // the search surface's meta-tools as this identity sees them
}

// maxViews bounds the views a catalog keeps (each distinct identity that
// lists makes one); past it, views are computed per list.
const maxViews = 1024

// viewOf returns what id sees of c, or nil when c is the same for everyone.
func (c *catalog) viewOf(id session.Identity) *view {
	if !c.who {
		return nil
	}
	k := id.Key()
	if v, ok := c.views.Load(k); ok {
		return v.(*view)
	}
	pid := id.Policy()
	v := &view{hidden: map[string]bool{}}
	for key := range c.items {
		if !c.decision(key, pid).Visible {
			v.hidden[key] = true
		}
	}
	if c.nviews.Add(1) <= maxViews {
		actual, _ := c.views.LoadOrStore(k, v)
		v = actual.(*view)
	}
	return v
}

// shows reports whether the item key is in the view; an item the catalog
// does not know (a registry a step ahead of it) is not, so a list never
// shows what was not decided.
func (c *catalog) shows(v *view, key string) bool {
	if v == nil {
		return true
	}
	_, known := c.items[key]
	return known && !v.hidden[key]
}

// narrowList returns the items of list that v shows, list itself when it
// shows them all.
func narrowList[T any](c *catalog, v *view, list []*T, key func(*T) string) []*T {
	if v == nil {
		return list
	}
	var out []*T
	for i, it := range list {
		if it == nil || !c.shows(v, key(it)) {
			if out == nil {
				out = slices.Clone(list[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, it)
		}
	}
	if out == nil {
		return list
	}
	return out
}

// narrowResult narrows a list answer (tools, prompts, resources, templates)
// to what the identity of ctx sees of the current catalog. The search
// surface's meta-tools are everyone's.
func (s *Server) narrowResult(ctx context.Context, req mcp.Request, res mcp.Result) mcp.Result {
	c := s.catalog.Load()
	if !c.who {
		return res
	}
	v := c.viewOf(session.RequestIdentity(ctx, req))
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		out := *r
		out.Tools = keepMeta(c, v, r.Tools)
		return &out
	case *mcp.ListPromptsResult:
		out := *r
		out.Prompts = narrowList(c, v, r.Prompts, func(p *mcp.Prompt) string { return "prompt\x00" + p.Name })
		return &out
	case *mcp.ListResourcesResult:
		out := *r
		out.Resources = narrowList(c, v, r.Resources, func(x *mcp.Resource) string { return "resource\x00" + x.URI })
		return &out
	case *mcp.ListResourceTemplatesResult:
		out := *r
		out.ResourceTemplates = narrowList(c, v, r.ResourceTemplates, func(x *mcp.ResourceTemplate) string { return "template\x00" + x.URITemplate })
		return &out
	}
	return res
}

// keepMeta is the tools of a list that v shows, the search surface's
// meta-tools included.
func keepMeta(c *catalog, v *view, tools []*mcp.Tool) []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		if _, own := c.toolDefs[t.Name]; !own && slices.Contains(metaTools, t.Name) {
			if m := c.metaFor(v)[t.Name]; m != nil {
				t = m // its description names only the servers the caller sees
			}
			out = append(out, t)
			continue
		}
		if c.shows(v, "tool\x00"+t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// searchDepth is how many hits a search asks the index for to answer with
// limit: when some tools may be hidden for the caller, all of them, so that
// hidden hits do not crowd out visible ones.
func (c *catalog) searchDepth(limit int) int {
	if c.who {
		return max(limit, len(c.toolDefs))
	}
	return limit
}

// metaFor returns the search surface's meta-tools as v sees them: search_tools
// tells the number of tools and the servers the caller can find, never those
// hidden from it. The definitions are shared by every view that sees the same
// (so that the modern list cache, keyed by definition, stays bounded).
func (c *catalog) metaFor(v *view) map[string]*mcp.Tool {
	v.metaOnce.Do(func() {
		n := 0
		servers := map[string]bool{}
		for name := range c.toolDefs {
			if !c.shows(v, "tool\x00"+name) {
				continue
			}
			n++
			if c.tools != nil {
				if e, ok := c.tools.Lookup(name); ok {
					servers[e.Server] = true
				}
			}
		}
		list := slices.Sorted(maps.Keys(servers))
		key := strconv.Itoa(n) + "\x00" + strings.Join(list, "\x00")
		if m, ok := c.metaDefs.Load(key); ok {
			v.meta = m.(map[string]*mcp.Tool)
			return
		}
		m := map[string]*mcp.Tool{}
		for _, d := range metaToolDefs(n, list) {
			m[d.Name] = d
		}
		actual, _ := c.metaDefs.LoadOrStore(key, m)
		v.meta = actual.(map[string]*mcp.Tool)
	})
	return v.meta
}
