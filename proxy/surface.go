package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/route"
	"github.com/manifold-mcp/manifold/proxy/search/embedcache"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/proxy/surface"
)

// This file holds the search surface: which tool list each client gets
// (its catalog mode), and the five meta-tools a search-mode client gets
// instead of the whole catalog. A client that loads every tool into its
// context (VS Code, Cursor, Gemini CLI, Windsurf) is served, once the
// catalog is large, search_tools, describe_tools and one call tool per
// annotation class; a client that defers tools behind a search of its own
// (Claude Code, Codex) gets the full list, since two searches stacked make
// agents skip one or search twice. The mode is decided once per session and
// kept: nothing changes a session's tools/list but a real catalog change.
// Search is call-through: the call tools route the inner call through
// startCall, so routing, policy, limits, progress, cancellation and audit are
// those of a direct call.

// Catalog modes (surface.ModeAuto, ModeFull, ModeSearch).
const (
	ModeAuto   = surface.ModeAuto
	ModeFull   = surface.ModeFull
	ModeSearch = surface.ModeSearch
)

// DefaultSearchAbove is CatalogOptions.SearchAbove's default.
const DefaultSearchAbove = surface.DefaultSearchAbove

// The meta-tools' names and limits, and the annotation classes (proxy/surface).
const (
	toolSearch           = surface.ToolSearch
	toolDescribe         = surface.ToolDescribe
	toolCallRead         = surface.ToolCallRead
	toolCallWrite        = surface.ToolCallWrite
	toolCallDestructive  = surface.ToolCallDestructive
	searchDefaultLimit   = surface.SearchDefaultLimit
	searchMaxLimit       = surface.SearchMaxLimit
	describeMaxNames     = surface.DescribeMaxNames
	searchMaxQueryLength = surface.SearchMaxQueryLength
	classRead            = surface.ClassRead
	classWrite           = surface.ClassWrite
	classDestructive     = surface.ClassDestructive
	rankerLexical        = surface.RankerLexical
	rankerEncoder        = surface.RankerEncoder
)

// metaTools are the meta-tools in the order they are listed.
var metaTools = surface.MetaTools

// CatalogOptions says which tool list each client gets (surface.Options).
type CatalogOptions = surface.Options

// IdentityMode is one entry of CatalogOptions.Identities.
type IdentityMode = surface.IdentityMode

// ClientMode is one entry of CatalogOptions.Clients.
type ClientMode = surface.ClientMode

// toolClass and classOfCallTool are the surface's (proxy/surface).
var (
	toolClass       = surface.ToolClass
	classOfCallTool = surface.ClassOfCallTool
)

// SetCatalog applies new catalog options (after a reload); sessions keep the
// mode they were given, new ones get the new rules, and the catalog is
// rebuilt (a search session's list changes with its always tools).
func (s *Server) SetCatalog(o CatalogOptions) {
	s.builder.catOpts.Store(&o)
	s.builder.alwaysWarned.Clear()
	s.rebuild()
}

// catalogOptions returns the options in force.
func (s *Server) catalogOptions() *CatalogOptions {
	if o := s.builder.catOpts.Load(); o != nil {
		return o
	}
	return &CatalogOptions{}
}

// clientIdent is who sent a request (session.Client).
type clientIdent = session.Client

// sessionMode returns the catalog mode of the client of a request on ss,
// deciding it at the session's first list or call (decide): a legacy
// session keeps the mode it was given; a modern request is decided from its
// own clientInfo every time, the same client getting the same answer. With
// decide false nothing is recorded (an audit line of a session that never
// listed says what it would get).
func (s *Server) sessionMode(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta, c *catalog, decide bool) string {
	id := clientOf(ctx, ss, meta)
	if mode, ok := s.sessions.Clients.KeptMode(ss, id); ok {
		return mode
	}
	mode := c.surf.ModeForWho(id.Name, session.IdentityFrom(ctx).Policy())
	if decide {
		// Until every server's initial start is over the catalog may
		// still grow past search_above: the mode is kept from then on.
		final := false
		select {
		case <-s.run.ready:
			final = true
		default:
		}
		if s.sessions.Clients.Record(ss, id, mode, final, func() []string { return requestCaps(ctx, ss, meta) }) {
			s.whenSessionEnds(ss, func() { s.sessions.Clients.Forget(ss) })
		}
	}
	return mode
}

