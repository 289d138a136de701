package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/pin"
	"github.com/manifold-mcp/manifold/proxy/search"
	"github.com/manifold-mcp/manifold/proxy/search/embedcache"
)

// catalog is the merged, namespaced view of every upstream's lists. It is
// immutable once built and swapped whole (Server.catalog).
type catalog struct {
	gen  *generation
	uris *naming.URIMap

	tools    *naming.Table
	toolDefs map[string]*mcp.Tool // exposed name -> exposed definition

	prompts    *naming.Table
	promptDefs map[string]*mcp.Prompt

	resources map[string]*mcp.Resource // outward URI -> exposed definition
	resOwner  map[string]string        // outward URI -> server
	// listedAs maps an outward URI to the URI its server listed, where that
	// differs from the canonical form the policy decided on (case, a
	// trailing "/", "localhost"...): a read of a listed resource reaches its
	// server spelled as the server itself spelled it.
	listedAs map[string]string

	templates map[string]*mcp.ResourceTemplate // outward template -> exposed definition
	tmplOwner map[string]string                // outward template -> server

	// listed are the resources and templates as the servers listed them,
	// hidden ones too, each with its decision: for Catalog.
	listed []Entry

	rules     *policy.Rules
	decisions map[string]policy.Decision // exposed tool or prompt name -> its decision (hidden ones too)

	// who says that a rule has a who list, so that a decision depends on
	// who asks (who.go): decisions are then those of policy.Widest (what
	// someone may see, registered with the SDK), and items holds what
	// each visible item is decided on ("tool\x00NAME", "prompt\x00NAME",
	// "resource\x00URI", "template\x00TEMPLATE"), for the decision of each
	// identity. varies says, per list, whether an item's visibility
	// depends on who asks (its list is then cacheScope "private").
	who                              bool
	items                            map[string]policy.Item
	varies                           [numCatalogKinds]bool
	variesResources, variesTemplates bool
	lists                            listCache // prepared tools/list answers (listbytes.go)
	views                            sync.Map  // session.Identity.Key() -> *view
	metaDefs                         sync.Map  // visible count and servers -> the meta-tools for them (who.go)
	nviews                           atomic.Int64
	headerOnce                       sync.Once
	headerTools                      map[string]bool // set once by headerBound

	// unlisted are the tools left out of the lists (checkHeaderTools, set
	// before the catalog is stored); listNames are the listed names,
	// sorted, worked out at the first list (toollist.go).
	unlisted  map[string]error
	listOnce  sync.Once
	listNames []string

	// sized and the listed names are worked out once per catalog (a
	// catalog does not change once built, and the status file asks for
	// them every second: size encodes every definition twice).
	sizeOnce, namesOnce    sync.Once
	sized                  CatalogSize
	fullNames, searchNames []string

	// pin is what the pin check found (pinned.go); pinHeld maps "tool\x00"
	// or "prompt\x00" and an exposed name that the check holds for review
	// to the error a call or get of it gets.
	pin     *pinState
	pinHeld map[string]string
	toolAnn map[string]*policy.Annotations

	// narrowed says, per kind, whether the policy hid an item of the list:
	// a modern client's list is then cacheScope "private".
	narrowed                             [numCatalogKinds]bool
	narrowedResources, narrowedTemplates bool

	// modernTools caches the tool definitions rewritten for modern clients
	// (JSON Schema 2020-12), by the definition registered with the SDK.
	modernTools sync.Map // *mcp.Tool -> *mcp.Tool

	// surfOpts are the catalog options this catalog was built with;
	// serverText is each server's text for the search index (the first
	// line of its instructions). The search surface and its index are
	// built at their first use (surface.go).
	surfOpts   CatalogOptions
	serverText map[string]string
	surfOnce   sync.Once
	surf       *surface
	indexOnce  sync.Once
	index      *search.Index
	// embeds are the search encoder's embeddings (nil when
	// CatalogOptions.Encoder is off); encIndex is the index that ranks
	// with them, built at the first search after they are all ready.
	embeds     *embedcache.Cache
	docs       []search.Doc
	embedTexts []string
	encOnce    sync.Once
	encIndex   atomic.Pointer[search.Index]
}

// visibleTool returns the entry and the decision for id of an exposed tool
// name that exists and is visible to id.
func (c *catalog) visibleTool(name string, id policy.Identity) (naming.Entry, policy.Decision, bool) {
	e, ok := c.tools.Lookup(name)
	if !ok {
		return e, policy.Decision{}, false
	}
	if _, listed := c.toolDefs[name]; !listed {
		return e, policy.Decision{}, false
	}
	d := c.decision("tool\x00"+name, id)
	return e, d, d.Visible
}

