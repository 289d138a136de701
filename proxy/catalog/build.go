package catalog

import (
	"bytes"
	"encoding/json"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/pin"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// Builder is one build of the catalog (the root's rebuildNow), in the
// order it runs: every server's lists taken at once and their names made
// (Names), the pins checked (by the caller, on Lists and the names), then
// each server's tools, prompts, resources and templates exposed and
// decided (Build). The exposed definitions of the last build (Options.Prev)
// are reused where their source is the same: unchanged servers cost no
// copies and no encoding, and the SDK's registration sees the same
// definitions as unchanged at a glance.
type Builder struct {
	o       Options
	c       *Snapshot
	rules   *policy.Rules
	prev    Derived // the last build's derived definitions
	derived Derived // this one's
	servers []Listing
	snap    map[string]supervise.Lists
}

// Options are what a build reads besides the servers' lists.
type Options struct {
	// Rules decide every item. Required.
	Rules *policy.Rules
	// URIs rewrites the servers' resource URIs. Required.
	URIs *naming.URIMap
	// MaxNameLength bounds exposed names (naming.BuildLimit). If zero,
	// naming's default.
	MaxNameLength int
	// Log gets the collisions and the items left out. If nil, nothing is
	// logged.
	Log *slog.Logger
	// Prev are the definitions the last build derived (Builder.Derived);
	// nil for the first build.
	Prev Derived
	// Warned holds the names a server listed twice that were logged, by
	// server, kind and name; the build adds to it (Builder.Warned), and
	// makes it at the first one if nil.
	Warned map[string]bool
}

// Listing is one server's lists as a build reads them: its name, its
// prefix (ServerConfig.Prefix) and its last listing.
type Listing struct {
	Name, Prefix string
	Lists        supervise.Lists
}

// Derived are the definitions one build derived from the servers' own,
// for the next build to reuse.
type Derived map[defKey]any

// NewBuilder starts a build with o.
func NewBuilder(o Options) *Builder {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	c := Empty(o.URIs)
	c.Rules = o.Rules
	c.Who = o.Rules.HasWho()
	return &Builder{o: o, c: c, rules: o.Rules, prev: o.Prev, derived: make(Derived, len(o.Prev))}
}

// Derived returns what this build derived, for the next one's Options.Prev.
func (bld *Builder) Derived() Derived { return bld.derived }

// Lists returns each server's lists as the build reads them (Names made
// them canonical and without duplicates), by server.
func (bld *Builder) Lists() map[string]supervise.Lists { return bld.snap }

// Warned returns Options.Warned with what this build logged (made at the
// first name logged when it was nil).
func (bld *Builder) Warned() map[string]bool { return bld.o.Warned }

// Build exposes and decides every server's items, with pins what the pin
// check found (nil: nothing held), and returns the catalog. check, if not
// nil, is asked about each listed tool whose input schema binds a
// parameter to a header (BindsHeader), by name; a tool it returns an
// error for is left out of the lists (the error says why).
func (bld *Builder) Build(pins *Pins, check func(name string, def *mcp.Tool) error) *Snapshot {
	c := bld.c
	if pins == nil {
		pins = &Pins{}
	}
	c.pin = pins
	for _, b := range bld.servers {
		l := bld.snap[b.Name]
		bld.addTools(b, l.Tools)
		bld.addPrompts(b, l.Prompts)
		bld.addResources(b, l.Resources)
		bld.addTemplates(b, l.Templates)
	}
	if check != nil {
		for _, name := range slices.Sorted(maps.Keys(c.ToolDefs)) {
			def := c.ToolDefs[name]
			if def == nil || !BindsHeader(def.InputSchema) {
				continue
			}
			if err := check(name, def); err != nil {
				if c.unlisted == nil {
					c.unlisted = make(map[string]error)
				}
				c.unlisted[name] = err
			}
		}
	}
	return c
}

// Unlisted returns why the exposed tool name is left out of the lists
// (the check given to Build), or nil.
func (c *Snapshot) Unlisted(name string) error { return c.unlisted[name] }

// decide is the decision the catalog is built on: for everyone, or, when it
// depends on who asks, what someone may see (who.go); varies is set when
// someone may not see it.
func (bld *Builder) decide(key string, it policy.Item, varies *bool) policy.Decision {
	c, rules := bld.c, bld.rules
	if !c.Who {
		return rules.Decide(it)
	}
	it.Who = policy.Widest
	d := rules.Decide(it)
	c.decisions[key] = d
	if d.Visible {
		c.items[key] = it
		it.Who = policy.Narrowest
		if !rules.Decide(it).Visible {
			*varies = true
		}
	}
	return d
}

// Names takes every server's lists (in config order) and makes the
// exposed names of tools and prompts, logging the names two servers would
// share; it returns the tool names, which the pin check reads.
func (bld *Builder) Names(servers []Listing) *naming.Table {
	c, rules := bld.c, bld.rules
	var toolGroups, promptGroups []naming.Group
	bld.servers = servers
	bld.snap = make(map[string]supervise.Lists, len(servers))
	for _, b := range servers {
		l := bld.dropDuplicates(b.Name, canonicalLists(b.Lists))
		bld.snap[b.Name] = l
		tg := naming.Group{Server: b.Name, Prefix: b.Prefix}
		for _, t := range l.Tools {
			tg.Names = append(tg.Names, t.Name)
			if o, ok := rules.Override(b.Name, t.Name); ok && o.Name != "" {
				if tg.Renames == nil {
					tg.Renames = make(map[string]string)
				}
				tg.Renames[t.Name] = o.Name
			}
		}
		toolGroups = append(toolGroups, tg)
		pg := naming.Group{Server: b.Name, Prefix: b.Prefix}
		for _, p := range l.Prompts {
			pg.Names = append(pg.Names, p.Name)
		}
		promptGroups = append(promptGroups, pg)
	}
	bld.presize()
	var collisions []naming.Collision
	c.Tools, collisions = naming.BuildLimit(toolGroups, bld.o.MaxNameLength)
	bld.logCollisions("tool", collisions)
	c.Prompts, collisions = naming.BuildLimit(promptGroups, bld.o.MaxNameLength)
	bld.logCollisions("prompt", collisions)
	return c.Tools
}

// presize makes the snapshot's maps for what Names read, which Build fills
// (a build of 1,000 tools grew each of them nine times: issue 41's
// proxy-cpu-ms of 20 × 50 tools). Only the capacity changes.
func (bld *Builder) presize() {
	c := bld.c
	var tools, items int
	for _, l := range bld.snap {
		tools += len(l.Tools)
		items += len(l.Tools) + len(l.Prompts) + len(l.Resources) + len(l.Templates)
	}
	if len(c.ToolDefs) == 0 {
		c.ToolDefs = make(map[string]*mcp.Tool, tools)
	}
	if len(c.ToolAnn) == 0 {
		c.ToolAnn = make(map[string]*policy.Annotations, tools)
	}
	if len(c.decisions) == 0 {
		c.decisions = make(map[string]policy.Decision, items)
	}
	if c.Who && len(c.items) == 0 {
		c.items = make(map[string]policy.Item, items)
	}
	if len(bld.derived) == 0 && len(bld.prev) < items {
		bld.derived = make(Derived, items)
	}
}

// addTools exposes and decides b's tools: the operator's annotations,
// overrides and the pins apply; a visible one is listed.
func (bld *Builder) addTools(b Listing, tools []*mcp.Tool) {
	c, rules := bld.c, bld.rules
	for _, t := range tools {
		exposed, ok := c.Tools.Exposed(b.Name, t.Name)
		if !ok {
			continue
		}
		dt := reuse(bld.prev, bld.derived, defKey{t, b.Name, exposed, rules}, func() *derivedTool {
			ann := rules.Annotations(b.Name, t.Name, ToPolicyAnnotations(t.Annotations))
			def := *t
			def.Name = exposed
			def.InputSchema = normalizeSchema(t.InputSchema)
			def.Annotations = toMCPAnnotations(ann)
			if o, ok := rules.Override(b.Name, t.Name); ok {
				if o.Title != "" {
					def.Title = o.Title
				}
				if o.Description != "" {
					def.Description = o.Description
				}
			}
			return &derivedTool{def: &def, ann: ann}
		})
		ann := dt.ann
		it := policy.Item{Kind: policy.Tool, Server: b.Name, Original: t.Name, Exposed: exposed, Annotations: ann,
			Full: naming.Full(b.Prefix, t.Name)} // rules on the whole name still apply to a shortened one
		if o, ok := rules.Override(b.Name, t.Name); ok && o.Name != "" {
			it.Qualified = naming.ExposeLimit(b.Prefix, t.Name, bld.o.MaxNameLength) // rules on the server's names still apply
		}
		d := bld.decide("tool\x00"+exposed, it, &c.Varies[kindTools])
		if msg, held := c.pin.isHeld(b.Name, pin.Tool, t.Name); held && d.Visible {
			d = policy.Decision{Rule: "pin", Reason: "awaits review: run `manifold approve " + b.Name + "/" + t.Name + "`"}
			c.pinHeld["tool\x00"+exposed] = msg
		}
		c.decisions["tool\x00"+exposed] = d
		c.ToolAnn[exposed] = ann
		if !d.Visible {
			c.Narrowed[kindTools] = true
			continue
		}
		c.ToolDefs[exposed] = dt.def
	}
}

// addPrompts exposes and decides b's prompts.
func (bld *Builder) addPrompts(b Listing, prompts []*mcp.Prompt) {
	c := bld.c
	for _, p := range prompts {
		exposed, ok := c.Prompts.Exposed(b.Name, p.Name)
		if !ok {
			continue
		}
		d := bld.decide("prompt\x00"+exposed, policy.Item{Kind: policy.Prompt, Server: b.Name, Original: p.Name, Exposed: exposed,
			Full: naming.Full(b.Prefix, p.Name)}, &c.Varies[kindPrompts])
		if msg, held := c.pin.isHeld(b.Name, pin.Prompt, p.Name); held && d.Visible {
			d = policy.Decision{Rule: "pin", Reason: "awaits review: run `manifold approve " + b.Name + "/" + p.Name + "`"}
			c.pinHeld["prompt\x00"+exposed] = msg
		}
		c.decisions["prompt\x00"+exposed] = d
		if !d.Visible {
			c.Narrowed[kindPrompts] = true
			continue
		}
		c.PromptDefs[exposed] = reuse(bld.prev, bld.derived, defKey{p, b.Name, exposed, nil}, func() *mcp.Prompt {
			def := *p
			def.Name = exposed
			return &def
		})
	}
}

// addResources exposes and decides b's resources, decided on their
// canonical URIs; the first server to list a URI keeps it.
func (bld *Builder) addResources(b Listing, resources []*mcp.Resource) {
	c := bld.c
	for _, r := range resources {
		canon, err := policy.CanonicalURI(r.URI)
		if err != nil {
			bld.o.Log.Warn("resource left out: its URI has no canonical form, so it could be neither decided nor read", "server", b.Name, "err", err)
			continue
		}
		out := c.URIs.Outward(b.Name, canon)
		d := bld.decide("resource\x00"+out, policy.Item{Kind: policy.Resource, Server: b.Name, Original: canon, Exposed: out}, &c.VariesResources)
		if !d.Visible {
			c.NarrowedResources = true
			c.listed = append(c.listed, Entry{Kind: "resource", Exposed: out, Server: b.Name, Original: r.URI, Description: r.Description, Verdict: d.String()})
			continue
		}
		if owner, dup := c.ResOwner[out]; dup {
			bld.o.Log.Warn("resource URI listed by two servers; the first keeps it", "uri", out, "kept_server", owner, "dropped_server", b.Name)
			continue
		}
		c.listed = append(c.listed, Entry{Kind: "resource", Exposed: out, Server: b.Name, Original: r.URI, Description: r.Description, Visible: true, Verdict: d.String()})
		c.Resources[out] = reuse(bld.prev, bld.derived, defKey{r, b.Name, out, nil}, func() *mcp.Resource {
			def := *r
			def.URI = out
			return &def
		})
		c.ResOwner[out] = b.Name
		if r.URI != canon {
			c.listedAs[out] = r.URI
		}
	}
}

// addTemplates exposes and decides b's resource templates; the first
// server to list a template keeps it.
func (bld *Builder) addTemplates(b Listing, templates []*mcp.ResourceTemplate) {
	c := bld.c
	for _, t := range templates {
		out := c.URIs.OutwardTemplate(b.Name, t.URITemplate)
		d := bld.decide("template\x00"+out, policy.Item{Kind: policy.Template, Server: b.Name, Original: t.URITemplate, Exposed: out}, &c.VariesTemplates)
		if _, held := c.pin.isHeld(b.Name, pin.Template, t.URITemplate); held && d.Visible {
			d = policy.Decision{Rule: "pin", Reason: "awaits review: run `manifold approve " + b.Name + "/" + t.URITemplate + "`"}
			c.decisions["template\x00"+out] = d
		}
		if !d.Visible {
			c.NarrowedTemplates = true
			c.listed = append(c.listed, Entry{Kind: "template", Exposed: out, Server: b.Name, Original: t.URITemplate, Description: t.Description, Held: HeldByPin(d), Verdict: d.String()})
			continue
		}
		if owner, dup := c.TmplOwner[out]; dup {
			bld.o.Log.Warn("resource template listed by two servers; the first keeps it", "template", out, "kept_server", owner, "dropped_server", b.Name)
			continue
		}
		c.listed = append(c.listed, Entry{Kind: "template", Exposed: out, Server: b.Name, Original: t.URITemplate, Description: t.Description, Visible: true, Verdict: d.String()})
		c.Templates[out] = reuse(bld.prev, bld.derived, defKey{t, b.Name, out, nil}, func() *mcp.ResourceTemplate {
			def := *t
			def.URITemplate = out
			return &def
		})
		c.TmplOwner[out] = b.Name
	}
}

// defKey identifies a definition that the catalog derives from a server's
// own: the listed definition (by identity: a listing is never changed in
// place), the server, the name or URI it is exposed as, and, for tools, the
// rules in force (overrides and annotations are part of the definition).
type defKey struct {
	src     any // *mcp.Tool, *mcp.Prompt, *mcp.Resource or *mcp.ResourceTemplate as listed
	server  string
	exposed string
	rules   *policy.Rules
}

// derivedTool is a tool's exposed definition and its effective annotations.
type derivedTool struct {
	def *mcp.Tool
	ann *policy.Annotations
}

// reuse returns the definition that the last rebuild derived for k (in
// prev), or else build's, and keeps it for the next rebuild (in next).
// Derived definitions are never changed once made.
func reuse[T any](prev, next Derived, k defKey, build func() *T) *T {
	d, ok := prev[k].(*T)
	if !ok {
		d = build()
	}
	next[k] = d
	return d
}

// canonicalLists returns copies of l's lists in a fixed order: by name (URI,
// template), ties broken by the item's JSON encoding. A server that lists
// one name twice, with two definitions, then gives the same catalog (and
// clients the same list bytes) whatever order it lists in; the one the
// catalog keeps is the same every time.
func canonicalLists(l supervise.Lists) supervise.Lists {
	return supervise.Lists{
		Tools:     sortedBy(l.Tools, func(t *mcp.Tool) string { return t.Name }),
		Prompts:   sortedBy(l.Prompts, func(p *mcp.Prompt) string { return p.Name }),
		Resources: sortedBy(l.Resources, func(r *mcp.Resource) string { return r.URI }),
		Templates: sortedBy(l.Templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate }),
	}
}

