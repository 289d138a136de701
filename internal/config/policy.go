package config

// This file decodes the policy and audit keys of proxy.toml and the policy
// files.
//
// In proxy.toml:
//
//	read_only = true                          # every server: only read-only tools
//	label_results = true                      # every server's text results labelled as data
//	policy_files = ["policy/*.toml"]          # globs, relative to the config folder
//
//	[audit]
//	file = "audit.jsonl"                      # "-" for stderr; relative to the config folder
//	enabled = true                            # default: true when file is set
//	arguments = false                         # log argument values, redacted
//
//	[servers.files]
//	read_only = true
//	label_results = false                     # over the top-level label_results
//	annotations = "ignore"                    # or "trust" (the default)
//	tools.allow = ["read_*", "list_*"]        # globs on the server's original names
//	tools.deny = ["*delete*"]
//	prompts.deny = ["debug*"]
//	resources.deny = ["file:///secret/*"]     # globs on the server's original URIs, canonical (policy.CanonicalURIGlob)
//
//	confirm = true                            # every call waits for a person's approval
//	confirm_reason = "writes to the disk"     # shown to the person
//
//	[servers.files.overrides.read_file]       # the server's original tool name
//	name = "read"                             # the exposed name, as is: no prefix added
//	title = "Read a file"
//	description = "Reads one file."
//	annotations = { readOnlyHint = true, destructiveHint = false }
//	confirm = true                            # this tool's calls wait for a person's approval
//	reason = "reads private files"            # shown to the person
//	budget = { limit = 100, window = "1h", from = "/structuredContent/credits" }   # as in a policy file rule
//	args.max_items = { "/paths" = 10 }
//
// A policy file holds named rules, in document order:
//
//	[rules.no_writes]
//	match = "files__write_*"                  # glob on exposed tool and prompt names
//	deny = true                               # or allow = true
//	reason = "writes need review"
//
//	[rules.secrets]
//	uri = "files+file:///secret/*"            # glob on exposed resource URIs, canonical like resources.*
//	deny = true
//
//	[rules.pay]
//	match = "*__pay*"
//	confirm = true                            # each call waits for a person's approval of its exact arguments
//	reason = "moves money"
//
//	[rules.search]
//	match = "*__search*"
//	rate = "30/minute"                        # N/second, N/minute, N/hour, N/10s
//	max_result_bytes = 200000
//	call_timeout = "20s"
//	budget = { limit = 100, window = "1h", from = "/structuredContent/credits" }   # spend.go
//	args.max_items = { "/paths" = 10 }
//
// policy.Rules.Decide says how the rules combine.

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/policy"
)

// Audit configures the audit log: one JSON line per call.
type Audit struct {
	// Enabled turns the log on. It is the enabled key, or true when that is
	// absent and file is set.
	Enabled bool
	// File is the absolute path of the log file; empty for stderr (file
	// absent or "-").
	File string
	// Arguments logs the calls' argument values, passed through
	// redact.Args. If false, argument values are not logged.
	Arguments bool
}

// policyKeys decodes the top-level read_only, policy_files and [audit], and
// gathers the enabled servers' and plugins' policy keys (see serverPolicy)
// into cfg.Policy. It runs after servers and plugins.
func (d *decoder) policyKeys(root *table, cfg *Config) {
	rules := &policy.Rules{}
	if ro, ok := root.boolean("read_only"); ok && ro {
		rules.ReadOnly, rules.ReadOnlySource = true, d.source(root.fields["read_only"])
	}
	if on, ok := root.boolean("label_results"); ok && on {
		rules.LabelResults, rules.LabelResultsSource = true, d.source(root.fields["label_results"])
	}
	if globs, ok := root.strs("policy_files"); ok {
		for _, g := range globs {
			if _, err := filepath.Match(g, ""); err != nil || g == "" {
				root.errorf("policy_files", `%q is not a file path or glob; write it like "policy/*.toml"`, g)
				continue
			}
			cfg.PolicyFiles = append(cfg.PolicyFiles, resolve(cfg.Dir, g))
		}
	}
	names := make([]string, 0, len(cfg.Servers)+len(cfg.Plugins))
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	for _, p := range cfg.Plugins {
		names = append(names, p.Name)
	}
	for _, name := range names {
		if sr := d.serverRules[name]; sr != nil {
			if rules.Servers == nil {
				rules.Servers = make(map[string]*policy.ServerRules)
			}
			rules.Servers[name] = sr
		}
	}
	rules.TableRules = d.tableRules(root)
	d.checkRenames(cfg)
	if rules.ReadOnly || rules.LabelResults || rules.Servers != nil || cfg.PolicyFiles != nil || rules.TableRules != nil {
		cfg.Policy = rules
	}
	cfg.Audit = d.audit(root, cfg)
	cfg.ConfirmTTL = d.confirmTTL(root)
}

