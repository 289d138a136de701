package catalog

import (
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
)

// This file makes the policy's decisions per identity (who-rules, issue 15).
// The catalog is built on what someone may see (policy.Widest) and that is
// what the SDK holds; each list answer is then narrowed to what the asking
// identity sees, and each call, get and read is decided for it, by the same
// Snapshot.Decision, so that lists and calls never disagree. Without
// who-rules nothing here changes a thing: every decision is the one the
// catalog was built on.

// Decision is the one decision of a catalog item (key "tool\x00NAME",
// "prompt\x00NAME", "resource\x00URI" or "template\x00TEMPLATE") for id:
// what lists, calls, search and explain all use.
func (c *Snapshot) Decision(key string, id policy.Identity) policy.Decision {
	d := c.decisions[key]
	if !c.Who || !d.Visible {
		return d // the same for everyone, or hidden for everyone (or held by the pin check)
	}
	it, ok := c.items[key]
	if !ok {
		return policy.Decision{Rule: "catalog", Reason: "not in the catalog"}
	}
	it.Who = id
	return c.Rules.Decide(it)
}

// View is what one identity sees of a catalog: the keys of the items that
// are hidden for it.
type View struct {
	hidden map[string]bool

	// MetaOnce and Meta are the search surface's meta-tools as this
	// identity sees them, worked out by the surface at its first use.
	MetaOnce sync.Once
	Meta     map[string]*mcp.Tool
}

// maxViews bounds the views a catalog keeps (each distinct identity that
// lists makes one); past it, views are computed per list.
const maxViews = 1024

// ViewOf returns what the identity whose key is k (session.Identity.Key)
// and whose policy identity is pid sees of c, or nil when c is the same
// for everyone.
func (c *Snapshot) ViewOf(k string, pid policy.Identity) *View {
	if !c.Who {
		return nil
	}
	if v, ok := c.views.Load(k); ok {
		return v.(*View)
	}
	v := &View{hidden: map[string]bool{}}
	for key := range c.items {
		if !c.Decision(key, pid).Visible {
			v.hidden[key] = true
		}
	}
	if c.nviews.Add(1) <= maxViews {
		actual, _ := c.views.LoadOrStore(k, v)
		v = actual.(*View)
	}
	return v
}

// Shows reports whether the item key is in the view; an item the catalog
// does not know (a registry a step ahead of it) is not, so a list never
// shows what was not decided.
func (c *Snapshot) Shows(v *View, key string) bool {
	if v == nil {
		return true
	}
	_, known := c.items[key]
	return known && !v.hidden[key]
}

// KeptView reports whether c keeps v as the view of the identity whose
// key is k (ViewOf keeps at most maxViews of them).
func (c *Snapshot) KeptView(k string, v *View) bool {
	kept, ok := c.views.Load(k)
	return ok && kept == v
}

// NarrowList returns the items of list that v shows, list itself when it
// shows them all.
func NarrowList[T any](c *Snapshot, v *View, list []*T, key func(*T) string) []*T {
	if v == nil {
		return list
	}
	var out []*T
	for i, it := range list {
		if it == nil || !c.Shows(v, key(it)) {
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

// SearchDepth is how many hits a search asks the index for to answer with
// limit: when some tools may be hidden for the caller, all of them, so that
// hidden hits do not crowd out visible ones.
func (c *Snapshot) SearchDepth(limit int) int {
	if c.Who {
		return max(limit, len(c.ToolDefs))
	}
	return limit
}
