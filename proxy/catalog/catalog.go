package catalog

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// Snapshot is the merged, namespaced view of every upstream's lists. It is
// immutable once built (Builder) and swapped whole (the root's
// Server.catalog). Its exported fields are read-only.
type Snapshot struct {
	URIs *naming.URIMap

	Tools    *naming.Table
	ToolDefs map[string]*mcp.Tool // exposed name -> exposed definition

	Prompts    *naming.Table
	PromptDefs map[string]*mcp.Prompt

	Resources map[string]*mcp.Resource // outward URI -> exposed definition
	ResOwner  map[string]string        // outward URI -> server
	// listedAs maps an outward URI to the URI its server listed, where that
	// differs from the canonical form the policy decided on (case, a
	// trailing "/", "localhost"...): a read of a listed resource reaches its
	// server spelled as the server itself spelled it.
	listedAs map[string]string

	Templates map[string]*mcp.ResourceTemplate // outward template -> exposed definition
	TmplOwner map[string]string                // outward template -> server

	// listed are the resources and templates as the servers listed them,
	// hidden ones too, each with its decision: for Entries.
	listed []Entry

	Rules     *policy.Rules
	decisions map[string]policy.Decision // exposed tool or prompt name -> its decision (hidden ones too)

	// Who says that a rule has a who list, so that a decision depends on
	// who asks (who.go): decisions are then those of policy.Widest (what
	// someone may see, registered with the SDK), and items holds what
	// each visible item is decided on ("tool\x00NAME", "prompt\x00NAME",
	// "resource\x00URI", "template\x00TEMPLATE"), for the decision of each
	// identity. Varies says, per list (indexed as relay.CatalogKind:
	// tools, prompts, resources), whether an item's visibility depends on
	// who asks (its list is then cacheScope "private").
	Who                              bool
	items                            map[string]policy.Item
	Varies                           [NumKinds]bool
	VariesResources, VariesTemplates bool
	views                            sync.Map // session.Identity.Key() -> *View
	nviews                           atomic.Int64
	headerOnce                       sync.Once
	headerTools                      map[string]bool // set once by HeaderBound

	// unlisted are the tools left out of the lists (the check given to
	// Builder.Build); listNames are the listed names, sorted, worked out
	// at the first list (toollist.go).
	unlisted  map[string]error
	listOnce  sync.Once
	listNames []string

	// pin is what the pin check found (pinned.go); pinHeld maps "tool\x00"
	// or "prompt\x00" and an exposed name that the check holds for review
	// to the error a call or get of it gets.
	pin     *Pins
	pinHeld map[string]string
	ToolAnn map[string]*policy.Annotations

	// Narrowed says, per kind, whether the policy hid an item of the list:
	// a modern client's list is then cacheScope "private".
	Narrowed                             [NumKinds]bool
	NarrowedResources, NarrowedTemplates bool

	// modernTools caches the tool definitions rewritten for modern clients
	// (JSON Schema 2020-12), by the definition registered with the SDK.
	modernTools sync.Map // *mcp.Tool -> *mcp.Tool
}

// The lists of Varies and Narrowed, in the order of relay.CatalogKind
// (which the catalog does not import: rooms of one floor do not import
// each other).
const (
	kindTools = iota
	kindPrompts
	kindResources
	// NumKinds is the number of lists a client is notified about.
	NumKinds
)

// VisibleTool returns the entry and the decision for id of an exposed tool
// name that exists and is visible to id.
func (c *Snapshot) VisibleTool(name string, id policy.Identity) (naming.Entry, policy.Decision, bool) {
	e, ok := c.Tools.Lookup(name)
	if !ok {
		return e, policy.Decision{}, false
	}
	if _, listed := c.ToolDefs[name]; !listed {
		return e, policy.Decision{}, false
	}
	d := c.Decision("tool\x00"+name, id)
	return e, d, d.Visible
}

// VisiblePrompt is visibleTool for prompts.
func (c *Snapshot) VisiblePrompt(name string, id policy.Identity) (naming.Entry, policy.Decision, bool) {
	e, ok := c.Prompts.Lookup(name)
	if !ok {
		return e, policy.Decision{}, false
	}
	if _, listed := c.PromptDefs[name]; !listed {
		return e, policy.Decision{}, false
	}
	d := c.Decision("prompt\x00"+name, id)
	return e, d, d.Visible
}

