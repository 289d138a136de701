package proxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/redact"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/pin"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// This file pins the servers' definitions (README "Pinned definitions"):
// every rebuild fingerprints what each server listed, as the server wrote
// it (before overrides), and compares it with the approved lock
// (Options.Lock). A definition that is new or changed since, or whose text
// is instruction-like or names another server's tool, awaits a person's
// review: under PinQuarantine it is left out of the catalog (lists, search,
// calls by name get an error that says so), under PinWarn it stays and is
// flagged. Both are logged with a diff and reported in ServerStatus.Review.

// PinMode says what happens to a server's definitions that await review.
type PinMode string

// Pin modes. The zero mode is PinOff.
const (
	PinOff        PinMode = ""
	PinWarn       PinMode = "warn"
	PinQuarantine PinMode = "quarantine"
)

// PinReview is one definition that awaits a person's review
// (catalog.PinReview).
type PinReview = cat.PinReview

// secretFinding is the finding of a definition that holds a known secret
// of the config: a server that echoes a credential it was given into what
// the model reads is worth a person's look, and the lock file and every
// output show the definition with it masked.
const secretFinding = "contains a configured secret (a value of the config's env, headers, ${env:…} or ${file:…}), shown and stored as " + redact.Mask + "; the fingerprint is over the true text, so a change of the value is still a change"

// SetLock replaces the approved definitions (after `manifold approve`
// rewrote the lock file); the catalog is rebuilt, so an approved
// definition is served again at once.
//
// A definition trusted on first use stays in force until a lock that has
// an entry of its key is set: l may have been read before the trust was
// recorded (a reload reads the lock file, then reloads the servers, which
// may see a server for the first time), and dropping the entry would make
// its server unknown again, so that a change since would be trusted as a
// first sight, or, with some of the server's entries in l, the rest held as
// new. Once a lock with the entry was set, one without it drops it (a
// person deleted the line).
func (s *Server) SetLock(l *pin.Lock) {
	s.builder.catMu.Lock()
	var keep []pin.Entry
	for k, e := range s.builder.unconfirmed {
		if _, ok := l.Lookup(k); ok {
			delete(s.builder.unconfirmed, k)
		} else {
			keep = append(keep, e)
		}
	}
	if len(keep) > 0 {
		l = l.With(keep...)
	}
	s.builder.pins.Store(l)
	s.builder.catMu.Unlock()
	s.rebuild()
}

// Lock returns the approved definitions in force, with those trusted on
// first use since.
func (s *Server) Lock() *pin.Lock { return s.builder.pins.Load() }

// pinSnapshot is what the pin check needs of a server besides its lists,
// taken in the same critical section as them.
type pinSnapshot struct {
	instructions string
	// listed: the lists are a listing, not the empty lists of a server not
	// listed yet. A server the lock has nothing of is trusted on first use
	// only once it is listed: its instructions alone (known at connect)
	// would make it "known", and then its whole listing "new".
	listed bool
}