// visiblePrompt is visibleTool for prompts.
func (c *catalog) visiblePrompt(name string, id policy.Identity) (naming.Entry, policy.Decision, bool) {
	e, ok := c.prompts.Lookup(name)
	if !ok {
		return e, policy.Decision{}, false
	}
	if _, listed := c.promptDefs[name]; !listed {
		return e, policy.Decision{}, false
	}
	d := c.decision("prompt\x00"+name, id)
	return e, d, d.Visible
}

// resourceAllowed decides, for id, a read, subscribe or completion of an
// outward URI of server (original is the server's own URI).
func (c *catalog) resourceAllowed(server, original, outward string, id policy.Identity) policy.Decision {
	return c.rules.Decide(policy.Item{Kind: policy.Resource, Server: server, Original: original, Exposed: outward, Who: id})
}

// resolveResource canonicalises a resource URI from a client
// (policy.CanonicalURI) and finds its owner: the one form that routing,
// policy, subscriptions and explain use, and that the upstream receives
// (original), so that what was decided is what is read. A URI without a
// canonical form is a protocol error that says why; ok is false when no
// server owns the URI.
func (c *catalog) resolveResource(uri string) (server, original, outward string, ok bool, err error) {
	outward, err = policy.CanonicalURI(uri)
	if err != nil {
		return "", "", "", false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: err.Error() + "; send the resource's URI as resources/list or a template gives it"}
	}
	server, original, ok = c.resourceOwner(outward)
	if raw, listed := c.listedAs[outward]; listed && ok {
		original = raw
	}
	return server, original, outward, ok, nil
}

// upstreamResource applies the resource policy and the URI rewrite to a
// URI that server put in content (a resource link, an embedded resource, a
// read result's entry): it returns the URI for clients, canonical where it
// can be, and false when a read of it would be refused, so the content must
// be withheld (naming.FilterContentResources). Without rules that can hide
// the server's resources only the rewrite applies.
func (c *catalog) upstreamResource(server, uri string, id policy.Identity) (string, bool) {
	canon, err := policy.CanonicalURI(uri)
	if !c.rules.GuardsResources(server) {
		if err != nil {
			return c.uris.Outward(server, uri), true
		}
		return c.uris.Outward(server, canon), true
	}
	if err != nil {
		return "", false // fail closed: no rule can be said to allow it
	}
	out := c.uris.Outward(server, canon)
	return out, c.resourceAllowed(server, canon, out, id).Visible
}

// filtersResources reports whether content from server needs
// upstreamResource: its URIs are rewritten, or a rule can hide them.
func (c *catalog) filtersResources(server string) bool {
	return c.uris.Rewrites(server) || c.rules.GuardsResources(server)
}

func newCatalog(g *generation) *catalog {
	return &catalog{
		gen:        g,
		uris:       g.uris,
		tools:      mustTable(nil),
		toolDefs:   map[string]*mcp.Tool{},
		prompts:    mustTable(nil),
		promptDefs: map[string]*mcp.Prompt{},
		resources:  map[string]*mcp.Resource{},
		resOwner:   map[string]string{},
		listedAs:   map[string]string{},
		templates:  map[string]*mcp.ResourceTemplate{},
		tmplOwner:  map[string]string{},
		decisions:  map[string]policy.Decision{},
		items:      map[string]policy.Item{},
		toolAnn:    map[string]*policy.Annotations{},
		pinHeld:    map[string]string{},
	}
}

func mustTable(groups []naming.Group) *naming.Table {
	t, _ := naming.Build(groups)
	return t
}

// Entry is one catalog item, for `manifold tools`, `manifold explain` and
// tests. Hidden items are included, with Visible false.
type Entry struct {
	Kind        string // "tool", "prompt", "resource" or "template"
	Exposed     string
	Server      string
	Original    string
	Description string
	Visible     bool
	Held        bool   // hidden by its pin: its definition changed and awaits review (not by policy)
	ReadOnly    bool   // a tool whose effective readOnlyHint is true
	Verdict     string // the policy's decision in words, with the rule and file:line
}

// heldByPin reports whether d hides an item because its pinned definition
// awaits review (the decision buildCatalog puts in the policy's place).
func heldByPin(d policy.Decision) bool {
	return !d.Visible && d.Rule == "pin"
}