// dropDuplicates keeps, of the items of l (in canonical order) that share
// a name (a tool's or a prompt's, a resource's URI, a template), the first:
// the same one whatever order the server lists them in. Each name a server
// lists more than once is logged, once per server and name (Options.Warned,
// which the caller guards: one build at a time).
func (bld *Builder) dropDuplicates(server string, l supervise.Lists) supervise.Lists {
	dup := func(kind string) func(string) {
		return func(name string) {
			key := server + "\x00" + kind + "\x00" + name
			if bld.o.Warned[key] {
				return
			}
			if bld.o.Warned == nil {
				bld.o.Warned = make(map[string]bool)
			}
			bld.o.Warned[key] = true
			bld.o.Log.Warn("the server listed a "+kind+" twice under one name; one of them is served", "upstream", server, kind, name)
		}
	}
	l.Tools = uniqueBy(l.Tools, func(t *mcp.Tool) string { return t.Name }, dup("tool"))
	l.Prompts = uniqueBy(l.Prompts, func(p *mcp.Prompt) string { return p.Name }, dup("prompt"))
	l.Resources = uniqueBy(l.Resources, func(r *mcp.Resource) string { return r.URI }, dup("resource"))
	l.Templates = uniqueBy(l.Templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate }, dup("template"))
	return l
}

