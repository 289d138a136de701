package surface

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/search"
	"github.com/manifold-mcp/manifold/proxy/search/embedcache"
)

// State is the search surface's state for one catalog: the options the
// catalog was built with, its visible tools (plain values of the catalog's
// snapshot), and what is worked out from them at the first need: the
// surface, the search index, the encoder's index, the meta-tools per
// visible count. It does not change once made but for those.
type State struct {
	opts Options
	// defs are the catalog's visible tools by exposed name; tools finds
	// each one's server; serverText is each server's text for the search
	// index (the first line of its instructions).
	defs       map[string]*mcp.Tool
	tools      *naming.Table
	serverText map[string]string

	surfOnce  sync.Once
	surf      *Surface
	indexOnce sync.Once
	index     *search.Index
	// embeds are the search encoder's embeddings (nil when
	// Options.Encoder is off); encIndex is the index that ranks
	// with them, built at the first search after they are all ready.
	embeds     *embedcache.Cache
	docs       []search.Doc
	embedTexts []string
	encOnce    sync.Once
	encIndex   atomic.Pointer[search.Index]

	metaDefs sync.Map // visible count and servers -> the meta-tools for them (MetaDefs)
}

// New is the surface of a catalog whose visible tools are defs (tools
// finds their servers), made with o; serverText is each server's text for
// the index, embeds the encoder's embeddings (nil when o.Encoder is off).
func New(o Options, defs map[string]*mcp.Tool, tools *naming.Table, serverText map[string]string, embeds *embedcache.Cache) *State {
	return &State{opts: o, defs: defs, tools: tools, serverText: serverText, embeds: embeds}
}

// Options returns the options c was made with.
func (c *State) Options() *Options { return &c.opts }

// ServerText returns server's text in the search index.
func (c *State) ServerText(server string) string { return c.serverText[server] }

// MetaDefs returns the meta-tools for n visible tools from servers,
// shared by every caller that sees the same (so that the modern list
// cache, keyed by definition, stays bounded).
func (c *State) MetaDefs(n int, servers []string) map[string]*mcp.Tool {
	key := strconv.Itoa(n) + "\x00" + strings.Join(servers, "\x00")
	if m, ok := c.metaDefs.Load(key); ok {
		return m.(map[string]*mcp.Tool)
	}
	m := map[string]*mcp.Tool{}
	for _, d := range metaToolDefs(n, servers) {
		m[d.Name] = d
	}
	actual, _ := c.metaDefs.LoadOrStore(key, m)
	return actual.(map[string]*mcp.Tool)
}

// ModeFor returns the catalog mode (ModeFull or ModeSearch) of client name
// against the catalog of c, by the options c was made with.
func (c *State) ModeFor(name string) string {
	return c.ModeForWho(name, policy.Identity{})
}

// ModeForWho is ModeFor for a client of the identity who: the mode given
// to the identity, if any, else to the client name, else the default.
func (c *State) ModeForWho(name string, who policy.Identity) string {
	o := c.opts
	mode := o.Mode
	lname := strings.ToLower(name)
	byWho := false
	for _, im := range o.Identities {
		if who.In([]policy.Principal{im.Who}) {
			mode, byWho = im.Mode, true
			break
		}
	}
	for _, cm := range o.Clients {
		if byWho {
			break
		}
		p := strings.ToLower(cm.Name)
		if p == lname || policy.Match(p, lname) {
			mode = cm.Mode
			break
		}
	}
	switch mode {
	case ModeSearch:
		return ModeSearch
	case ModeAuto:
		if slices.Contains(deferringClients, lname) {
			return ModeFull
		}
		above := o.SearchAbove
		if above == 0 {
			above = DefaultSearchAbove
		}
		if len(c.defs) > above {
			return ModeSearch
		}
	}
	return ModeFull
}