// renameSite is an override's name, for checkRenames.
type renameSite struct {
	server, name string
	at           func(format string, args ...any)
}

// checkRenames reports an override name that lies in the namespace of
// another server or plugin (its prefix and "__"): the proxy would refuse it
// (see naming.Build), so it is an error here already.
func (d *decoder) checkRenames(cfg *Config) {
	type owner struct{ kind, name, prefix string }
	var owners []owner
	for _, s := range cfg.Servers {
		owners = append(owners, owner{"server", s.Name, s.Prefix})
	}
	for _, p := range cfg.Plugins {
		owners = append(owners, owner{"plugin", p.Name, p.Prefix})
	}
	for _, r := range d.renameSites {
		var best *owner
		for i := range owners {
			o := &owners[i]
			if o.prefix != "" && strings.HasPrefix(r.name, o.prefix+"__") && (best == nil || len(o.prefix) > len(best.prefix)) {
				best = o
			}
		}
		if best == nil || best.name == r.server {
			continue
		}
		own := ""
		for _, o := range owners {
			if o.name == r.server {
				own = o.prefix
			}
		}
		if own == best.prefix {
			continue
		}
		r.at("%q lies in the namespace of %s %q (prefix %q), where only that %s's names may be exposed; choose a name that does not start with %q",
			r.name, best.kind, best.name, best.prefix, best.kind, best.prefix+"__")
	}
}

// nestedPrefixes reports whether one of two non-empty prefixes lies in the
// namespace of the other (starts with it and "__"), returning the outer and
// the inner one.
func nestedPrefixes(a, b string) (outer, inner string, ok bool) {
	switch {
	case a == "" || b == "":
		return "", "", false
	case strings.HasPrefix(b, a+"__"):
		return a, b, true
	case strings.HasPrefix(a, b+"__"):
		return b, a, true
	}
	return "", "", false
}

// audit decodes the [audit] table.
func (d *decoder) audit(root *table, cfg *Config) Audit {
	var a Audit
	t, ok := root.table("audit")
	if !ok {
		return a
	}
	file, fileOK := t.str("file")
	switch {
	case !fileOK, file == "-":
	case file == "":
		t.errorf("file", `file is empty; write a path like "audit.jsonl", or "-" for stderr`)
	default:
		a.File = resolve(cfg.Dir, file)
	}
	a.Enabled = fileOK
	if on, ok := t.boolean("enabled"); ok {
		a.Enabled = on
	}
	a.Arguments, _ = t.boolean("arguments")
	t.finish()
	return a
}