// requestCaps returns the names of the capabilities the client of a request
// declared (capNames): its session's, or, for a 2026-07-28 request served
// without one (the lean HTTP path), its _meta's.
func requestCaps(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta) []string {
	if ss != nil {
		return capNames(clientCapsOf(ss))
	}
	var raw json.RawMessage
	if m, ok := era.RequestMeta(ctx); ok {
		raw = m
	} else if meta != nil {
		raw, _ = json.Marshal(meta)
	}
	if len(raw) == 0 {
		return nil
	}
	return metaClientMemo.Get(raw, metaClient).caps
}

// ClientStatus is one connected client, for status reports.
type ClientStatus struct {
	Name     string `json:"name"`
	Version  string `json:"version,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Identity is the authenticated subject of the client's requests (HTTP
	// with authentication); empty without.
	Identity string `json:"identity,omitempty"`
	// Capabilities are the client capabilities it declared that decide
	// what its servers may ask of it (capNames).
	Capabilities []string `json:"capabilities,omitempty"`
	// Session is the HTTP session id; empty over stdio and for 2026-07-28
	// clients, which have no session.
	Session string `json:"session,omitempty"`
	// Catalog is the client's catalog mode, "full" or "search"; Tools is
	// how many tools its tools/list holds now.
	Catalog string `json:"catalog"`
	Tools   int    `json:"tools"`
	// Since is when the client first listed or called; LastSeen, for a
	// 2026-07-28 client, its last request that did.
	Since    time.Time `json:"since"`
	LastSeen time.Time `json:"last_seen,omitempty"`
}

// Clients reports the clients that listed or called tools: the sessions
// open now, and the 2026-07-28 clients seen in the last ten minutes, with
// the catalog mode each got and the size of its tool list, oldest first.
// Names are shown with secrets hidden (Options.Redactor).
func (s *Server) Clients() []ClientStatus {
	c := s.catalog.Load()
	full, searchList := len(c.ToolDefs), len(c.surf.Surface().List)
	var out []ClientStatus
	s.sessions.Clients.Each(func(e *session.ClientEntry, modern bool) {
		st := ClientStatus{Name: printable(s.opts.Redactor.String(e.ID.Name)), Version: printable(s.opts.Redactor.String(e.ID.Version)),
			Protocol: printable(e.ID.Protocol), Identity: printable(e.ID.Identity), Capabilities: e.Caps, Session: e.Session, Catalog: e.Mode, Since: e.Since.UTC()}
		st.Tools = full
		if e.Mode == ModeSearch {
			st.Tools = searchList
		}
		if modern { // a client kept per request: a status field, no decision on a request
			st.LastSeen = e.LastSeen.UTC()
		}
		out = append(out, st)
	})
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ListedNames returns the exposed tool names a client gets in each mode:
// every visible tool (full), and the search surface's list (search).
func (s *Server) ListedNames() (full, search []string) {
	c := s.catalog.Load()
	c.namesOnce.Do(func() {
		c.fullNames = slices.Sorted(maps.Keys(c.ToolDefs))
		for _, t := range c.surf.Surface().List {
			c.searchNames = append(c.searchNames, t.Name)
		}
	})
	return slices.Clone(c.fullNames), slices.Clone(c.searchNames)
}

// embedCache returns the server's embedding cache when o turns the encoder
// on (made at the first such call), else nil.
func (s *Server) embedCache(o CatalogOptions) *embedcache.Cache {
	if !o.Encoder {
		return nil
	}
	s.builder.embedsMu.Lock()
	defer s.builder.embedsMu.Unlock()
	if s.builder.embeds == nil {
		s.builder.embeds = embedcache.New(o.EncoderCache, s.log)
	}
	return s.builder.embeds
}

// warnAlways logs, once per name, the always names that are not visible
// tools of c (unknown, hidden, or of a server that is not up), once the
// initial start is over.
func (s *Server) warnAlways(c *catalog) {
	select {
	case <-s.run.ready:
	default:
		return
	}
	at := c.surf.Options().AlwaysAt
	if at == "" {
		at = "catalog.always"
	}
	for _, name := range c.surf.Options().Always {
		_, visible := c.ToolDefs[name]
		switch {
		case slices.Contains(metaTools, name):
			if _, warned := s.builder.alwaysWarned.LoadOrStore(name, true); !warned {
				s.log.Warn(at+": the name is a search tool's; the server's tool of that name stays reachable through call_tool_*, but cannot be listed beside them", "tool", name)
			}
		case !visible:
			if _, warned := s.builder.alwaysWarned.LoadOrStore(name, true); !warned {
				s.log.Warn(at+": no visible tool has this name (unknown, hidden by policy, or its server is not up); it is left out of the search surface until one does. `manifold tools` lists the names", "tool", name)
			}
		default:
			s.builder.alwaysWarned.Delete(name) // warn again should it go away
		}
	}
}

// innerCallKey marks the context of a call that a call tool makes: it is
// routed as an upstream tool even when its name is a meta-tool's, and its
// audit line names the call tool (via).
type innerCallKey struct{}

// serveSurface answers a tools/call of a meta-tool in a search-mode session
// and reports whether it did; finish gets the outcome as startCall's does.
func (s *Server) serveSurface(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) bool {
	if !slices.Contains(metaTools, name) || ctx.Value(innerCallKey{}) != nil {
		return false
	}
	// A session that calls before it lists is decided on the catalog a
	// list would show it: after the initial start (bounded, as a list).
	s.waitListable(ctx, ss, clientOf(ctx, ss, nil).Name)
	c := s.catalog.Load()
	if s.sessionMode(ctx, ss, nil, c, true) != ModeSearch {
		return false // a full-mode session: the name is an upstream's, or unknown
	}
	version := requestVersion(ctx, ss)
	answer := func(raw json.RawMessage) {
		if ss != nil {
			raw = era.AdaptCallResult(raw, version)
		}
		finish(raw, nil)
	}
	args, bad := surface.Arguments(name, fields)
	if bad != nil {
		answer(bad)
		return true
	}
	switch name {
	case toolSearch:
		c := s.catalog.Load()
		answer(c.surf.SearchTools(c, c.ToolAnn, args, session.IdentityFrom(ctx).Policy()))
	case toolDescribe:
		c := s.catalog.Load()
		answer(c.surf.DescribeTools(c, c.ToolAnn, args, version, s.modernToolList, session.IdentityFrom(ctx).Policy()))
	default:
		s.callThrough(ctx, ss, name, args, fields, version, finish)
	}
	return true
}

// callThrough serves call_tool_read, _write and _destructive: the target
// must be a visible tool of the call tool's class, and is then called
// through startCall, as a direct call of it would be.
func (s *Server) callThrough(ctx context.Context, ss *mcp.ServerSession, via string, args map[string]json.RawMessage, fields map[string]json.RawMessage, version string, finish func(json.RawMessage, error)) {
	answer := func(raw json.RawMessage) {
		if ss != nil {
			raw = era.AdaptCallResult(raw, version)
		}
		finish(raw, nil)
	}
	target, inner, bad := surface.CallTarget(via, args)
	if bad != nil {
		answer(bad)
		return
	}
	c := s.catalog.Load()
	who := session.IdentityFrom(ctx).Policy()
	if _, _, ok := c.VisibleTool(target, who); !ok {
		s.waitReady(ctx) // it may belong to a server still starting
		c = s.catalog.Load()
	}
	if _, _, ok := c.VisibleTool(target, who); ok {
		class := toolClass(c.ToolAnn[target])
		if want := classOfCallTool[via]; class != want {
			if s.obs.Audits() {
				e, _ := c.Tools.Lookup(target)
				rec := observe.Record{Method: "tools/call", Exposed: target, Original: e.Original, Server: e.Server,
					Decision: "denied", Outcome: "wrong call tool", Via: via, Catalog: ModeSearch, Identity: session.IdentityFrom(ctx).Subject}
				route.RecordSession(&rec, ss)
				s.obs.Audit(rec, time.Now(), nil)
			}
			answer(surface.WrongCallTool(target, class, via))
			return
		}
	}
	innerFields := surface.InnerFields(fields, inner)
	s.startCall(context.WithValue(ctx, innerCallKey{}, via), ss, target, innerFields, func(raw json.RawMessage, err error) {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams && ctx.Err() == nil {
			// An unknown or hidden target is the call tool's argument
			// gone wrong: a result the model can act on.
			answer(surface.UnknownTarget(rpcErr.Message))
			return
		}
		finish(raw, err)
	})
}

// surfaceList is a search-mode session's tools/list answer.
func (s *Server) surfaceList(c *catalog) *mcp.ListToolsResult {
	return &mcp.ListToolsResult{Tools: slices.Clone(c.surf.Surface().List)}
}

// listCacheScope is era.ListCache for a modern tools/list on c.
func (c *catalog) listCache(ready bool) (int, string) {
	// A list that depends on who asks (who.go) is private too.
	return era.ListCache(c.Narrowed[catTools] || c.Varies[catTools] || c.surf.ListVaries(), ready)
}

// serverTexts returns, per server of g, the text the search index knows it
// by (serverText: its description, else the first sentence of its
// instructions).
func (s *Server) serverTexts(g *generation) map[string]string {
	out := make(map[string]string, len(g.backends))
	for _, b := range g.backends {
		if text := s.serverText(g, b); text != "" {
			out[b.name] = text
		}
	}
	return out
}

// listMeta is the _meta of a tools/list request, nil if none.
func listMeta(req mcp.Request) mcp.Meta {
	if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil {
		return r.Params.Meta
	}
	return nil
}

// CatalogSize is what the tool list costs a client up front, in each mode
// (catalog.CatalogSize).
type CatalogSize = cat.CatalogSize

// ServerSize is one server's share of a CatalogSize (catalog.ServerSize).
type ServerSize = cat.ServerSize

// EstimateTokens estimates the tokens of n bytes of JSON as n/4, rounded
// up (catalog.EstimateTokens).
func EstimateTokens(n int) int { return cat.EstimateTokens(n) }

// CatalogSize measures the current catalog's tool lists as a client of the
// latest initialize-era version gets them.
func (s *Server) CatalogSize() CatalogSize {
	c := s.catalog.Load()
	c.sizeOnce.Do(func() { c.sized = c.size() })
	out := c.sized
	out.Servers = slices.Clone(out.Servers)
	return out
}

func (c *catalog) size() CatalogSize {
	servers := make([]string, 0, len(c.gen.backends))
	for _, b := range c.gen.backends {
		servers = append(servers, b.name)
	}
	sf := c.surf.Surface()
	return c.Snapshot.Size(servers, sf.List, sf.Meta)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printable makes a client's own words safe to show on a terminal: control
// characters become spaces, and at most 100 runes are kept.
func printable(s string) string {
	r := []rune(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s))
	if len(r) > 100 {
		r = append(r[:99], '…')
	}
	return string(r)
}

// searchLead and summaryLead open the instructions of a session in search
// and in full mode (proxy/surface).
const (
	searchLead  = surface.SearchLead
	summaryLead = surface.SummaryLead
)

// leadFor is the lead of the instructions for a client about to list
// (surface.State.LeadFor).
func (s *Server) leadFor(client string) string {
	return s.catalog.Load().surf.LeadFor(client)
}