// checkPins compares every pinned server's definitions in snap (with its
// instructions in pinned) with the lock, trusting on first use the clean
// definitions of a server the lock has nothing of, once it is listed.
// tools is the catalog's name table, for exposed names. Called with catMu
// held.
func (s *Server) checkPins(g *generation, snap map[string]supervise.Lists, pinned map[string]pinSnapshot, tools *naming.Table) *cat.Pins {
	ps := &cat.Pins{Held: map[pin.Key]string{}, Reviews: map[string][]PinReview{}, HeldInstr: map[string]bool{}}
	lock := s.builder.pins.Load()
	// The other servers' names are looked for only in a definition that is
	// not approved as it is: made at the first such definition.
	var othersOf map[string]pin.Names
	var ownNames map[string]map[string]bool
	shadows := func() {
		if othersOf != nil {
			return
		}
		servers := make([]string, 0, len(g.backends))
		for _, b := range g.backends {
			servers = append(servers, b.name)
		}
		othersOf, ownNames = shadowNames(servers, snap, tools)
	}
	prevDefs := s.builder.pinCache
	s.builder.pinCache = make(map[*backend]*pinCache, len(prevDefs))
	var trusted []pin.Entry
	for _, b := range g.backends {
		mode := g.pin[b.name] // the mode of this generation (a kept backend's cfg is older)
		if mode == PinOff {
			continue
		}
		known := lock.Has(b.name)
		if !known && !pinned[b.name].listed {
			continue // nothing to trust yet, and nothing approved to hold against
		}
		for _, d := range s.pinDefs(b, listsOf(snap[b.name]), pinned[b.name].instructions, prevDefs[b]) {
			key := pin.Key{Server: b.name, Kind: d.def.Kind, Name: d.def.Name}
			entry, approved := lock.Lookup(key)
			if approved && entry.Sum == d.sum {
				continue
			}
			shadows()
			others := othersOf[b.name]
			// Findings quote the text, which may hold a secret: masked.
			var findings []string
			if d.def.Masked() {
				findings = append(findings, secretFinding)
			}
			for _, f := range pin.Scan(d.def) {
				findings = append(findings, s.opts.Redactor.Known(f.String()))
			}
			for _, f := range pin.Shadows(d.def, others, ownNames[b.name]) {
				findings = append(findings, s.opts.Redactor.Known(f.String()))
			}
			if !known && len(findings) == 0 {
				trusted = append(trusted, pin.EntryOf(b.name, d.def))
				continue
			}
			diff := pin.Diff(entry.Canonical, d.def.Shown(), 2)
			if approved && entry.Canonical == d.def.Shown() {
				diff = "  (no change in what can be shown: the change is in a secret value of the config, shown as " + redact.Mask + ")\n" + diff
			}
			r := PinReview{Kind: string(d.def.Kind), Name: d.def.Name, Change: "new", Findings: findings,
				Diff: diff, Held: mode == PinQuarantine,
				Sum: d.sum, Definition: d.def.Shown(), Masked: d.def.Masked()}
			switch {
			case approved:
				r.Change = "changed"
			case !known:
				r.Change = "flagged"
			}
			if d.def.Kind == pin.Tool {
				r.Exposed, _ = tools.Exposed(b.name, d.def.Name)
			}
			ps.Reviews[b.name] = append(ps.Reviews[b.name], r)
			s.logReview(b.name, r)
			if r.Held {
				if d.def.Kind == pin.Instructions {
					ps.HeldInstr[b.name] = true
				}
				what := fmt.Sprintf("%s %q of server %q", d.def.Kind, cmpOr(r.Exposed, d.def.Name), b.name)
				if d.def.Kind == pin.Instructions {
					what = fmt.Sprintf("the instructions of server %q", b.name)
				}
				ps.Held[key] = fmt.Sprintf("%s is %s since a person last approved its definition, and awaits review (pin = \"quarantine\"); nothing was executed. To review and accept it, run `%s` on the machine that runs manifold",
					what, r.Change, r.Approve(b.name))
			}
		}
	}
	if len(trusted) > 0 {
		lock = lock.With(trusted...)
		s.builder.pins.Store(lock)
		if s.builder.unconfirmed == nil {
			s.builder.unconfirmed = make(map[pin.Key]pin.Entry)
		}
		for _, e := range trusted {
			s.builder.unconfirmed[e.Key] = e
		}
		servers := map[string]bool{}
		for _, e := range trusted {
			servers[e.Server] = true
		}
		for name := range servers {
			s.log.Info("pinned definitions: first sight of the server; its definitions are recorded as approved (trust on first use)", "server", name)
		}
		if s.opts.OnTrust != nil {
			s.opts.OnTrust(trusted)
		}
	}
	return ps
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// logReview logs a review once per definition and fingerprint, at warn,
// with its diff.
func (s *Server) logReview(server string, r PinReview) {
	if _, seen := s.builder.pinLogged.LoadOrStore(server+"\x00"+r.Kind+"\x00"+r.Name+"\x00"+r.Sum, true); seen {
		return
	}
	what := "served, flagged (pin = \"warn\")"
	if r.Held {
		what = "hidden until approved (pin = \"quarantine\")"
	}
	s.log.Warn("pinned definitions: a definition awaits review ("+r.Change+"); "+what,
		"server", server, "kind", r.Kind, "name", r.Name, "findings", r.Findings,
		"approve", r.Approve(server), "diff", "\n"+s.opts.Redactor.String(r.Diff))
}

// pinDef is one definition of a server for the pin check, with its
// fingerprint (pin.Def.Sum, which masking leaves as it is).
type pinDef struct {
	def pin.Def
	sum string
}

// pinCache is one server's definitions as pinDefs last made them, before
// masking, and the lists and instructions they were made of: a server whose
// lists are the same (the same definitions, by identity: a listing is never
// changed in place, a new one is new values) is not fingerprinted again at
// each rebuild, which would encode and canonicalise every definition of
// every server each time one server joins.
type pinCache struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	templates []*mcp.ResourceTemplate
	ins       string
	defs      []pinDef        // not masked
	failed    []pinDefFailure // what could not be fingerprinted
}

