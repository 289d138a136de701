package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/search/embedcache"
	"github.com/manifold-mcp/manifold/proxy/surface"
	"github.com/manifold-mcp/manifold/upstream"
)

// catalog is the catalog in force: the room's snapshot (proxy/catalog), with
// the generation of backends it was built from, and the search surface's
// state for it (proxy/surface). It is immutable once built and swapped whole
// (Server.catalog). The generation stays here, not in the snapshot: a
// backend is the root's, and the catalog room knows only plain values.
type catalog struct {
	*cat.Snapshot
	gen *generation

	lists listCache // prepared tools/list answers (listbytes.go)

	// sized and the listed names are worked out once per catalog (a
	// catalog does not change once built, and the status file asks for
	// them every second: size encodes every definition twice).
	sizeOnce, namesOnce    sync.Once
	sized                  CatalogSize
	fullNames, searchNames []string

	// surf is the search surface of this catalog (proxy/surface): the
	// catalog options it was built with, its surface and search index,
	// built at their first use.
	surf *surface.State
}

// The lists of the snapshot's Varies and Narrowed are relay's kinds.
var _ = [1]struct{}{}[numCatalogKinds-cat.NumKinds]

// newCatalog is the empty catalog of g, in force before the first rebuild.
func newCatalog(g *generation, o CatalogOptions, embeds *embedcache.Cache) *catalog {
	c := &catalog{Snapshot: cat.Empty(g.uris), gen: g}
	c.surf = surface.New(o, c.ToolDefs, c.Tools, nil, embeds)
	return c
}

// Entry is one catalog item, for `manifold tools`, `manifold explain` and
// tests (catalog.Entry).
type Entry = cat.Entry

// Catalog returns every tool, prompt, resource and resource template the
// servers listed, in that order, by exposed name (or URI) within a kind, each
// with the policy's verdict.
func (s *Server) Catalog() []Entry {
	return s.catalog.Load().Entries()
}

// sharedUp returns the process that serves a call of the exposed tool name
// by who when it is a shared server's, up, without a person's approval
// (nil otherwise: a server's own process, a confirm rule, a server that is
// not up), and whether the name is a tool visible to who.
func (c *catalog) sharedUp(name string, who policy.Identity) (up *upstream.Upstream, visible bool) {
	e, d, ok := c.VisibleTool(name, who)
	if !ok {
		return nil, false
	}
	b := c.gen.byName[e.Server]
	if b == nil || b.PerSession() || b.PerIdentity() || d.Confirm {
		return nil, true
	}
	if st, up, _ := b.Snapshot(); st == stateUp && up != nil {
		return up, true
	}
	return nil, true
}

// Explain says what the policy decides for name: an exposed tool or prompt
// name, or a resource URI as clients see it, and which rule (file:line) made
// the decision, with secrets hidden (Options.Redactor).
func (s *Server) Explain(name string) (string, error) {
	text, err := s.catalog.Load().Explain(name)
	return s.opts.Redactor.String(text), s.opts.Redactor.Error(err)
}

// ExplainAs is Explain for the identity who: whether who sees name, and
// which rule decided, by the decision that lists and calls use for who.
func (s *Server) ExplainAs(name string, who policy.Identity) (string, error) {
	text, err := s.catalog.Load().ExplainAs(name, who)
	return s.opts.Redactor.String(text), s.opts.Redactor.Error(err)
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
	q := &s.builder.rebuilds
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
	s.builder.catMu.Lock()
	defer s.builder.catMu.Unlock()
	if s.isClosed() {
		return
	}
	g := s.gen.Load()
	rules := s.rules.Load()
	bld := cat.NewBuilder(cat.Options{Rules: rules, URIs: g.uris, MaxNameLength: s.opts.MaxNameLength, Log: s.log,
		Prev: s.builder.derived, Warned: s.builder.dupWarned})
	defer func() { s.builder.derived, s.builder.dupWarned = bld.Derived(), bld.Warned() }()
	c := &catalog{gen: g}
	opts := *s.catalogOptions()
	embeds := s.embedCache(opts)
	servers := make([]cat.Listing, 0, len(g.backends))
	pinned := make(map[string]pinSnapshot, len(g.backends))
	for _, b := range g.backends {
		// Taken with the lists: instructions read later could belong to a
		// listing this snapshot does not have yet.
		sl, instructions, listed := b.Listing()
		pinned[b.name] = pinSnapshot{instructions: instructions, listed: listed}
		servers = append(servers, cat.Listing{Name: b.name, Prefix: b.cfg.Prefix, Lists: sl})
	}
	tools := bld.Names(servers)
	pins := s.checkPins(g, bld.Lists(), pinned, tools)
	s.builder.heldInstr.Store(&pins.HeldInstr)
	serverText := s.serverTexts(g)
	c.Snapshot = bld.Build(pins, s.checkHeaderTool)
	c.surf = surface.New(opts, c.ToolDefs, c.Tools, serverText, embeds)
	s.catalog.Store(c)
	s.register(c)
	s.warnAlways(c)
}

// modernToolList is a tools/list answer for a modern client: the same tools,
// with input and output schemas in JSON Schema 2020-12 (era.Schema). Each
// definition is rewritten once per catalog; what cannot be translated is
// sent as the upstream wrote it and logged once per process
// (catalog.Snapshot.ModernToolList).
func (s *Server) modernToolList(res *mcp.ListToolsResult) *mcp.ListToolsResult {
	return s.catalog.Load().ModernToolList(res, &s.builder.schemaWarned, s.log)
}

// register applies the difference between the registered set and c to the SDK
// server. Called with catMu held.
func (s *Server) register(c *catalog) {
	if s.builder.reg.tools == nil {
		s.builder.reg = registered{tools: map[string]regEntry{}, prompts: map[string]regEntry{}, resources: map[string]regEntry{}, templates: map[string]regEntry{}}
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
	sync("tool", catTools, s.builder.reg.tools, anyMap(c.ToolDefs), func(name string, def any) error {
		t := def.(*mcp.Tool)
		if err := c.Unlisted(name); err != nil {
			return err
		}
		if !cat.BindsHeader(t.InputSchema) {
			return nil
		}
		return catchPanic(func() { s.server.AddTool(t, s.handleCallTool) })
	}, s.server.RemoveTools)
	if touched[catTools] {
		s.notifyToolsChanged()
	}
	sync("prompt", catPrompts, s.builder.reg.prompts, anyMap(c.PromptDefs), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddPrompt(def.(*mcp.Prompt), s.handleGetPrompt) })
	}, s.server.RemovePrompts)
	sync("resource", catResources, s.builder.reg.resources, anyMap(c.Resources), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddResource(def.(*mcp.Resource), s.handleReadResource) })
	}, s.server.RemoveResources)
	sync("resource template", catResources, s.builder.reg.templates, anyMap(c.Templates), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddResourceTemplate(def.(*mcp.ResourceTemplate), s.handleReadResource) })
	}, s.server.RemoveResourceTemplates)
	s.builder.regGen.Add(1) // the lists prepared before are of another registry (listbytes.go)
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
