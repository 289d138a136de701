package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/redact"
)

// recordingLookup is d.lookup that records the value of every variable it
// finds as a secret: always for ${env:NAME}, which says that the value is
// one; for ${NAME} unless the value is a path ([notSecret]).
func (d *decoder) recordingLookup(name string, explicit bool) (string, bool) {
	v, ok := d.lookup(name)
	if ok && (explicit || !notSecret(v)) {
		ref := "${" + name + "}"
		if explicit {
			ref = "${env:" + name + "}"
		}
		d.recordSecret(v, ref)
	}
	return v, ok
}

// recordSecret records v as a secret that the config spells ref, unless it
// is shorter than redact.MinLen.
func (d *decoder) recordSecret(v, ref string) {
	if len(v) < redact.MinLen {
		return
	}
	d.secrets = append(d.secrets, v)
	if d.expanded == nil {
		d.expanded = make(map[string]string)
	}
	if _, seen := d.expanded[v]; !seen {
		d.expanded[v] = ref
	}
}

// readSecret reads the secret of ${file:path} in the value at key: path is
// relative to the config's folder. The secret is recorded, and so is the
// file (Config.SecretFiles, watched for changes).
func (d *decoder) readSecret(key toml.Key, path string) (string, error) {
	abs := resolve(d.dir, path)
	if !slices.ContainsFunc(d.secretFiles, func(f SecretFile) bool { return f.Path == abs }) {
		d.secretFiles = append(d.secretFiles, SecretFile{Path: abs, Key: key.String()})
	}
	v, err := ReadSecretFile(abs)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", path, err)
	}
	d.recordSecret(v, "${file:"+path+"}")
	return v, nil
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
	for _, l := range d.leftOut {
		for _, p := range l.probs {
			p.msg = r.String(names.Replace(p.msg))
		}
	}
}