// serverPolicy decodes the policy keys of the server (or plugin) table t:
// read_only, annotations, tools/prompts/resources allow and deny lists, and
// overrides. It runs before t.finish so that those keys are known; the
// result is kept for policyKeys unless the server is disabled. A disabled
// server's values are not validated, as elsewhere.
func (d *decoder) serverPolicy(t *table, name string, disabled bool) {
	sr := policy.ServerRules{Key: t.key.String()}
	for _, sec := range []struct {
		key  string
		list *policy.List
	}{{"tools", &sr.Tools}, {"prompts", &sr.Prompts}, {"resources", &sr.Resources}} {
		st, ok := t.tableOf(sec.key, `a table such as { allow = ["read_*"], deny = ["*delete*"] }`)
		if !ok {
			continue
		}
		uri := sec.key == "resources"
		sec.list.Allow = d.patterns(st, "allow", !disabled, uri)
		sec.list.Deny = d.patterns(st, "deny", !disabled, uri)
		st.finish()
	}
	if ro, ok := t.boolean("read_only"); ok && ro {
		sr.ReadOnly, sr.ReadOnlySource = true, d.source(t.fields["read_only"])
	}
	if s, ok := t.str("annotations"); ok {
		switch s {
		case "trust":
		case "ignore":
			sr.IgnoreAnnotations, sr.IgnoreAnnotationsSource = true, d.source(t.fields["annotations"])
		default:
			if disabled {
				break
			}
			t.errorf("annotations", `%q is not an annotations mode; use "trust" (the default) or "ignore" to trust only the overrides`, s)
		}
	}
	sr.Overrides = d.overrides(t, name, disabled)
	sr.Confirm = d.confirm(t, "confirm_reason")
	if on, ok := t.boolean("label_results"); ok {
		sr.LabelResults, sr.LabelResultsSource = &on, d.source(t.fields["label_results"])
	}
	lists := len(sr.Tools.Allow) + len(sr.Tools.Deny) + len(sr.Prompts.Allow) + len(sr.Prompts.Deny) +
		len(sr.Resources.Allow) + len(sr.Resources.Deny)
	if disabled || !sr.ReadOnly && !sr.IgnoreAnnotations && sr.Overrides == nil && sr.LabelResults == nil && lists == 0 && !sr.Confirm.Confirm {
		return
	}
	if d.serverRules == nil {
		d.serverRules = make(map[string]*policy.ServerRules)
	}
	d.serverRules[name] = &sr
}

// patterns decodes the glob list at key of t, checking the globs if check.
// URI globs (uri) are compiled to their canonical form (see uriGlob).
func (d *decoder) patterns(t *table, key string, check, uri bool) []policy.Pattern {
	globs, ok := t.strs(key)
	if !ok || len(globs) == 0 {
		return nil
	}
	src := d.source(t.fields[key])
	out := make([]policy.Pattern, 0, len(globs))
	for _, g := range globs {
		if check && !d.checkGlob(t, key, g) {
			continue
		}
		if uri {
			var ok bool
			if g, ok = d.uriGlob(t, key, g); !ok && check {
				continue
			}
		}
		out = append(out, policy.Pattern{Glob: g, Source: src})
	}
	return out
}

// checkGlob reports a glob at key of t that is empty or invalid.
func (d *decoder) checkGlob(t *table, key, g string) bool {
	if g == "" {
		t.errorf(key, `the empty glob matches nothing; remove it, or write "*" to match everything`)
		return false
	}
	if err := policy.CheckGlob(g); err != nil {
		t.errorf(key, "%q is not a valid glob: %v", g, err)
		return false
	}
	return true
}

// uriGlob compiles a valid resource URI glob at key of t to the form that
// matches canonical URIs (policy.CanonicalURIGlob), since resources are
// decided on their canonical URIs, and reports a glob that could never
// match one.
func (d *decoder) uriGlob(t *table, key, g string) (string, bool) {
	cg, err := policy.CanonicalURIGlob(g)
	if err != nil {
		t.errorf(key, "%v; resources are decided on canonical URIs (see docs/policy.md): fix or remove the glob", err)
		return g, false
	}
	return cg, true
}