// Catalog returns every tool, prompt, resource and resource template the
// servers listed, in that order, by exposed name (or URI) within a kind, each
// with the policy's verdict.
func (s *Server) Catalog() []Entry {
	c := s.catalog.Load()
	var out []Entry
	for _, e := range c.tools.Entries() {
		d := c.decisions["tool\x00"+e.Exposed]
		en := Entry{Kind: "tool", Exposed: e.Exposed, Server: e.Server, Original: e.Original,
			Visible: d.Visible, Held: heldByPin(d), ReadOnly: c.toolAnn[e.Exposed].ReadOnlyHint(), Verdict: d.String()}
		if def := c.toolDefs[e.Exposed]; def != nil {
			en.Description = def.Description
		}
		out = append(out, en)
	}
	for _, e := range c.prompts.Entries() {
		d := c.decisions["prompt\x00"+e.Exposed]
		en := Entry{Kind: "prompt", Exposed: e.Exposed, Server: e.Server, Original: e.Original, Visible: d.Visible, Held: heldByPin(d), Verdict: d.String()}
		if def := c.promptDefs[e.Exposed]; def != nil {
			en.Description = def.Description
		}
		out = append(out, en)
	}
	listed := slices.Clone(c.listed)
	slices.SortStableFunc(listed, func(a, b Entry) int {
		if a.Kind != b.Kind {
			return strings.Compare(a.Kind, b.Kind) // "resource" before "template"
		}
		return strings.Compare(a.Exposed, b.Exposed)
	})
	return append(out, listed...)
}

// Explain says what the policy decides for name: an exposed tool or prompt
// name, or a resource URI as clients see it, and which rule (file:line) made
// the decision, with secrets hidden (Options.Redactor).
func (s *Server) Explain(name string) (string, error) {
	text, err := s.explain(name)
	return s.opts.Redactor.String(text), s.opts.Redactor.Error(err)
}

// ExplainAs is Explain for the identity who: whether who sees name, and
// which rule decided, by the decision that lists and calls use for who.
func (s *Server) ExplainAs(name string, who policy.Identity) (string, error) {
	text, err := s.explainAs(name, who)
	return s.opts.Redactor.String(text), s.opts.Redactor.Error(err)
}

func (s *Server) explainAs(name string, who policy.Identity) (string, error) {
	c := s.catalog.Load()
	as := "as " + who.String() + ": "
	if e, ok := c.tools.Lookup(name); ok && e.Exposed == name {
		d := c.decision("tool\x00"+name, who)
		return fmt.Sprintf("%stool %s (server %q, original %q): %s", as, name, e.Server, e.Original, d.String()), nil
	}
	if e, ok := c.prompts.Lookup(name); ok && e.Exposed == name {
		d := c.decision("prompt\x00"+name, who)
		return fmt.Sprintf("%sprompt %s (server %q, original %q): %s", as, name, e.Server, e.Original, d.String()), nil
	}
	for _, e := range c.listed {
		if e.Kind == "template" && e.Exposed == name {
			verdict := e.Verdict
			if c.who && e.Visible {
				verdict = c.decision("template\x00"+name, who).String()
			}
			return fmt.Sprintf("%stemplate %s (server %q, original %q): %s", as, name, e.Server, e.Original, verdict), nil
		}
	}
	if strings.Contains(name, ":") {
		server, original, uri, ok, err := c.resolveResource(name)
		if err != nil {
			return "", fmt.Errorf("%q: %w", name, err)
		}
		if ok {
			d := c.resourceAllowed(server, original, uri, who)
			return fmt.Sprintf("%sresource %s (server %q, original %q): %s", as, uri, server, original, d.String()), nil
		}
	}
	return "", fmt.Errorf("%q is not a tool or prompt that any server listed, nor a resource URI of a server; run `manifold tools` to see the names", name)
}

func (s *Server) explain(name string) (string, error) {
	c := s.catalog.Load()
	for _, e := range s.Catalog() {
		if e.Exposed == name {
			return fmt.Sprintf("%s %s (server %q, original %q): %s", e.Kind, e.Exposed, e.Server, e.Original, e.Verdict), nil
		}
	}
	if strings.Contains(name, ":") {
		server, original, uri, ok, err := c.resolveResource(name)
		if err != nil {
			return "", fmt.Errorf("%q: %w", name, err)
		}
		if ok {
			d := c.resourceAllowed(server, original, uri, policy.Identity{})
			return fmt.Sprintf("resource %s (server %q, original %q): %s", uri, server, original, d.String()), nil
		}
	}
	return "", fmt.Errorf("%q is not a tool or prompt that any server listed, nor a resource URI of a server; run `manifold tools` to see the names", name)
}