// ResourceAllowed decides, for id, a read, subscribe or completion of an
// outward URI of server (original is the server's own URI).
func (c *Snapshot) ResourceAllowed(server, original, outward string, id policy.Identity) policy.Decision {
	return c.Rules.Decide(policy.Item{Kind: policy.Resource, Server: server, Original: original, Exposed: outward, Who: id})
}

// ResolveResource canonicalises a resource URI from a client
// (policy.CanonicalURI) and finds its owner: the one form that routing,
// policy, subscriptions and explain use, and that the upstream receives
// (original), so that what was decided is what is read. A URI without a
// canonical form is a protocol error that says why; ok is false when no
// server owns the URI.
func (c *Snapshot) ResolveResource(uri string) (server, original, outward string, ok bool, err error) {
	outward, err = policy.CanonicalURI(uri)
	if err != nil {
		return "", "", "", false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: err.Error() + "; send the resource's URI as resources/list or a template gives it"}
	}
	server, original, ok = c.ResourceOwner(outward)
	if raw, listed := c.listedAs[outward]; listed && ok {
		original = raw
	}
	return server, original, outward, ok, nil
}

// UpstreamResource applies the resource policy and the URI rewrite to a
// URI that server put in content (a resource link, an embedded resource, a
// read result's entry): it returns the URI for clients, canonical where it
// can be, and false when a read of it would be refused, so the content must
// be withheld (naming.FilterContentResources). Without rules that can hide
// the server's resources only the rewrite applies.
func (c *Snapshot) UpstreamResource(server, uri string, id policy.Identity) (string, bool) {
	canon, err := policy.CanonicalURI(uri)
	if !c.Rules.GuardsResources(server) {
		if err != nil {
			return c.URIs.Outward(server, uri), true
		}
		return c.URIs.Outward(server, canon), true
	}
	if err != nil {
		return "", false // fail closed: no rule can be said to allow it
	}
	out := c.URIs.Outward(server, canon)
	return out, c.ResourceAllowed(server, canon, out, id).Visible
}

// FiltersResources reports whether content from server needs
// UpstreamResource: its URIs are rewritten, or a rule can hide them.
func (c *Snapshot) FiltersResources(server string) bool {
	return c.URIs.Rewrites(server) || c.Rules.GuardsResources(server)
}