// overrides decodes [servers.NAME.overrides.TOOL] tables, checking that no
// two overrides of enabled servers give the same name.
func (d *decoder) overrides(t *table, server string, disabled bool) map[string]policy.Override {
	ot, ok := t.tableOf("overrides", "a table of tools such as [servers.NAME.overrides.TOOL]")
	if !ok {
		return nil
	}
	out := make(map[string]policy.Override, len(ot.fields))
	for _, tool := range d.byPosition(ot.fields) {
		tt, ok := ot.tableOf(tool, `a table with name, title, description, annotations, budget or args`)
		if !ok {
			continue
		}
		o := policy.Override{Source: d.source(*tt.self)}
		if name, ok := tt.str("name"); ok && !disabled {
			if !validExposedName(name) {
				tt.errorf("name", "%q is not a valid tool name; use 1 to 64 letters, digits, '_' or '-'", name)
			} else if prev, taken := d.renames[name]; taken {
				tt.errorf("name", "%q is already the name given by %s; choose another name", name, prev)
			} else {
				o.Name = name
				if d.renames == nil {
					d.renames = make(map[string]string)
				}
				d.renames[name] = fmt.Sprintf("%s (%s)", tt.key, d.source(tt.fields["name"]))
				tt := tt
				d.renameSites = append(d.renameSites, renameSite{server: server, name: name,
					at: func(format string, args ...any) { tt.errorf("name", format, args...) }})
			}
		}
		o.Title, _ = tt.str("title")
		o.Description, _ = tt.str("description")
		o.Annotations = d.annotations(tt)
		o.Confirm = d.confirm(tt, "reason")
		if disabled { // known keys, not validated
			_, _ = tt.value("budget")
			_, _ = tt.value("args")
		} else {
			o.Budget = d.budget(tt)
			o.Args = d.argLimits(tt)
		}
		tt.finish()
		out[tool] = o
	}
	ot.finish()
	return out
}

// annotations decodes the annotations table of an override.
func (d *decoder) annotations(t *table) *policy.Annotations {
	at, ok := t.tableOf("annotations", "a table such as { readOnlyHint = true }")
	if !ok {
		return nil
	}
	a := &policy.Annotations{}
	a.Title, _ = at.str("title")
	for _, h := range []struct {
		key string
		dst **bool
	}{
		{"readOnlyHint", &a.ReadOnly}, {"destructiveHint", &a.Destructive},
		{"idempotentHint", &a.Idempotent}, {"openWorldHint", &a.OpenWorld},
	} {
		if b, ok := at.boolean(h.key); ok {
			*h.dst = &b
		}
	}
	at.finish()
	return a
}

// source returns where the value p was written, as "file:line".
func (d *decoder) source(p toml.Primitive) string {
	line, _ := d.where(p)
	if line == 0 {
		return d.file
	}
	return d.file + ":" + strconv.Itoa(line)
}