// ListVaries reports whether two clients may get different tool lists from
// c: a modern client's list is then cacheScope "private".
func (c *State) ListVaries() bool {
	o := c.opts
	modes := map[string]bool{c.ModeFor(""): true}
	if o.Mode == ModeAuto {
		for _, n := range deferringClients {
			modes[c.ModeFor(n)] = true
		}
	}
	given := make([]string, 0, len(o.Clients)+len(o.Identities))
	for _, cm := range o.Clients {
		given = append(given, cm.Mode)
	}
	for _, im := range o.Identities {
		given = append(given, im.Mode)
	}
	for _, m := range given {
		switch m {
		case ModeAuto:
			modes[ModeFull] = true
			if c.ModeFor("") == ModeFull { // auto may give search to an eager client
				above := o.SearchAbove
				if above == 0 {
					above = DefaultSearchAbove
				}
				if len(c.defs) > above {
					modes[ModeSearch] = true
				}
			}
		default:
			modes[m] = true
		}
	}
	return len(modes) > 1
}

// Surface is the search surface of one catalog: the list and the meta-tools'
// definitions. Built at the first need, once per catalog; the index apart
// (SearchIndex), at the first search.
type Surface struct {
	List    []*mcp.Tool          // the meta-tools, then the always tools
	Meta    map[string]*mcp.Tool // meta-tool name -> definition
	Servers []string             // the servers with visible tools, sorted
}

// Surface returns c's search surface, building it once.
func (c *State) Surface() *Surface {
	c.surfOnce.Do(func() { c.surf = c.buildSurface() })
	return c.surf
}

func (c *State) buildSurface() *Surface {
	sf := &Surface{Meta: map[string]*mcp.Tool{}}
	servers := map[string]bool{}
	for name := range c.defs {
		e, _ := c.tools.Lookup(name)
		servers[e.Server] = true
	}
	sf.Servers = slices.Sorted(maps.Keys(servers))
	for _, def := range metaToolDefs(len(c.defs), sf.Servers) {
		sf.Meta[def.Name] = def
		sf.List = append(sf.List, def)
	}
	for _, name := range c.opts.Always {
		if def, ok := c.defs[name]; ok && sf.Meta[name] == nil {
			sf.List = append(sf.List, def)
		}
	}
	return sf
}

// Rankers a search reports with the encoder on (SearchIndex).
const (
	RankerLexical = "lexical" // the encoder's embeddings are not all ready yet
	RankerEncoder = "encoder"
)

// SearchIndex returns the index of c's visible tools, building it once,
// and with the encoder on, which ranker it is: the lexical index until the
// embeddings of all c's tools are ready (asking for them starts their
// background build), then one that also ranks with them.
func (c *State) SearchIndex() (*search.Index, string) {
	c.indexOnce.Do(func() {
		c.docs = c.indexDocs()
		// The word-vector signal ranks some requests better whose words the
		// catalog does not use; its table is decoded at the first search.
		c.index = search.NewWith(c.docs, search.Options{Semantic: true})
		if c.embeds != nil {
			for _, d := range c.docs {
				c.embedTexts = append(c.embedTexts, search.EmbedText(d))
			}
		}
	})
	if c.embeds == nil {
		return c.index, ""
	}
	if ix := c.encIndex.Load(); ix != nil {
		return ix, RankerEncoder
	}
	vecs, ok := c.embeds.Lookup(c.embedTexts)
	if !ok {
		return c.index, RankerLexical
	}
	c.encOnce.Do(func() {
		byText := make(map[string][]float32, len(vecs))
		for i, t := range c.embedTexts {
			byText[t] = vecs[i]
		}
		embeds := c.embeds
		c.encIndex.Store(search.NewWith(c.docs, search.Options{Semantic: true, Embed: func(text string) []float32 {
			if v, ok := byText[text]; ok {
				return v
			}
			return embeds.Encode(text) // a query
		}}))
	})
	return c.encIndex.Load(), RankerEncoder
}

// indexDocs are c's visible tools as the search index sees them.
func (c *State) indexDocs() []search.Doc {
	names := slices.Sorted(maps.Keys(c.defs))
	docs := make([]search.Doc, 0, len(names))
	for _, name := range names {
		def := c.defs[name]
		e, _ := c.tools.Lookup(name)
		d := search.Doc{ID: name, Name: name, Title: def.Title, Description: def.Description, Server: e.Server,
			ServerText: c.serverText[e.Server]}
		if d.Title == "" && def.Annotations != nil {
			d.Title = def.Annotations.Title
		}
		for _, p := range SchemaParams(def.InputSchema) {
			d.Params = append(d.Params, search.Param{Name: p.Name, Description: p.Description})
		}
		docs = append(docs, d)
	}
	return docs
}