// Empty is the catalog of no lists, with the URI rewriting uris: the
// catalog in force before the first build.
func Empty(uris *naming.URIMap) *Snapshot {
	return &Snapshot{
		URIs:       uris,
		Tools:      mustTable(nil),
		ToolDefs:   map[string]*mcp.Tool{},
		Prompts:    mustTable(nil),
		PromptDefs: map[string]*mcp.Prompt{},
		Resources:  map[string]*mcp.Resource{},
		ResOwner:   map[string]string{},
		listedAs:   map[string]string{},
		Templates:  map[string]*mcp.ResourceTemplate{},
		TmplOwner:  map[string]string{},
		decisions:  map[string]policy.Decision{},
		items:      map[string]policy.Item{},
		ToolAnn:    map[string]*policy.Annotations{},
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

// HeldByPin reports whether d hides an item because its pinned definition
// awaits review (the decision the Builder puts in the policy's place).
func HeldByPin(d policy.Decision) bool {
	return !d.Visible && d.Rule == "pin"
}

// Entries returns every tool, prompt, resource and resource template the
// servers listed, in that order, by exposed name (or URI) within a kind, each
// with the policy's verdict.
func (c *Snapshot) Entries() []Entry {
	var out []Entry
	for _, e := range c.Tools.Entries() {
		d := c.decisions["tool\x00"+e.Exposed]
		en := Entry{Kind: "tool", Exposed: e.Exposed, Server: e.Server, Original: e.Original,
			Visible: d.Visible, Held: HeldByPin(d), ReadOnly: c.ToolAnn[e.Exposed].ReadOnlyHint(), Verdict: d.String()}
		if def := c.ToolDefs[e.Exposed]; def != nil {
			en.Description = def.Description
		}
		out = append(out, en)
	}
	for _, e := range c.Prompts.Entries() {
		d := c.decisions["prompt\x00"+e.Exposed]
		en := Entry{Kind: "prompt", Exposed: e.Exposed, Server: e.Server, Original: e.Original, Visible: d.Visible, Held: HeldByPin(d), Verdict: d.String()}
		if def := c.PromptDefs[e.Exposed]; def != nil {
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

// ExplainAs says whether who sees name (an exposed tool or prompt name, a
// template, or a resource URI as clients see it), and which rule decided,
// by the decision that lists and calls use for who.
func (c *Snapshot) ExplainAs(name string, who policy.Identity) (string, error) {
	as := "as " + who.String() + ": "
	if e, ok := c.Tools.Lookup(name); ok && e.Exposed == name {
		d := c.Decision("tool\x00"+name, who)
		return fmt.Sprintf("%stool %s (server %q, original %q): %s", as, name, e.Server, e.Original, d.String()), nil
	}
	if e, ok := c.Prompts.Lookup(name); ok && e.Exposed == name {
		d := c.Decision("prompt\x00"+name, who)
		return fmt.Sprintf("%sprompt %s (server %q, original %q): %s", as, name, e.Server, e.Original, d.String()), nil
	}
	for _, e := range c.listed {
		if e.Kind == "template" && e.Exposed == name {
			verdict := e.Verdict
			if c.Who && e.Visible {
				verdict = c.Decision("template\x00"+name, who).String()
			}
			return fmt.Sprintf("%stemplate %s (server %q, original %q): %s", as, name, e.Server, e.Original, verdict), nil
		}
	}
	if strings.Contains(name, ":") {
		server, original, uri, ok, err := c.ResolveResource(name)
		if err != nil {
			return "", fmt.Errorf("%q: %w", name, err)
		}
		if ok {
			d := c.ResourceAllowed(server, original, uri, who)
			return fmt.Sprintf("%sresource %s (server %q, original %q): %s", as, uri, server, original, d.String()), nil
		}
	}
	return "", fmt.Errorf("%q is not a tool or prompt that any server listed, nor a resource URI of a server; run `manifold tools` to see the names", name)
}

// Explain says what the policy decides for name (an exposed tool or prompt
// name, or a resource URI as clients see it) for everyone, and which rule
// (file:line) made the decision.
func (c *Snapshot) Explain(name string) (string, error) {
	for _, e := range c.Entries() {
		if e.Exposed == name {
			return fmt.Sprintf("%s %s (server %q, original %q): %s", e.Kind, e.Exposed, e.Server, e.Original, e.Verdict), nil
		}
	}
	if strings.Contains(name, ":") {
		server, original, uri, ok, err := c.ResolveResource(name)
		if err != nil {
			return "", fmt.Errorf("%q: %w", name, err)
		}
		if ok {
			d := c.ResourceAllowed(server, original, uri, policy.Identity{})
			return fmt.Sprintf("resource %s (server %q, original %q): %s", uri, server, original, d.String()), nil
		}
	}
	return "", fmt.Errorf("%q is not a tool or prompt that any server listed, nor a resource URI of a server; run `manifold tools` to see the names", name)
}

// ModernToolList is a tools/list answer for a modern client: the same tools,
// with input and output schemas in JSON Schema 2020-12 (era.Schema). Each
// definition is rewritten once per catalog; what cannot be translated is
// sent as the upstream wrote it and logged to log once per process (warned
// holds what was logged, kept by the caller across catalogs).
func (c *Snapshot) ModernToolList(res *mcp.ListToolsResult, warned *sync.Map, log *slog.Logger) *mcp.ListToolsResult {
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
		if _, seen := warned.LoadOrStore(t.Name+"\x00"+strings.Join(problems, "\x00"), true); len(problems) > 0 && !seen {
			log.Warn("tool schema not fully translated to JSON Schema 2020-12 for modern clients; the rest is sent as the server wrote it",
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

// ResourceOwner finds the server that owns a canonical outward resource URI
// (see resolveResource): by the URI's prefix, else by the listed resources
// and templates of the unprefixed servers. The original it returns is
// canonical too.
func (c *Snapshot) ResourceOwner(uri string) (server, original string, ok bool) {
	if server, original, ok := c.URIs.Inward(uri); ok {
		return server, original, true
	}
	if owner, ok := c.ResOwner[uri]; ok {
		return owner, uri, true
	}
	for tmpl, owner := range c.TmplOwner {
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