// registered is what the proxy has registered with the SDK server: each
// definition, with a fingerprint of it, so that unchanged entries are not
// re-added (each add schedules a list_changed).
type registered struct {
	tools     map[string]regEntry
	prompts   map[string]regEntry
	resources map[string]regEntry
	templates map[string]regEntry
}

// regEntry is one registered definition: the value given to the SDK and its
// JSON encoding, made the first time another value comes for its name (nil
// until then). A catalog that has the same value (a definition reused from
// the last rebuild) has it unchanged without encoding it.
type regEntry struct {
	def any
	fp  []byte
}

// rebuildQueue coalesces rebuild requests. A request made while a rebuild
// runs is served, with every other request made meanwhile, by the one
// rebuild that follows: a burst of changes (upstreams joining one after the
// other at start, each of which asks for a rebuild) costs one rebuild per
// rebuild's duration, not one per change.
type rebuildQueue struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when a rebuild ends; L is &mu, set at first use
	asked   uint64    // guarded by mu; requests made so far
	done    uint64    // guarded by mu; requests served by a finished rebuild
	running bool      // guarded by mu; a rebuild runs
}

// rebuild recomputes the catalog from every backend's last listing, swaps it in
// and brings the SDK server's registrations in line (which sends the downstream
// list_changed notifications). It returns once a rebuild that began after the
// call has finished, so the catalog then reflects every change made before
// the call, as if it had rebuilt alone; calls made while a rebuild runs share
// the next one (rebuildQueue).
func (s *Server) rebuild() {
	q := &s.rebuilds
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cond.L == nil {
		q.cond.L = &q.mu
	}
	q.asked++
	mine := q.asked
	for q.done < mine {
		if q.running {
			q.cond.Wait()
			continue
		}
		s.rebuildFor(q, q.asked)
	}
}

// rebuildFor runs one rebuild that serves the requests up to upTo. Called
// with q.mu held, which it releases while it rebuilds.
func (s *Server) rebuildFor(q *rebuildQueue, upTo uint64) {
	q.running = true
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.running = false
		q.done = max(q.done, upTo)
		q.cond.Broadcast()
	}()
	s.rebuildNow()
}

// rebuildNow is one rebuild (see rebuild); only rebuildFor calls it.
func (s *Server) rebuildNow() {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.isClosed() {
		return
	}
	g := s.gen.Load()
	rules := s.rules.Load()
	bld := &catalogBuild{s: s, c: newCatalog(g), rules: rules, prev: s.derived}
	bld.derived = make(map[defKey]any, len(bld.prev))
	defer func() { s.derived = bld.derived }()
	c := bld.c
	c.rules = rules
	c.who = rules.HasWho()
	c.surfOpts = *s.catalogOptions()
	c.embeds = s.embedCache(c.surfOpts)
	bld.names(g)
	c.pin = s.checkPins(g, bld.snap, bld.pinned, c.tools)
	s.heldInstr.Store(&c.pin.heldInstr)
	c.serverText = s.serverTexts(g)
	for _, b := range g.backends {
		l := bld.snap[b.name]
		bld.addTools(b, l.tools)
		bld.addPrompts(b, l.prompts)
		bld.addResources(b, l.resources)
		bld.addTemplates(b, l.templates)
	}
	s.checkHeaderTools(c)
	s.catalog.Store(c)
	s.register(c)
	s.warnAlways(c)
}

// catalogBuild is one rebuild of the catalog (rebuildNow), in the order it
// runs: every server's lists taken at once and their names made
// (names), the pins checked, then each server's tools, prompts, resources
// and templates exposed and decided. The exposed definitions of the last
// rebuild (prev) are reused where their source is the same: unchanged
// servers cost no copies and no encoding, and register sees the same
// definitions as unchanged at a glance.
type catalogBuild struct {
	s       *Server
	c       *catalog
	rules   *policy.Rules
	prev    map[defKey]any // the last rebuild's derived definitions
	derived map[defKey]any // this one's
	snap    map[string]lists
	pinned  map[string]pinSnapshot
}

