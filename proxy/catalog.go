package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/naming"
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

	templates map[string]*mcp.ResourceTemplate // outward template -> exposed definition
	tmplOwner map[string]string                // outward template -> server
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
		templates:  map[string]*mcp.ResourceTemplate{},
		tmplOwner:  map[string]string{},
	}
}

func mustTable(groups []naming.Group) *naming.Table {
	t, _ := naming.Build(groups)
	return t
}

// Entry is one exposed catalog item, for `manifold tools` and tests.
type Entry struct {
	Kind        string // "tool" or "prompt"
	Exposed     string
	Server      string
	Original    string
	Description string
}

// Catalog returns the exposed tools and prompts, sorted by kind and name.
func (s *Server) Catalog() []Entry {
	c := s.catalog.Load()
	var out []Entry
	for _, e := range c.tools.Entries() {
		out = append(out, Entry{Kind: "tool", Exposed: e.Exposed, Server: e.Server, Original: e.Original,
			Description: c.toolDefs[e.Exposed].Description})
	}
	for _, e := range c.prompts.Entries() {
		out = append(out, Entry{Kind: "prompt", Exposed: e.Exposed, Server: e.Server, Original: e.Original,
			Description: c.promptDefs[e.Exposed].Description})
	}
	return out
}

// registered is what the proxy has registered with the SDK server, with a
// fingerprint of each definition so unchanged entries are not re-added (each
// add schedules a list_changed).
type registered struct {
	tools     map[string][]byte
	prompts   map[string][]byte
	resources map[string][]byte
	templates map[string][]byte
}

// rebuild recomputes the catalog from every backend's last listing, swaps it in
// and brings the SDK server's registrations in line (which sends the downstream
// list_changed notifications).
func (s *Server) rebuild() {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.isClosed() {
		return
	}
	g := s.gen.Load()
	c := newCatalog(g)
	var toolGroups, promptGroups []naming.Group
	snap := make(map[string]lists, len(g.backends))
	for _, b := range g.backends {
		b.mu.Lock()
		l := b.lists
		b.mu.Unlock()
		snap[b.name] = l
		tg := naming.Group{Server: b.name, Prefix: b.cfg.Prefix}
		for _, t := range l.tools {
			tg.Names = append(tg.Names, t.Name)
		}
		toolGroups = append(toolGroups, tg)
		pg := naming.Group{Server: b.name, Prefix: b.cfg.Prefix}
		for _, p := range l.prompts {
			pg.Names = append(pg.Names, p.Name)
		}
		promptGroups = append(promptGroups, pg)
	}
	var collisions []naming.Collision
	c.tools, collisions = naming.Build(toolGroups)
	for _, col := range collisions {
		s.log.Error("tool name collision: two servers expose the same name; the first keeps it. Give one of them a different prefix",
			"exposed", col.Exposed, "kept_server", col.Kept.Server, "dropped_server", col.Dropped.Server, "dropped_tool", col.Dropped.Original)
	}
	c.prompts, collisions = naming.Build(promptGroups)
	for _, col := range collisions {
		s.log.Error("prompt name collision: two servers expose the same name; the first keeps it. Give one of them a different prefix",
			"exposed", col.Exposed, "kept_server", col.Kept.Server, "dropped_server", col.Dropped.Server, "dropped_prompt", col.Dropped.Original)
	}

	for _, b := range g.backends {
		l := snap[b.name]
		for _, t := range l.tools {
			exposed, ok := c.tools.Exposed(b.name, t.Name)
			if !ok {
				continue
			}
			def := *t
			def.Name = exposed
			def.InputSchema = normalizeSchema(t.InputSchema)
			c.toolDefs[exposed] = &def
		}
		for _, p := range l.prompts {
			exposed, ok := c.prompts.Exposed(b.name, p.Name)
			if !ok {
				continue
			}
			def := *p
			def.Name = exposed
			c.promptDefs[exposed] = &def
		}
		for _, r := range l.resources {
			out := c.uris.Outward(b.name, r.URI)
			if owner, dup := c.resOwner[out]; dup {
				s.log.Warn("resource URI listed by two servers; the first keeps it", "uri", out, "kept_server", owner, "dropped_server", b.name)
				continue
			}
			def := *r
			def.URI = out
			c.resources[out] = &def
			c.resOwner[out] = b.name
		}
		for _, t := range l.templates {
			out := c.uris.OutwardTemplate(b.name, t.URITemplate)
			if owner, dup := c.tmplOwner[out]; dup {
				s.log.Warn("resource template listed by two servers; the first keeps it", "template", out, "kept_server", owner, "dropped_server", b.name)
				continue
			}
			def := *t
			def.URITemplate = out
			c.templates[out] = &def
			c.tmplOwner[out] = b.name
		}
	}
	s.catalog.Store(c)
	s.register(c)
}

// register applies the difference between the registered set and c to the SDK
// server. Called with catMu held.
func (s *Server) register(c *catalog) {
	if s.reg.tools == nil {
		s.reg = registered{tools: map[string][]byte{}, prompts: map[string][]byte{}, resources: map[string][]byte{}, templates: map[string][]byte{}}
	}
	sync := func(kind string, reg map[string][]byte, want map[string]any, add func(key string, def any) error, remove func(keys ...string)) {
		var gone []string
		for k := range reg {
			if _, ok := want[k]; !ok {
				gone = append(gone, k)
			}
		}
		if len(gone) > 0 {
			remove(gone...)
			for _, k := range gone {
				delete(reg, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			fp, err := json.Marshal(want[k])
			if err != nil {
				s.log.Warn("cannot encode "+kind+"; left out", "name", k, "err", err)
				continue
			}
			if old, ok := reg[k]; ok && bytes.Equal(old, fp) {
				continue
			}
			if err := add(k, want[k]); err != nil {
				s.log.Warn(kind+" rejected; left out", "name", k, "err", err)
				delete(reg, k)
				continue
			}
			reg[k] = fp
		}
	}
	sync("tool", s.reg.tools, anyMap(c.toolDefs), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddTool(def.(*mcp.Tool), s.handleCallTool) })
	}, s.server.RemoveTools)
	sync("prompt", s.reg.prompts, anyMap(c.promptDefs), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddPrompt(def.(*mcp.Prompt), s.handleGetPrompt) })
	}, s.server.RemovePrompts)
	sync("resource", s.reg.resources, anyMap(c.resources), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddResource(def.(*mcp.Resource), s.handleReadResource) })
	}, s.server.RemoveResources)
	sync("resource template", s.reg.templates, anyMap(c.templates), func(_ string, def any) error {
		return catchPanic(func() { s.server.AddResourceTemplate(def.(*mcp.ResourceTemplate), s.handleReadResource) })
	}, s.server.RemoveResourceTemplates)
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

// resourceOwner finds the server that owns an outward resource URI: by the
// URI's prefix, else by the listed resources and templates of the unprefixed
// servers.
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

// templateMatches reports whether uri could have been produced by the RFC 6570
// template: its literal text before the first expression must be a prefix of
// uri. Good enough to pick an owner among unprefixed servers.
func templateMatches(tmpl, uri string) bool {
	lit := tmpl
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] == '{' {
			lit = tmpl[:i]
			break
		}
	}
	return len(lit) > 0 && len(uri) >= len(lit) && uri[:len(lit)] == lit
}
