package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/manifold-mcp/manifold/internal/redact"
)

// recordingLookup is d.lookup that records the value of every variable it
// finds as a secret, unless the value is a path ([notSecret]).
func (d *decoder) recordingLookup(name string) (string, bool) {
	v, ok := d.lookup(name)
	if ok && len(v) >= redact.MinLen && !notSecret(v) {
		d.secrets = append(d.secrets, v)
		if d.expanded == nil {
			d.expanded = make(map[string]string)
		}
		if _, seen := d.expanded[v]; !seen {
			d.expanded[v] = "${" + name + "}"
		}
	}
	return v, ok
}

// notSecret reports whether v, the value of an environment variable, is a
// file path (absolute, home- or dot-relative, or a Windows drive path), such
// as ${HOME} or ${PATH}: shown as is, so that commands and folders can be
// checked.
func notSecret(v string) bool {
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") {
		return true
	}
	return len(v) > 2 && v[1] == ':' && (v[2] == '\\' || v[2] == '/') &&
		('a' <= v[0] && v[0] <= 'z' || 'A' <= v[0] && v[0] <= 'Z')
}

// valueSecrets records the literal secrets of the servers and plugins: URL
// userinfo and query values, credential headers and env variables, and the
// values of credential flags in args.
func (d *decoder) valueSecrets(cfg *Config) {
	for _, s := range cfg.Servers {
		d.secrets = append(d.secrets, redact.URLSecrets(s.URL)...)
		d.secrets = append(d.secrets, redact.ArgSecrets(s.Args)...)
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			d.secrets = append(d.secrets, redact.PairSecrets(k, s.Headers[k])...)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			d.secrets = append(d.secrets, redact.PairSecrets(k, s.Env[k])...)
		}
	}
	for _, p := range cfg.Plugins {
		d.secrets = append(d.secrets, redact.ArgSecrets(p.Args)...)
		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			d.secrets = append(d.secrets, redact.PairSecrets(k, p.Env[k])...)
		}
	}
	d.secrets = slices.DeleteFunc(d.secrets, func(s string) bool { return len(s) < redact.MinLen })
}

// redactProblems hides secrets in the problems' messages: the value of a
// ${VAR} is shown as "${VAR}", the way the file spells it, and literal
// secrets and credential shapes are masked.
func (d *decoder) redactProblems() {
	// Longest first, so that a value containing another is named whole.
	vals := slices.SortedFunc(maps.Keys(d.expanded), func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, v := range vals {
		for _, f := range redact.Forms(v) {
			pairs = append(pairs, f, d.expanded[v])
		}
	}
	names := strings.NewReplacer(pairs...)
	r := redact.New(d.secrets...)
	for _, p := range d.probs {
		p.msg = r.String(names.Replace(p.msg))
	}
}
