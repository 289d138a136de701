package proxy

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// This file writes Manifold's own instructions: a summary, one line per
// server, of what each server behind the one entry is for. Claude Code keeps
// 2 KB of a server's instructions and Codex makes them the description of the
// one namespace all of Manifold's tools land in, so the summary is what their
// tool search reads to find a server's tools. It is always shorter than
// InstructionsBudget, and it is the same bytes for the same config, policy
// and servers: across calls, restarts (a server not yet up is described from
// its cached catalog) and reloads that change nothing.

// InstructionsBudget bounds Manifold's instructions, in bytes: under the
// 2,048 that Claude Code keeps, with room to spare for a client that counts
// otherwise (catalog.InstructionsBudget).
const InstructionsBudget = cat.InstructionsBudget

// serverAbout is what a server said about itself (in its initialize result)
// and its tools, kept with the listing (and in the cache file) so that a
// server not yet up is described as it was when last up (supervise.About).
type serverAbout = supervise.About

// Bounds on what a server said of itself, as kept and cached: its full
// instructions only matter while they fit in the summary's budget
// (supervise.MaxAboutInstructions is 2 * InstructionsBudget).
const maxAboutInstructions = supervise.MaxAboutInstructions

// The text helpers of the summary are the catalog's (proxy/catalog's
// summary.go): bound, fallbackText, plainLine and firstSentence, with cut.
var (
	bound         = cat.Bound
	fallbackText  = cat.FallbackText
	plainLine     = cat.PlainLine
	firstSentence = cat.FirstSentence
)

// instructions is Manifold's own instructions for a session of client
// (its clientInfo name), under the lead of the catalog mode it would get
// (leadFor); it waits (Options.FirstListWait, by client) for servers whose catalog is unknown, and
// for those that opted in to their full instructions as long as before
// (bounded by each one's startup timeout).
func (s *Server) instructions(ctx context.Context, ss *mcp.ServerSession, client string) string {
	s.waitListable(ctx, ss, client)
	for _, b := range s.gen.Load().backends {
		if !b.cfg.Instructions {
			continue
		}
		wait := b.cfg.Upstream.StartupTimeout
		if wait == 0 {
			wait = 30 * time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-b.Started():
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return s.summaryFor(s.leadFor(client), session.IdentityFrom(ctx).Policy())
}

// summary renders the instructions summary under lead (a search-mode
// session says there how to find tools): one line per server in config
// order, "- NAME: TEXT (tools PREFIX__*)", where TEXT is the server's
// description key, else the first sentence of its initialize instructions,
// else its title and a few tool names. Servers whose every tool is hidden
// are left out. Then, for the servers that opted in (instructions = true),
// their whole instructions, each only if it fits entirely. Never longer than
// InstructionsBudget; deterministic.
func (s *Server) summary(lead string) string { return s.summaryFor(lead, policy.Identity{}) }

// summaryFor is summary for the identity who: the servers whose every tool
// is hidden for who are left out.
func (s *Server) summaryFor(lead string, who policy.Identity) string {
	g := s.gen.Load()
	rules := s.rules.Load()
	red := s.opts.Redactor
	var lines []cat.SummaryLine
	var full []string // "## NAME\n\nTEXT" of the servers that opted in, secrets not masked yet
	for _, b := range g.backends {
		a := b.AboutNow()
		if s.instructionsHeld(b.name) {
			a.Instructions = ""
		}
		visible := s.visibleToolNames(rules, b, a.Tools, who)
		if a.Known && len(a.Tools) > 0 && len(visible) == 0 {
			continue // every tool hidden: the server is not there for the client
		}
		text := s.serverText(g, b)
		if text == "" {
			title := a.Title
			if title == "" {
				title = a.Name
			}
			text = fallbackText(red.String(title), visible)
		}
		tools := "tools under their own names"
		if b.cfg.Prefix != "" {
			tools = "tools " + b.cfg.Prefix + naming.Separator + "*"
		}
		lines = append(lines, cat.SummaryLine{Name: b.name, Text: text, Tools: tools})
		if b.cfg.Instructions {
			if ins := strings.TrimSpace(a.Instructions); ins != "" {
				full = append(full, "## "+b.name+"\n\n"+ins)
			}
		}
	}
	return cat.Summary(lead, lines, full, red)
}

// serverText says in one line what b's server is for: its description key
// in g, else the first sentence of its initialize instructions (live, or
// cached while it is not up), with escapes and control characters removed
// and the config's secrets masked; "" when neither says anything. It is the
// text of the server's line in the summary, and what search matches as the
// server's description.
func (s *Server) serverText(g *generation, b *backend) string {
	if text := plainLine(s.opts.Redactor.String(g.description(b))); text != "" {
		return text
	}
	// The sentence, not the whole text, is masked, and only its start (far
	// more than a line shows): a secret cut at the sentence's end would be
	// one with ". " or a blank line in it.
	if s.instructionsHeld(b.name) {
		return ""
	}
	return plainLine(s.opts.Redactor.String(bound(firstSentence(b.AboutNow().Instructions), maxSentence)))
}

// instructionsHeld reports whether the server's instructions await review
// under pin = "quarantine" (pinned.go): they are then left out of
// Manifold's instructions and of search.
func (s *Server) instructionsHeld(server string) bool {
	m := s.builder.heldInstr.Load()
	return m != nil && (*m)[server]
}

// maxSentence bounds the first sentence of a server's instructions before
// its secrets are masked: several times what a line of the summary shows.
const maxSentence = 1024

// visibleToolNames returns the names (as the server knows them, sorted) of
// tools that the policy lets clients see; the same decision as the catalog's
// (rebuild), so a cached listing gives the live one's answer.
func (s *Server) visibleToolNames(rules *policy.Rules, b *backend, tools []*mcp.Tool, who policy.Identity) []string {
	var out []string
	for _, t := range tools {
		if t == nil {
			continue
		}
		exposed := naming.ExposeLimit(b.cfg.Prefix, t.Name, s.opts.MaxNameLength)
		it := policy.Item{Kind: policy.Tool, Server: b.name, Original: t.Name, Exposed: exposed,
			Annotations: rules.Annotations(b.name, t.Name, toPolicyAnnotations(t.Annotations)),
			Full:        naming.Full(b.cfg.Prefix, t.Name), Who: who}
		if o, ok := rules.Override(b.name, t.Name); ok && o.Name != "" {
			it.Exposed, it.Qualified = o.Name, exposed
		}
		if rules.Decide(it).Visible {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