// uniqueBy returns items, sorted by key, without the items whose key is
// the one before's, calling dup with each such key; items itself when none.
func uniqueBy[T any](items []*T, key func(*T) string, dup func(string)) []*T {
	same := func(i int) bool {
		return i > 0 && items[i] != nil && items[i-1] != nil && key(items[i]) == key(items[i-1])
	}
	first := -1
	for i := range items {
		if same(i) {
			first = i
			break
		}
	}
	if first < 0 {
		return items
	}
	out := slices.Clone(items[:first])
	for i := first; i < len(items); i++ {
		if same(i) {
			dup(key(items[i]))
			continue
		}
		out = append(out, items[i])
	}
	return out
}

// sortedBy returns a copy of items sorted by key, then by JSON encoding;
// nil items come first.
func sortedBy[T any](items []*T, key func(*T) string) []*T {
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b *T) int {
		if a == nil || b == nil {
			return cmpBool(a != nil, b != nil)
		}
		if c := strings.Compare(key(a), key(b)); c != 0 {
			return c
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return bytes.Compare(ja, jb)
	})
	return out
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// logCollisions logs the names of kind ("tool" or "prompt") that
// naming.Build left out, naming both servers.
func (bld *Builder) logCollisions(kind string, collisions []naming.Collision) {
	for _, col := range collisions {
		if col.Owner != "" {
			bld.o.Log.Error(kind+" name refused: it lies in another server's namespace, which only that server may fill; rename it with an override, or give the listing server a prefix",
				"exposed", col.Exposed, "namespace_server", col.Owner, "refused_server", col.Dropped.Server, "refused_"+kind, col.Dropped.Original)
			continue
		}
		bld.o.Log.Error(kind+" name collision: two servers expose the same name; the first keeps it. Give one of them a different prefix",
			"exposed", col.Exposed, "kept_server", col.Kept.Server, "dropped_server", col.Dropped.Server, "dropped_"+kind, col.Dropped.Original)
	}
}

// normalizeSchema makes an upstream input schema acceptable to clients and to
// the SDK, which require a JSON object with "type":"object". Everything else in
// the schema is forwarded as is.
func normalizeSchema(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		var err error
		if m, err = wire.Object(schema); err != nil || m == nil {
			return map[string]any{"type": "object"}
		}
	}
	if m["type"] == "object" {
		return m
	}
	out := maps.Clone(m)
	out["type"] = "object"
	return out
}

// ToPolicyAnnotations converts an upstream tool's annotations; nil when it
// sent none (so the tool is not read-only).
func ToPolicyAnnotations(a *mcp.ToolAnnotations) *policy.Annotations {
	if a == nil {
		return nil
	}
	ro, idem := a.ReadOnlyHint, a.IdempotentHint
	return &policy.Annotations{Title: a.Title, ReadOnly: &ro, Idempotent: &idem, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
}

// toMCPAnnotations converts effective annotations back for clients.
func toMCPAnnotations(a *policy.Annotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	out := &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.Destructive, OpenWorldHint: a.OpenWorld}
	if a.ReadOnly != nil {
		out.ReadOnlyHint = *a.ReadOnly
	}
	if a.Idempotent != nil {
		out.IdempotentHint = *a.Idempotent
	}
	return out
}