// decide is the decision the catalog is built on: for everyone, or, when it
// depends on who asks, what someone may see (who.go); varies is set when
// someone may not see it.
func (bld *catalogBuild) decide(key string, it policy.Item, varies *bool) policy.Decision {
	c, rules := bld.c, bld.rules
	if !c.who {
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

// names takes every server's lists (with the instructions and listing state
// the pin check needs) and makes the exposed names of tools and prompts,
// logging the names two servers would share.
func (bld *catalogBuild) names(g *generation) {
	s, c, rules := bld.s, bld.c, bld.rules
	var toolGroups, promptGroups []naming.Group
	bld.snap = make(map[string]lists, len(g.backends))
	bld.pinned = make(map[string]pinSnapshot, len(g.backends))
	for _, b := range g.backends {
		// Taken with the lists: instructions read later could belong to a
		// listing this snapshot does not have yet.
		sl, instructions, listed := b.Listing()
		l := listsOf(sl)
		bld.pinned[b.name] = pinSnapshot{instructions: instructions, listed: listed}
		l = s.dropDuplicates(b.name, canonicalLists(l))
		bld.snap[b.name] = l
		tg := naming.Group{Server: b.name, Prefix: b.cfg.Prefix}
		for _, t := range l.tools {
			tg.Names = append(tg.Names, t.Name)
			if o, ok := rules.Override(b.name, t.Name); ok && o.Name != "" {
				if tg.Renames == nil {
					tg.Renames = make(map[string]string)
				}
				tg.Renames[t.Name] = o.Name
			}
		}
		toolGroups = append(toolGroups, tg)
		pg := naming.Group{Server: b.name, Prefix: b.cfg.Prefix}
		for _, p := range l.prompts {
			pg.Names = append(pg.Names, p.Name)
		}
		promptGroups = append(promptGroups, pg)
	}
	var collisions []naming.Collision
	c.tools, collisions = naming.BuildLimit(toolGroups, s.opts.MaxNameLength)
	s.logCollisions("tool", collisions)
	c.prompts, collisions = naming.BuildLimit(promptGroups, s.opts.MaxNameLength)
	s.logCollisions("prompt", collisions)
}

// addTools exposes and decides b's tools: the operator's annotations,
// overrides and the pins apply; a visible one is listed.
func (bld *catalogBuild) addTools(b *backend, tools []*mcp.Tool) {
	s, c, rules := bld.s, bld.c, bld.rules
	for _, t := range tools {
		exposed, ok := c.tools.Exposed(b.name, t.Name)
		if !ok {
			continue
		}
		dt := reuse(bld.prev, bld.derived, defKey{t, b.name, exposed, rules}, func() *derivedTool {
			ann := rules.Annotations(b.name, t.Name, toPolicyAnnotations(t.Annotations))
			def := *t
			def.Name = exposed
			def.InputSchema = normalizeSchema(t.InputSchema)
			def.Annotations = toMCPAnnotations(ann)
			if o, ok := rules.Override(b.name, t.Name); ok {
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
		it := policy.Item{Kind: policy.Tool, Server: b.name, Original: t.Name, Exposed: exposed, Annotations: ann,
			Full: naming.Full(b.cfg.Prefix, t.Name)} // rules on the whole name still apply to a shortened one
		if o, ok := rules.Override(b.name, t.Name); ok && o.Name != "" {
			it.Qualified = naming.ExposeLimit(b.cfg.Prefix, t.Name, s.opts.MaxNameLength) // rules on the server's names still apply
		}
		d := bld.decide("tool\x00"+exposed, it, &c.varies[catTools])
		if msg, held := c.pin.isHeld(b.name, pin.Tool, t.Name); held && d.Visible {
			d = policy.Decision{Rule: "pin", Reason: "awaits review: run `manifold approve " + b.name + "/" + t.Name + "`"}
			c.pinHeld["tool\x00"+exposed] = msg
		}
		c.decisions["tool\x00"+exposed] = d
		c.toolAnn[exposed] = ann
		if !d.Visible {
			c.narrowed[catTools] = true
			continue
		}
		c.toolDefs[exposed] = dt.def
	}
}

// addPrompts exposes and decides b's prompts.
func (bld *catalogBuild) addPrompts(b *backend, prompts []*mcp.Prompt) {
	c := bld.c
	for _, p := range prompts {
		exposed, ok := c.prompts.Exposed(b.name, p.Name)
		if !ok {
			continue
		}
		d := bld.decide("prompt\x00"+exposed, policy.Item{Kind: policy.Prompt, Server: b.name, Original: p.Name, Exposed: exposed,
			Full: naming.Full(b.cfg.Prefix, p.Name)}, &c.varies[catPrompts])
		if msg, held := c.pin.isHeld(b.name, pin.Prompt, p.Name); held && d.Visible {
			d = policy.Decision{Rule: "pin", Reason: "awaits review: run `manifold approve " + b.name + "/" + p.Name + "`"}
			c.pinHeld["prompt\x00"+exposed] = msg
		}
		c.decisions["prompt\x00"+exposed] = d
		if !d.Visible {
			c.narrowed[catPrompts] = true
			continue
		}
		c.promptDefs[exposed] = reuse(bld.prev, bld.derived, defKey{p, b.name, exposed, nil}, func() *mcp.Prompt {
			def := *p
			def.Name = exposed
			return &def
		})
	}
}

// addResources exposes and decides b's resources, decided on their
// canonical URIs; the first server to list a URI keeps it.
func (bld *catalogBuild) addResources(b *backend, resources []*mcp.Resource) {
	s, c := bld.s, bld.c
	for _, r := range resources {
		canon, err := policy.CanonicalURI(r.URI)
		if err != nil {
			s.log.Warn("resource left out: its URI has no canonical form, so it could be neither decided nor read", "server", b.name, "err", err)
			continue
		}
		out := c.uris.Outward(b.name, canon)
		d := bld.decide("resource\x00"+out, policy.Item{Kind: policy.Resource, Server: b.name, Original: canon, Exposed: out}, &c.variesResources)
		if !d.Visible {
			c.narrowedResources = true
			c.listed = append(c.listed, Entry{Kind: "resource", Exposed: out, Server: b.name, Original: r.URI, Description: r.Description, Verdict: d.String()})
			continue
		}
		if owner, dup := c.resOwner[out]; dup {
			s.log.Warn("resource URI listed by two servers; the first keeps it", "uri", out, "kept_server", owner, "dropped_server", b.name)
			continue
		}
		c.listed = append(c.listed, Entry{Kind: "resource", Exposed: out, Server: b.name, Original: r.URI, Description: r.Description, Visible: true, Verdict: d.String()})
		c.resources[out] = reuse(bld.prev, bld.derived, defKey{r, b.name, out, nil}, func() *mcp.Resource {
			def := *r
			def.URI = out
			return &def
		})
		c.resOwner[out] = b.name
		if r.URI != canon {
			c.listedAs[out] = r.URI
		}
	}
}

// addTemplates exposes and decides b's resource templates; the first
// server to list a template keeps it.
func (bld *catalogBuild) addTemplates(b *backend, templates []*mcp.ResourceTemplate) {
	s, c := bld.s, bld.c
	for _, t := range templates {
		out := c.uris.OutwardTemplate(b.name, t.URITemplate)
		d := bld.decide("template\x00"+out, policy.Item{Kind: policy.Template, Server: b.name, Original: t.URITemplate, Exposed: out}, &c.variesTemplates)
		if _, held := c.pin.isHeld(b.name, pin.Template, t.URITemplate); held && d.Visible {
			d = policy.Decision{Rule: "pin", Reason: "awaits review: run `manifold approve " + b.name + "/" + t.URITemplate + "`"}
			c.decisions["template\x00"+out] = d
		}
		if !d.Visible {
			c.narrowedTemplates = true
			c.listed = append(c.listed, Entry{Kind: "template", Exposed: out, Server: b.name, Original: t.URITemplate, Description: t.Description, Held: heldByPin(d), Verdict: d.String()})
			continue
		}
		if owner, dup := c.tmplOwner[out]; dup {
			s.log.Warn("resource template listed by two servers; the first keeps it", "template", out, "kept_server", owner, "dropped_server", b.name)
			continue
		}
		c.listed = append(c.listed, Entry{Kind: "template", Exposed: out, Server: b.name, Original: t.URITemplate, Description: t.Description, Visible: true, Verdict: d.String()})
		c.templates[out] = reuse(bld.prev, bld.derived, defKey{t, b.name, out, nil}, func() *mcp.ResourceTemplate {
			def := *t
			def.URITemplate = out
			return &def
		})
		c.tmplOwner[out] = b.name
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
func reuse[T any](prev, next map[defKey]any, k defKey, build func() *T) *T {
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
func canonicalLists(l lists) lists {
	return lists{
		tools:     sortedBy(l.tools, func(t *mcp.Tool) string { return t.Name }),
		prompts:   sortedBy(l.prompts, func(p *mcp.Prompt) string { return p.Name }),
		resources: sortedBy(l.resources, func(r *mcp.Resource) string { return r.URI }),
		templates: sortedBy(l.templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate }),
	}
}

// dropDuplicates keeps, of the items of l (in canonical order) that share
// a name (a tool's or a prompt's, a resource's URI, a template), the first:
// the same one whatever order the server lists them in. Each name a server
// lists more than once is logged, once per server and name. Called with
// catMu held.
func (s *Server) dropDuplicates(server string, l lists) lists {
	dup := func(kind string) func(string) {
		return func(name string) {
			key := server + "\x00" + kind + "\x00" + name
			if s.dupWarned[key] {
				return
			}
			if s.dupWarned == nil {
				s.dupWarned = make(map[string]bool)
			}
			s.dupWarned[key] = true
			s.log.Warn("the server listed a "+kind+" twice under one name; one of them is served", "upstream", server, kind, name)
		}
	}
	l.tools = uniqueBy(l.tools, func(t *mcp.Tool) string { return t.Name }, dup("tool"))
	l.prompts = uniqueBy(l.prompts, func(p *mcp.Prompt) string { return p.Name }, dup("prompt"))
	l.resources = uniqueBy(l.resources, func(r *mcp.Resource) string { return r.URI }, dup("resource"))
	l.templates = uniqueBy(l.templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate }, dup("template"))
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

// modernToolList is a tools/list answer for a modern client: the same tools,
// with input and output schemas in JSON Schema 2020-12 (era.Schema). Each
// definition is rewritten once per catalog; what cannot be translated is
// sent as the upstream wrote it and logged once per process.
func (s *Server) modernToolList(res *mcp.ListToolsResult) *mcp.ListToolsResult {
	c := s.catalog.Load()
	out := *res
	out.Tools = make([]*mcp.Tool, len(res.Tools))
	for i, t := range res.Tools {
		if m, ok := c.modernTools.Load(t); ok {
			out.Tools[i] = m.(*mcp.Tool)
			continue
		}
		m := *t
		var problems []string
		if t.InputSchema != nil {
			var p []string
			m.InputSchema, p = era.Schema(toAny(t.InputSchema))
			problems = append(problems, p...)
		}
		if t.OutputSchema != nil {
			var p []string
			m.OutputSchema, p = era.Schema(toAny(t.OutputSchema))
			for _, line := range p {
				problems = append(problems, "outputSchema "+line)
			}
		}
		if _, seen := s.schemaWarned.LoadOrStore(t.Name+"\x00"+strings.Join(problems, "\x00"), true); len(problems) > 0 && !seen {
			s.log.Warn("tool schema not fully translated to JSON Schema 2020-12 for modern clients; the rest is sent as the server wrote it",
				"tool", t.Name, "problems", problems)
		}
		actual, _ := c.modernTools.LoadOrStore(t, &m)
		out.Tools[i] = actual.(*mcp.Tool)
	}
	return &out
}

// toAny returns a schema as decoded JSON (maps, slices, float64s), which
// era.Schema reads; a schema of another Go type is round-tripped.
func toAny(schema any) any {
	if m, ok := schema.(map[string]any); ok {
		return m
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return schema
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return schema
	}
	return v
}

// logCollisions logs the names of kind ("tool" or "prompt") that
// naming.Build left out, naming both servers.
func (s *Server) logCollisions(kind string, collisions []naming.Collision) {
	for _, col := range collisions {
		if col.Owner != "" {
			s.log.Error(kind+" name refused: it lies in another server's namespace, which only that server may fill; rename it with an override, or give the listing server a prefix",
				"exposed", col.Exposed, "namespace_server", col.Owner, "refused_server", col.Dropped.Server, "refused_"+kind, col.Dropped.Original)
			continue
		}
		s.log.Error(kind+" name collision: two servers expose the same name; the first keeps it. Give one of them a different prefix",
			"exposed", col.Exposed, "kept_server", col.Kept.Server, "dropped_server", col.Dropped.Server, "dropped_"+kind, col.Dropped.Original)
	}
}

// register applies the difference between the registered set and c to the SDK
// server. Called with catMu held.
func (s *Server) register(c *catalog) {
	if s.reg.tools == nil {
		s.reg = registered{tools: map[string]regEntry{}, prompts: map[string]regEntry{}, resources: map[string]regEntry{}, templates: map[string]regEntry{}}
	}
	var touched [numCatalogKinds]bool // kinds whose registered set changed: the SDK notifies them
	defer func() {
		for k, t := range touched {
			if t {
				s.relay.Changed(catalogKind(k))
			}
		}
	}()
	sync := func(kind string, ck catalogKind, reg map[string]regEntry, want map[string]any, add func(key string, def any) error, remove func(keys ...string)) {
		var gone []string
		for k := range reg {
			if _, ok := want[k]; !ok {
				gone = append(gone, k)
			}
		}
		if len(gone) > 0 {
			touched[ck] = true
			remove(gone...)
			for _, k := range gone {
				delete(reg, k)
			}
		}
		var changed []string
		for k, def := range want {
			if old, ok := reg[k]; !ok || old.def != def {
				changed = append(changed, k)
			}
		}
		slices.Sort(changed)
		for _, k := range changed {
			// A definition's encoding is made when another replaces it,
			// to tell a new one from the same made again: a start, which
			// adds every definition once, makes none.
			old, ok := reg[k]
			var fp []byte
			if ok {
				if old.fp == nil {
					old.fp, _ = json.Marshal(old.def) // it was registered, so it encodes
				}
				var err error
				if fp, err = json.Marshal(want[k]); err != nil {
					s.log.Warn("cannot encode "+kind+"; left out", "name", k, "err", err)
					continue
				}
				if bytes.Equal(old.fp, fp) {
					reg[k] = regEntry{want[k], fp} // the same definition, made again
					continue
				}
			}
			touched[ck] = true
			if err := add(k, want[k]); err != nil {
				s.log.Warn(kind+" rejected; left out", "name", k, "err", err)
				delete(reg, k)
				continue
			}
			reg[k] = regEntry{want[k], fp}
		}
	}
	// Tools are listed from the catalog (toollist.go): only the ones that
	// bind a parameter to a header are registered with the SDK, and a
	// change of the listed set registers the beacon that makes the SDK
	// notify.
	sync("tool", catTools, s.reg.tools, anyMap(c.toolDefs), func(name string, def any) error {
		t := def.(*mcp.Tool)
		if err := c.unlisted[name]; err != nil {
			return err
		}
		if !bindsHeader(t.InputSchema) {
			return nil
		}
		return catchPanic(func() { s.server.AddTool(t, s.handleCallTool) })
	}, s.server.RemoveTools)
	if touched[catTools] {
		s.notifyToolsChanged()
	}
	sync("prompt", catPrompts, s.reg.prompts, anyMap(c.promptDefs), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddPrompt(def.(*mcp.Prompt), s.handleGetPrompt) })
	}, s.server.RemovePrompts)
	sync("resource", catResources, s.reg.resources, anyMap(c.resources), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddResource(def.(*mcp.Resource), s.handleReadResource) })
	}, s.server.RemoveResources)
	sync("resource template", catResources, s.reg.templates, anyMap(c.templates), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddResourceTemplate(def.(*mcp.ResourceTemplate), s.handleReadResource) })
	}, s.server.RemoveResourceTemplates)
	s.regGen.Add(1) // the lists prepared before are of another registry (listbytes.go)
}