// pinDefFailure is a definition that could not be fingerprinted.
type pinDefFailure struct {
	kind pin.Kind
	name string
	err  error
}

// of reports whether c was made of l and ins.
func (c *pinCache) of(l lists, ins string) bool {
	return c != nil && c.ins == ins && slices.Equal(c.tools, l.tools) &&
		slices.Equal(c.prompts, l.prompts) && slices.Equal(c.templates, l.templates)
}

// pinDefs returns b's definitions in l (and its instructions ins) in canonical
// form, as the server wrote them, masked with the redactor in force. A
// definition that cannot be encoded is logged and left out of the check, not
// trusted: it is not in the lock, so it is held as new once the server has
// entries. prev is what the last rebuild made of b, reused when l and ins
// are what it was made of; what is made is kept in s.builder.pinCache for the next.
// Called with catMu held.
func (s *Server) pinDefs(b *backend, l lists, ins string, prev *pinCache) []pinDef {
	c := prev
	if !c.of(l, ins) {
		c = &pinCache{tools: l.tools, prompts: l.prompts, templates: l.templates, ins: ins}
		add := func(kind pin.Kind, name string, v any) {
			raw, err := json.Marshal(v)
			if err == nil {
				var d pin.Def
				if d, err = pin.NewDef(kind, name, raw); err == nil {
					c.defs = append(c.defs, pinDef{d, d.Sum()})
					return
				}
			}
			c.failed = append(c.failed, pinDefFailure{kind, name, err})
		}
		for _, t := range l.tools {
			if t != nil {
				add(pin.Tool, t.Name, t)
			}
		}
		for _, p := range l.prompts {
			if p != nil {
				add(pin.Prompt, p.Name, p)
			}
		}
		for _, t := range l.templates {
			if t != nil {
				add(pin.Template, t.URITemplate, t)
			}
		}
		if strings.TrimSpace(ins) != "" {
			d := pin.InstructionsDef(ins)
			c.defs = append(c.defs, pinDef{d, d.Sum()})
		}
	}
	s.builder.pinCache[b] = c
	for _, f := range c.failed {
		s.log.Warn("pinned definitions: cannot fingerprint a definition", "server", b.name, "kind", f.kind, "name", s.opts.Redactor.Known(f.name), "err", s.opts.Redactor.KnownError(f.err))
	}
	// Masked each time: the redactor learns the secrets of a reloaded
	// config.
	out := make([]pinDef, len(c.defs))
	for i, d := range c.defs {
		out[i] = pinDef{d.def.Mask(s.opts.Redactor.JSON), d.sum}
	}
	return out
}

// shadowNames returns, per server, the tool names of the other servers that
// pin.Shadows looks for, and the server's own names (original and exposed),
// which never count. An exposed name counts as the name clients see only
// when it differs from the tool's own name (a prefix, an override, a
// shortening): the exposed names of a server with prefix "" are its tools'
// own names, and another server having a tool of the same name is a
// coincidence of common names (two servers' "search"), not a copy of what
// clients see; such a name counts as an original one, only when distinctive.
func shadowNames(servers []string, snap map[string]supervise.Lists, tools *naming.Table) (map[string]pin.Names, map[string]map[string]bool) {
	type owned struct{ name, whose, server string }
	var exposedNames, originalNames []owned
	own := map[string]map[string]bool{}
	for _, server := range servers {
		names := map[string]bool{}
		own[server] = names
		for _, t := range snap[server].Tools {
			if t == nil {
				continue
			}
			names[t.Name] = true
			whose := fmt.Sprintf("tool %q of server %q", t.Name, server)
			if exposed, ok := tools.Exposed(server, t.Name); ok {
				names[exposed] = true
				if exposed != t.Name {
					exposedNames = append(exposedNames, owned{exposed, whose, server})
				}
			}
			if pin.Distinctive(t.Name) {
				originalNames = append(originalNames, owned{t.Name, whose, server})
			}
		}
	}
	others := make(map[string]pin.Names, len(servers))
	for _, server := range servers {
		n := pin.Names{Exposed: map[string]string{}, Original: map[string]string{}}
		for _, o := range exposedNames {
			if o.server != server {
				n.Exposed[o.name] = o.whose
			}
		}
		for _, o := range originalNames {
			if _, taken := n.Original[o.name]; !taken && o.server != server {
				n.Original[o.name] = o.whose
			}
		}
		others[server] = n
	}
	return others, own
}
