package policy

import (
	"cmp"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the kind of an [Item].
type Kind int

// Kinds of items. The zero Kind is invalid, and [Rules.Decide] hides it.
const (
	Tool Kind = iota + 1
	Prompt
	Resource
	// Template is a resource template, matched as written: "{path}" is
	// ordinary text to a glob. A read of a URI made from a template is
	// decided as a Resource, by the URI.
	Template
)

func (k Kind) String() string {
	switch k {
	case Tool:
		return "tool"
	case Prompt:
		return "prompt"
	case Resource:
		return "resource"
	case Template:
		return "resource template"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Annotations are a tool's annotations (MCP ToolAnnotations). A nil hint is
// absent, which the protocol defines as readOnlyHint false, destructiveHint
// true, idempotentHint false and openWorldHint true.
type Annotations struct {
	Title       string
	ReadOnly    *bool
	Destructive *bool
	Idempotent  *bool
	OpenWorld   *bool
}

// ReadOnlyHint returns the readOnlyHint of a, false when a is nil or the
// hint absent.
func (a *Annotations) ReadOnlyHint() bool {
	return a != nil && a.ReadOnly != nil && *a.ReadOnly
}

// Item is what a decision is about: one tool, prompt, resource or resource
// template of one upstream server.
type Item struct {
	Kind Kind
	// Who is the identity that asks; the zero Identity is anonymous, and
	// only the rules for everyone apply to it.
	Who Identity
	// Server is the server's key in proxy.toml.
	Server string
	// Original is the name (tools, prompts), URI (resources) or URI template
	// (templates) as the upstream server knows it; the server's allow and
	// deny lists match it.
	Original string
	// Exposed is the name, URI or template that clients see; the policy
	// files' rules match it. If empty, Original.
	Exposed string
	// Qualified, for a tool that an override renamed, is the name it would
	// be exposed under without the rename (its prefix, "__" and its original
	// name). The policy files' rules match it as well as Exposed, so that a
	// rename never escapes a rule written for the server's names. If empty,
	// only Exposed is matched.
	Qualified string
	// Full, for a tool or prompt, is its full name before any shortening to
	// the name budget: the prefix, "__" and the original name, with the
	// characters outside [A-Za-z0-9_-] replaced by "_". The policy files'
	// rules match it as well as Exposed and Qualified, so that a name cut
	// to fit (a head and a hash) never escapes a rule written for the whole
	// name or for its prefix's namespace. If empty, it is not matched.
	Full string
	// Annotations are the tool's annotations as the upstream listed them, or
	// as [Rules.Annotations] returned them (applying overrides twice changes
	// nothing). Only tools have them.
	Annotations *Annotations
}

// Rules is a complete policy: proxy.toml's global and per-server settings
// and the policy files' rules. A Rules is not modified once built, so it is
// safe for concurrent use; a reload builds a new one. The nil *Rules allows
// everything and overrides nothing.
//
// Every Source field is where the setting was written, as "file:line".
type Rules struct {
	// ReadOnly puts every server in read-only mode (top-level read_only).
	ReadOnly       bool
	ReadOnlySource string

	// LabelResults labels the text results of every server as data
	// (top-level label_results), unless the server's own setting says
	// otherwise.
	LabelResults       bool
	LabelResultsSource string

	// Servers holds the rules of each server by its key; a server absent
	// from the map has none.
	Servers map[string]*ServerRules

	// TableRules are proxy.toml's own [rules.NAME] tables, in document
	// order: rules like the policy files', decided before them, so that a
	// policy file can hide more than they do but never less.
	TableRules []Rule

	// FileRules are the policy files' rules, file by file in load order,
	// each file's in document order.
	FileRules []Rule
}

// ServerRules are one server's settings in proxy.toml.
type ServerRules struct {
	// Key is the path of the server's table, such as "servers.files" or
	// "plugins.iban", for explanations. If empty, "servers." + its name.
	Key string

	// Tools, Prompts and Resources filter the server's items by their
	// original names and URIs; Resources also filters its templates.
	Tools, Prompts, Resources List

	// ReadOnly exposes only the server's tools whose effective readOnlyHint
	// is true.
	ReadOnly       bool
	ReadOnlySource string

	// IgnoreAnnotations discards the server's own tool hints (annotations =
	// "ignore"), so only Overrides can make a tool read-only. The display
	// title is kept.
	IgnoreAnnotations       bool
	IgnoreAnnotationsSource string

	// Overrides correct the server's tools, by original tool name.
	Overrides map[string]Override

	// Confirm makes every call of the server's tools wait for a person's
	// approval (confirm = true, with confirm_reason); an override's Confirm
	// is more specific and wins.
	Confirm Confirmation
	// LabelResults, when not nil, says whether the text that the server
	// returns is labelled as data (label_results), over Rules.LabelResults.
	LabelResults       *bool
	LabelResultsSource string
}

// List is a pair of allow and deny glob lists. An item matching any Deny
// pattern is hidden; when Allow is not empty, an item matching none of its
// patterns is hidden too.
type List struct {
	Allow, Deny []Pattern
}

// Pattern is one glob (see [Match]) with where it was written.
type Pattern struct {
	Glob   string
	Source string
}

// Override corrects one tool of a server. An empty string field and a nil
// Annotations change nothing.
type Override struct {
	// Name replaces the tool's exposed name, as is: no prefix is added. It
	// obeys the naming rules ([A-Za-z0-9_-], at most 64 characters).
	Name        string
	Title       string
	Description string
	// Annotations replace the upstream's: each non-nil hint, and Title when
	// not empty.
	Annotations *Annotations
	Source      string
	// Confirm makes calls of the tool wait for a person's approval
	// (confirm = true, reason = "…" in the override's table).
	Confirm Confirmation
	// Budget and Args limit the tool's calls as a policy file rule's do
	// (spend.go), besides the rules'; zero and nil mean none.
	Budget Budget
	Args   []ArgLimit
}

// Rule is one rule of a policy file. Match selects exposed tool and prompt
// names, or exposed resource URIs and templates when URI is true.
type Rule struct {
	// Name is the rule's key in its file ([rules.NAME]).
	Name  string
	Match string
	URI   bool
	// Allow and Deny are never both true; see [Rules.Decide] for how the
	// rules that allow or deny an item settle it.
	Allow, Deny bool
	// Reason says why, for explain and for error messages.
	Reason string
	// Limits on calls to the matched items; zero means none.
	CallTimeout    time.Duration
	MaxResultBytes int
	Rate           Rate
	// Confirm and ConfirmReason (the rule's reason) make calls of the
	// matched tools wait for a person's approval; it applies whichever rule
	// allows the tool, like the limits.
	Confirm bool
	// Budget caps what calls of each matched tool spend (spend.go); Args
	// bound their arguments. Zero and nil mean none.
	Budget Budget
	Args   []ArgLimit
	// ReadOnly hides the matched tools whose effective readOnlyHint is not
	// true, as read_only mode does (read_only = true in the rule).
	ReadOnly bool
	// Who limits the rule to the identities it lists ([Identity.In]); nil
	// is everyone. The anonymous identity is in no list.
	Who []Principal
	// Shared makes the rule's rate and budget count the calls of every
	// identity together (per = "all"); by default each identity has its
	// own count (per = "identity").
	Shared bool
	Source string
}

// Override returns the override of the tool original of server, if any.
func (r *Rules) Override(server, original string) (Override, bool) {
	sr := r.server(server)
	if sr == nil {
		return Override{}, false
	}
	o, ok := sr.Overrides[original]
	return o, ok
}

// Annotations returns the annotations that clients see and that the policy
// uses for the tool original of server, given the upstream's (nil when it
// sent none): the upstream's hints, or none when the server's annotations
// are ignored, with the override's applied on top. The result is nil when
// there are none, and a fresh value otherwise.
func (r *Rules) Annotations(server, original string, upstream *Annotations) *Annotations {
	var out Annotations
	if upstream != nil {
		out = *upstream
	}
	sr := r.server(server)
	if sr != nil && sr.IgnoreAnnotations {
		out = Annotations{Title: out.Title}
	}
	if o, ok := r.Override(server, original); ok && o.Annotations != nil {
		a := o.Annotations
		if a.Title != "" {
			out.Title = a.Title
		}
		out.ReadOnly = cmp.Or(a.ReadOnly, out.ReadOnly)
		out.Destructive = cmp.Or(a.Destructive, out.Destructive)
		out.Idempotent = cmp.Or(a.Idempotent, out.Idempotent)
		out.OpenWorld = cmp.Or(a.OpenWorld, out.OpenWorld)
	}
	// Copy the hints, so that the result shares nothing with the rules.
	for _, h := range []**bool{&out.ReadOnly, &out.Destructive, &out.Idempotent, &out.OpenWorld} {
		if *h != nil {
			v := **h
			*h = &v
		}
	}
	if out == (Annotations{}) {
		return nil
	}
	return &out
}

func (r *Rules) server(name string) *ServerRules {
	if r == nil {
		return nil
	}
	return r.Servers[name]
}

// Decide says whether the item it is visible and, if it is, under which
// limits. The same decision serves lists (a hidden item is left out) and
// requests (a hidden item is refused, a tool exactly as an unknown one).
// The steps, the first that hides giving the decision:
//
// A resource is decided on the canonical forms ([CanonicalURI]) of its
// original and exposed URIs, and a URI that has none is hidden; the globs
// are expected in canonical form too ([CanonicalURIGlob]), as the config
// loader writes them.
//
//  1. the server's deny list, then its allow list, on the original name or
//     URI (tools.*, prompts.*, resources.*; templates use resources.*); deny
//     wins;
//  2. for a tool, read-only mode (global or the server's): the tool must
//     have an effective readOnlyHint of true ([Rules.Annotations]); an
//     unannotated tool is not read-only;
//  3. the policy files' rules on the exposed name (Rule.URI false) or URI
//     (Rule.URI true); a renamed tool's rules match its exposed name or its
//     qualified name (Item.Qualified), and a tool's or prompt's its full
//     unshortened name too (Item.Full), any one being enough. Of the
//     matching rules that allow or deny, the most
//     specific decides, specificity being the number of literal characters
//     of the glob ("files__write_log" beats "files__write_*", which beats
//     "*"); between equally specific rules deny wins, and between two denies
//     the first. So deny "*" with allow "files__*" is an allow list.
//
// The policy files can only hide more than proxy.toml does: an allow rule
// never shows what step 1 or 2 hid.
//
// A visible item gets the limits of every matching rule, combined by taking
// the strictest of each: the smallest call_timeout and max_result_bytes,
// the rate with the lowest average (ties to the smaller burst). Budgets and
// argument limits are not combined: every matching one applies, and a
// tool's override's (proxy.toml) too.
//
// A visible tool or resource also gets whether its results are labelled as
// data: the server's label_results, else the top-level one.
func (r *Rules) Decide(it Item) Decision {
	if r == nil {
		return Decision{Visible: true}
	}
	if it.Exposed == "" {
		it.Exposed = it.Original
	}
	if it.Kind == Resource {
		// Decided on the canonical form only, whatever the caller passed,
		// so that no spelling of a URI escapes a rule written for it.
		var err error
		if it.Original, err = CanonicalURI(it.Original); err == nil {
			it.Exposed, err = CanonicalURI(it.Exposed)
		}
		if err != nil {
			return Decision{Rule: "canonical URI", Reason: err.Error()}
		}
	}
	var list List
	section := ""
	sr := r.server(it.Server)
	switch it.Kind {
	case Tool:
		section = "tools"
		if sr != nil {
			list = sr.Tools
		}
	case Prompt:
		section = "prompts"
		if sr != nil {
			list = sr.Prompts
		}
	case Resource, Template:
		section = "resources"
		if sr != nil {
			list = sr.Resources
		}
	default:
		return Decision{Rule: "unknown item kind", Reason: it.Kind.String() + " is not a tool, prompt, resource or resource template"}
	}

	table := "servers." + it.Server
	if sr != nil && sr.Key != "" {
		table = sr.Key
	}
	key := table + "." + section
	for _, p := range list.Deny {
		if Match(p.Glob, it.Original) {
			return Decision{Rule: fmt.Sprintf("%s.deny %q", key, p.Glob), Source: p.Source}
		}
	}
	if len(list.Allow) > 0 && !matchAny(list.Allow, it.Original) {
		return Decision{Rule: key + ".allow", Source: list.Allow[0].Source,
			Reason: fmt.Sprintf("%q matches none of its patterns", it.Original)}
	}

	var d Decision
	if it.Kind == Tool && (r.ReadOnly || sr != nil && sr.ReadOnly) {
		rule, source := "read_only", r.ReadOnlySource
		if sr != nil && sr.ReadOnly {
			rule, source = table+".read_only", sr.ReadOnlySource
		}
		ro, from := r.readOnly(sr, it)
		if !ro {
			return Decision{Rule: rule, Source: source, Reason: from}
		}
		d.ReadOnly, d.ReadOnlyFrom = true, from
	}

	if it.Kind == Tool {
		if o, ok := r.Override(it.Server, it.Original); ok {
			if !o.Budget.IsZero() {
				d.Limits.Budgets = append(d.Limits.Budgets, o.Budget)
			}
			d.Limits.Args = append(d.Limits.Args, o.Args...)
		}
	}
	for _, rules := range [][]Rule{r.TableRules, r.FileRules} {
		if hide, hidden := r.tier(&d, rules, sr, &it); hidden {
			return hide
		}
	}
	if it.Kind == Tool {
		r.confirm(&d, sr, table, it)
	}
	if it.Kind == Tool || it.Kind == Resource {
		d.Label, d.LabelSource = r.label(sr)
	}
	d.Visible = true
	return d
}

// confirm sets the Confirm fields of d for a visible tool: the tool's
// override (the most specific), else its server's confirm, else the first
// matching policy file rule with confirm = true. Any one of them is enough:
// a rule can add the need of approval but never remove it.
func (r *Rules) confirm(d *Decision, sr *ServerRules, table string, it Item) {
	if o, ok := r.Override(it.Server, it.Original); ok && o.Confirm.Confirm {
		d.Confirm, d.ConfirmRule, d.ConfirmSource, d.ConfirmReason = true, table+".overrides."+it.Original+".confirm", o.Confirm.Source, o.Confirm.Reason
		return
	}
	if sr != nil && sr.Confirm.Confirm {
		d.Confirm, d.ConfirmRule, d.ConfirmSource, d.ConfirmReason = true, table+".confirm", sr.Confirm.Source, sr.Confirm.Reason
		return
	}
	for _, rules := range [][]Rule{r.TableRules, r.FileRules} {
		for i := range rules {
			fr := &rules[i]
			if fr.Confirm && !fr.URI && it.matches(fr.Match) && it.Who.applies(fr.Who, false) {
				d.Confirm, d.ConfirmRule, d.ConfirmSource, d.ConfirmReason = true, fr.label(), fr.Source, fr.Reason
				return
			}
		}
	}
}

// tier applies one tier of rules (proxy.toml's [rules], or the policy
// files') to it, adding the limits of the rules that match it (and apply to
// its identity) to d. It returns the decision that hides it, if one does:
// the most specific allow or deny rule deciding, a who-rule winning over a
// rule for everyone that is as specific, then deny over allow; then a read_only
// rule, which hides a tool that is not read-only.
func (r *Rules) tier(d *Decision, rules []Rule, sr *ServerRules, it *Item) (Decision, bool) {
	uri := it.Kind == Resource || it.Kind == Template
	var decider, readOnly *Rule
	best := -1
	for i := range rules {
		fr := &rules[i]
		if fr.URI != uri || !it.matches(fr.Match) || !it.Who.applies(fr.Who, fr.Deny || fr.ReadOnly) {
			continue
		}
		d.Limits.add(fr)
		if fr.ReadOnly && readOnly == nil && it.Kind == Tool {
			readOnly = fr
		}
		if !fr.Allow && !fr.Deny {
			continue
		}
		if n := specificity(fr.Match); decider == nil || n > best || n == best && fr.beats(decider) {
			decider, best = fr, n
		}
	}
	if decider != nil {
		if decider.Deny {
			return Decision{Rule: decider.label(), Source: decider.Source, Reason: decider.Reason}, true
		}
		d.Rule, d.Source = decider.label(), decider.Source
	}
	if readOnly != nil {
		ro, from := r.readOnly(sr, *it)
		if !ro {
			why := "read_only: " + from
			if readOnly.Reason != "" {
				why = readOnly.Reason + "; " + why
			}
			return Decision{Rule: readOnly.label(), Source: readOnly.Source, Reason: why}, true
		}
		d.ReadOnly, d.ReadOnlyFrom = true, from
	}
	return Decision{}, false
}

// beats says which of two allow or deny rules as specific as each other
// decides: a who-rule over a rule for everyone (it is more specific about
// who), then deny over allow, then the first (b).
func (fr *Rule) beats(b *Rule) bool {
	if (fr.Who != nil) != (b.Who != nil) {
		return fr.Who != nil
	}
	return fr.Deny && !b.Deny
}

// label names a rule in a decision: `rule "name"`, and for a who-rule whom
// it is for: `rule "eng" (who group:eng)`.
func (fr *Rule) label() string {
	if fr.Who == nil {
		return fmt.Sprintf("rule %q", fr.Name)
	}
	who := make([]string, len(fr.Who))
	for i, p := range fr.Who {
		who[i] = p.String()
	}
	return fmt.Sprintf("rule %q (who %s)", fr.Name, strings.Join(who, ", "))
}

// label says whether the results of the server of sr are labelled as data,
// and where that was set.
func (r *Rules) label(sr *ServerRules) (bool, string) {
	if sr != nil && sr.LabelResults != nil {
		return *sr.LabelResults, sr.LabelResultsSource
	}
	return r.LabelResults, r.LabelResultsSource
}

// matches reports whether a policy file rule's glob matches any name of it:
// Exposed, Qualified or Full.
func (it *Item) matches(glob string) bool {
	if Match(glob, it.Exposed) {
		return true
	}
	for _, name := range []string{it.Qualified, it.Full} {
		if name != "" && Match(glob, name) {
			return true
		}
	}
	return false
}

// specificity counts the literal characters of a valid glob.
func specificity(pattern string) int {
	n := 0
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '*', '?':
			i++
			continue
		case '[':
			_, next, _ := class(pattern, i, 0)
			i = next
			continue
		case '\\':
			i++
		}
		_, size := utf8.DecodeRuneInString(pattern[i:])
		i += size
		n++
	}
	return n
}

func matchAny(ps []Pattern, s string) bool {
	for _, p := range ps {
		if Match(p.Glob, s) {
			return true
		}
	}
	return false
}

// readOnly returns the effective readOnlyHint of a tool and where it comes
// from (when true) or why it is not true (when false).
func (r *Rules) readOnly(sr *ServerRules, it Item) (bool, string) {
	if o, ok := r.Override(it.Server, it.Original); ok && o.Annotations != nil && o.Annotations.ReadOnly != nil {
		if *o.Annotations.ReadOnly {
			return true, "override at " + o.Source
		}
		return false, "readOnlyHint is false in the override at " + o.Source
	}
	if sr != nil && sr.IgnoreAnnotations {
		return false, fmt.Sprintf(`the server's annotations are ignored (%s) and no override sets readOnlyHint; add one with annotations = { readOnlyHint = true } if the tool only reads`, sr.IgnoreAnnotationsSource)
	}
	a := it.Annotations
	switch {
	case a.ReadOnlyHint():
		return true, "upstream annotations"
	case a == nil || a.ReadOnly == nil:
		return false, "the upstream sets no readOnlyHint, which means false; add an override with annotations = { readOnlyHint = true } if the tool only reads"
	default:
		return false, "the upstream's readOnlyHint is false"
	}
}

// GuardsResources reports whether any rule can hide a resource of server:
// its resources.allow or resources.deny, or a policy file's uri rule. When
// it is false, every resource of server is visible.
func (r *Rules) GuardsResources(server string) bool {
	if r == nil {
		return false
	}
	if sr := r.server(server); sr != nil && len(sr.Resources.Allow)+len(sr.Resources.Deny) > 0 {
		return true
	}
	for _, rules := range [][]Rule{r.TableRules, r.FileRules} {
		for i := range rules {
			if fr := &rules[i]; fr.URI && (fr.Allow || fr.Deny) {
				return true
			}
		}
	}
	return false
}