func anyMap[V any](m map[string]V) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// catchPanic turns a panic of the SDK's registration checks (bad schema, bad
// URI) into an error, so one malformed upstream entry is left out instead of
// taking the proxy down.
func catchPanic(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// normalizeSchema makes an upstream input schema acceptable to clients and to
// the SDK, which require a JSON object with "type":"object". Everything else in
// the schema is forwarded as is.
func normalizeSchema(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		var err error
		if m, err = toMap(schema); err != nil || m == nil {
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

func toMap(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(b, &m)
	return m, err
}

// resourceOwner finds the server that owns a canonical outward resource URI
// (see resolveResource): by the URI's prefix, else by the listed resources
// and templates of the unprefixed servers. The original it returns is
// canonical too.
func (c *catalog) resourceOwner(uri string) (server, original string, ok bool) {
	if server, original, ok := c.uris.Inward(uri); ok {
		return server, original, true
	}
	if owner, ok := c.resOwner[uri]; ok {
		return owner, uri, true
	}
	for tmpl, owner := range c.tmplOwner {
		if templateMatches(tmpl, uri) {
			return owner, uri, true
		}
	}
	return "", "", false
}

// templateMatches reports whether the canonical uri could have been produced
// by the RFC 6570 template: the canonical form of its literal text before
// the first expression must be a prefix of uri. Good enough to pick an owner
// among unprefixed servers.
func templateMatches(tmpl, uri string) bool {
	lit := tmpl
	if i := strings.IndexByte(tmpl, '{'); i >= 0 {
		lit = tmpl[:i]
	}
	if canon, err := policy.CanonicalURI(lit); err == nil {
		if strings.HasSuffix(lit, "/") && !strings.HasSuffix(canon, "/") {
			canon += "/" // canonical paths lose a trailing "/"; the expression follows it
		}
		lit = canon
	}
	return len(lit) > 0 && strings.HasPrefix(uri, lit)
}