// LoadPolicyFiles reads the policy files that cfg.PolicyFiles name now and
// returns cfg.Policy with their rules in place of the ones it had: files in
// the order of policy_files, a glob's matches in lexical order, each file
// once. A glob that matches nothing is fine; a path without metacharacters
// must exist. [Load] calls it; a reload calls it again when a file changes,
// keeping the rules it has on error.
//
// The error joins one error per problem, each starting with the policy
// file's path (relative to the config folder when inside it) and line.
// Without policy files it returns cfg.Policy as is.
func LoadPolicyFiles(cfg *Config) (*policy.Rules, error) {
	if len(cfg.PolicyFiles) == 0 {
		return cfg.Policy, nil
	}
	var rules policy.Rules
	if cfg.Policy != nil {
		rules = *cfg.Policy
	}
	rules.FileRules = nil
	var errs []error
	seen := make(map[string]bool)
	for _, pattern := range cfg.PolicyFiles {
		paths := []string{pattern}
		if strings.ContainsAny(pattern, `*?[\`) {
			var err error
			if paths, err = filepath.Glob(pattern); err != nil {
				errs = append(errs, fmt.Errorf("%s: policy_files: %q: %w", cfg.Path, pattern, err))
				continue
			}
		}
		for _, path := range paths {
			if seen[path] {
				continue
			}
			seen[path] = true
			shown := path
			if rel, err := filepath.Rel(cfg.Dir, path); err == nil && filepath.IsLocal(rel) {
				shown = rel
			}
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("%s: policy file not found; create it or remove it from policy_files in %s", shown, cfg.Path))
				continue
			}
			if err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				errs = append(errs, fmt.Errorf("%s: cannot read policy file: %w", shown, err))
				continue
			}
			fr, err := ParsePolicyFile(shown, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rules.FileRules = append(rules.FileRules, fr...)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &rules, nil
}

// ParsePolicyFile parses data as the policy file at path, which prefixes
// every error and every rule's Source. It does not expand ${VAR}, and a
// match or uri glob that holds "${" is an error. The error,
// when not nil, joins one error per problem in file order, as [Parse]'s.
func ParsePolicyFile(path string, data []byte) ([]policy.Rule, error) {
	d, top, err := newDecoder(path, data)
	if err != nil {
		return nil, err
	}
	root := &table{d: d, fields: top}
	var out []policy.Rule
	if rt, ok := root.tableOf("rules", "a table of rules such as [rules.NAME]"); ok {
		for _, name := range d.byPosition(rt.fields) {
			t, ok := rt.tableOf(name, `a table with match = "GLOB" or uri = "GLOB"`)
			if !ok {
				continue
			}
			out = append(out, d.rule(t, name))
		}
	}
	root.finish()
	if err := d.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// rule decodes one [rules.NAME] table.
func (d *decoder) rule(t *table, name string) policy.Rule {
	r := policy.Rule{Name: name, Source: d.source(*t.self)}
	match, matchOK := t.str("match")
	uri, uriOK := t.str("uri")
	r.Allow, _ = t.boolean("allow")
	r.Deny, _ = t.boolean("deny")
	r.Reason, _ = t.str("reason")
	r.Confirm, _ = t.boolean("confirm")
	r.CallTimeout = t.duration("call_timeout", 0)
	if n, ok := t.integer("max_result_bytes"); ok {
		if n < 1 || int64(int(n)) != n {
			t.errorf("max_result_bytes", "%d is out of range; use a positive number of bytes, like 200000", n)
		} else {
			r.MaxResultBytes = int(n)
		}
	}
	if s, ok := t.str("rate"); ok {
		rate, err := policy.ParseRate(s)
		if err != nil {
			t.errorf("rate", "%v", err)
		}
		r.Rate = rate
	}
	r.Budget = d.budget(t)
	r.Args = d.argLimits(t)
	r.ReadOnly, _ = t.boolean("read_only")
	r.Who = d.who(t)
	if per, ok := t.str("per"); ok {
		switch per {
		case "identity":
		case "all":
			r.Shared = true
		default:
			t.errorf("per", `%q is not a count; write per = "identity" (each caller has its own rate and budget, the default) or per = "all" (one count shared by every caller)`, per)
		}
		if !t.has("rate") && !t.has("budget") {
			t.errorf("per", "per says how rate and budget count, but this rule has neither; remove per or add a rate or budget")
		}
	}
	unknown := t.finish()

	switch {
	case t.has("match") && t.has("uri"):
		t.errorHere("both match and uri are set; a rule matches tool and prompt names (match) or resource URIs (uri): split it in two")
	case t.has("match"):
		if matchOK && noVariable(t, "match", match) && d.checkGlob(t, "match", match) {
			r.Match = match
		}
	case t.has("uri"):
		if uriOK && noVariable(t, "uri", uri) && d.checkGlob(t, "uri", uri) {
			if cg, ok := d.uriGlob(t, "uri", uri); ok {
				r.Match, r.URI = cg, true
			}
		}
	case !unknown:
		t.errorHere(`neither match nor uri is set; set match = "GLOB" for tool and prompt names, or uri = "GLOB" for resource URIs`)
	}
	acts := r.Allow || r.Deny || r.Confirm || r.ReadOnly || t.has("call_timeout") || t.has("max_result_bytes") || t.has("rate") || t.has("budget") || t.has("args")
	switch {
	case r.Allow && r.Deny:
		t.errorHere("both allow and deny are true; keep one")
	case r.Confirm && r.URI:
		t.errorf("confirm", "confirm applies to tool calls, but this rule matches resource URIs (uri); use match = \"GLOB\" on exposed tool names")
	case r.ReadOnly && r.URI:
		t.errorf("read_only", "read_only applies to tools, but this rule matches resource URIs (uri); use match = \"GLOB\" on exposed tool names")
	case r.ReadOnly && r.Allow:
		t.errorf("read_only", "read_only = true hides what allow = true would show; split the rule in two: one that allows, one with read_only")
	case !acts && !unknown:
		t.errorHere("the rule does nothing; set deny = true, allow = true, confirm = true, read_only = true, or a limit: call_timeout, max_result_bytes, rate, budget or args")
	}
	if r.URI {
		for _, k := range []string{"budget", "args"} {
			if t.has(k) {
				t.errorf(k, "%s applies to tool calls, but this rule matches resource URIs (uri); put it in a rule with match = \"GLOB\"", k)
			}
		}
	}
	return r
}

// who decodes the who list of a rule: the identities it applies to (see
// policy.ParsePrincipal). Absent is everyone; present, it must name someone.
func (d *decoder) who(t *table) []policy.Principal {
	v, ok := t.value("who")
	if !ok {
		return nil
	}
	const example = `["group:eng", "user:alice@example.com"]`
	arr, ok := v.([]any)
	if !ok {
		t.mismatch("who", v, "an array of identities such as "+example, "")
		return []policy.Principal{} // a who-rule still, that matches no one
	}
	if len(arr) == 0 {
		t.errorf("who", "who = [] names no one, so the rule would apply to no one; remove who to apply it to everyone, or list identities such as %s", example)
		return []policy.Principal{}
	}
	out := make([]policy.Principal, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			t.errorf("who", "element %d: expected a string such as \"group:eng\", found %s; put every identity in quotes", i+1, typeName(e))
			continue
		}
		p, err := policy.ParsePrincipal(s)
		if err != nil {
			t.errorf("who", "element %d: %v", i+1, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// tableRules decodes proxy.toml's own [rules.NAME] tables: policy file
// rules, not expanded either (a rule must mean the same whatever the
// environment), decided before the policy files' (policy.Rules.TableRules).
func (d *decoder) tableRules(root *table) []policy.Rule {
	rt, ok := root.tableOf("rules", "a table of rules such as [rules.NAME]")
	if !ok {
		return nil
	}
	rt.expand = false
	var out []policy.Rule
	for _, name := range d.byPosition(rt.fields) {
		t, ok := rt.tableOf(name, `a table with match = "GLOB" or uri = "GLOB"`)
		if !ok {
			continue
		}
		out = append(out, d.rule(t, name))
	}
	rt.finish()
	return out
}

// noVariable reports a policy file glob at key of t that holds "${": policy
// files are not expanded (a rule must mean the same whatever the
// environment of the process that reloads it), and a literal "${" would
// silently match nothing.
func noVariable(t *table, key, glob string) bool {
	i := strings.Index(glob, "${")
	if i < 0 {
		return true
	}
	what := `"${"`
	if name, _, ok := strings.Cut(glob[i+2:], "}"); ok {
		what = "${" + name + "}"
	}
	t.errorf(key, "%q holds %s, but policy files do not expand environment variables: the rule would match it literally, so nothing; write the name out", glob, what)
	return false
}

// byPosition returns the keys of fields in document order.
func (d *decoder) byPosition(fields map[string]toml.Primitive) []string {
	offs := make(map[string]int, len(fields))
	for name, p := range fields {
		_, offs[name] = d.where(p)
	}
	return slices.SortedFunc(maps.Keys(fields), func(a, b string) int {
		if c := offs[a] - offs[b]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}

// err joins the problems found, in file order, or returns nil.
func (d *decoder) err() error {
	if len(d.probs) == 0 {
		return nil
	}
	slices.SortStableFunc(d.probs, func(a, b *problem) int { return a.off - b.off })
	errs := make([]error, len(d.probs))
	for i, p := range d.probs {
		errs[i] = p
	}
	return errors.Join(errs...)
}
