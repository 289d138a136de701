package config

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/envref"
	"github.com/manifold-mcp/manifold/internal/redact"
)

// literal is a value of the file that holds a credential written out.
type literal struct {
	key  string // its key path
	line int    // its line; 0 when unknown
}

// Warnings returns what `manifold check` warns about: each value of the file
// that holds a credential written out (a credential shape in a url, command,
// args, env, headers or health arguments value, or a literal value of a
// credential env variable, header or argument) while the file is readable
// by other users, and each file read by ${file:PATH} that is readable by
// other users. Each says where and what to do; none shows a value. On
// Windows, whose permissions are not mode bits, it returns nil.
func (c *Config) Warnings() []string {
	if runtime.GOOS == "windows" {
		return nil
	}
	var out []string
	if fi, err := os.Stat(c.Path); err == nil && readableByOthers(fi.Mode()) {
		for _, l := range literalsOf(c.Path) {
			where := c.Path
			if l.line > 0 {
				where = fmt.Sprintf("%s:%d", c.Path, l.line)
			}
			out = append(out, fmt.Sprintf("%s: %s holds a credential written out, and the file is readable by other users (mode %04o); run chmod 600 %s, or move the secret out of the file: ${file:PATH} reads it from a file of its own (chmod 600 that one), ${env:NAME} from the environment",
				where, l.key, fi.Mode().Perm(), c.Path))
		}
	}
	for _, f := range c.SecretFiles {
		if fi, err := os.Stat(f.Path); err == nil && readableByOthers(fi.Mode()) {
			out = append(out, fmt.Sprintf("%s: %s reads the secret file %s, which is readable by other users (mode %04o); run chmod 600 %s",
				c.Path, f.Key, f.Path, fi.Mode().Perm(), f.Path))
		}
	}
	return out
}

// literalsOf returns the values of the config file at path that hold a
// credential written out; none when it cannot be read or parsed (Load
// reports that).
func literalsOf(path string) []literal {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	d, top, err := newDecoder(path, data)
	if err != nil {
		return nil
	}
	return d.literalCredentials(top)
}

// literalCredentials returns the values of the document that hold a
// credential written out, in file order; disabled servers' too, since the
// file holds them all the same.
func (d *decoder) literalCredentials(top map[string]toml.Primitive) []literal {
	var out []literal
	d.walkLiterals(nil, top, &out)
	slices.SortStableFunc(out, func(a, b literal) int { return cmp.Compare(a.line, b.line) })
	return out
}

func (d *decoder) walkLiterals(key toml.Key, fields map[string]toml.Primitive, out *[]literal) {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		p := fields[name]
		k := append(key[:len(key):len(key)], name)
		var v any
		if d.md.PrimitiveDecode(p, &v) != nil {
			continue
		}
		if _, ok := v.(map[string]any); ok {
			var sub map[string]toml.Primitive
			if d.md.PrimitiveDecode(p, &sub) == nil {
				d.walkLiterals(k, sub, out)
			}
			continue
		}
		if holdsCredential(k, v) {
			line, _ := d.where(p)
			*out = append(*out, literal{key: k.String(), line: line})
		}
	}
}

// holdsCredential reports whether v, the value at key, holds a credential
// written out.
func holdsCredential(key toml.Key, v any) bool {
	name := key[len(key)-1]
	free := freeKey(key)
	switch v := v.(type) {
	case string:
		lit := literalPart(v)
		if free && redact.SecretKey(name) && literalSecret(lit) {
			return true
		}
		return (free || shapeKeys[name]) && redact.Shapes(lit) != lit
	case []any:
		var lits []string
		for _, e := range v {
			switch e := e.(type) {
			case string:
				lits = append(lits, literalPart(e))
			case map[string]any, []any:
				if holdsCredential(key, e) {
					return true
				}
			}
		}
		if name == "args" && slices.ContainsFunc(redact.ArgSecrets(lits), literalSecret) {
			return true
		}
		if !free && !shapeKeys[name] {
			return false
		}
		for _, lit := range lits {
			if redact.Shapes(lit) != lit {
				return true
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if holdsCredential(append(key[:len(key):len(key)], k), v[k]) {
				return true
			}
		}
	}
	return false
}

// shapeKeys are the keys of the schema whose values may carry a credential
// (as a URL's userinfo or query, a flag's value, a token): their values are
// checked for credential shapes. Descriptions and the like are not: "write
// key=value" is not a credential.
var shapeKeys = map[string]bool{"url": true, "command": true, "args": true}

// freeKey reports whether the last element of key is a name of the user's
// (an env variable, a header, a tool argument) rather than a key of the
// schema, and so may name a credential.
func freeKey(key toml.Key) bool {
	for i, k := range key[:len(key)-1] {
		if k == "arguments" || (i == len(key)-2 && (k == "env" || k == "headers")) {
			return true
		}
	}
	return false
}

// literalSecret reports whether lit, the literal part of a credential's
// value, is a secret written out: after an auth scheme ("Bearer "), at
// least redact.MinLen characters that are not a file path.
func literalSecret(lit string) bool {
	s := strings.TrimSpace(lit)
	if scheme, rest, ok := strings.Cut(s, " "); ok && slices.Contains([]string{"bearer", "basic", "token", "bot"}, strings.ToLower(scheme)) {
		s = strings.TrimSpace(rest)
	} else if slices.Contains([]string{"bearer", "basic", "token", "bot"}, strings.ToLower(s)) {
		return false
	}
	return len(s) >= redact.MinLen && !notSecret(s)
}

// literalPart returns s without its ${...} references (what the file itself
// spells out), with $$ as $; an unterminated "${" and what follows it are
// kept as written. envref.ScanRefs decides what a reference is, as for envref.Expand.
func literalPart(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for _, p := range envref.ScanRefs(s) {
		if p.Kind != envref.PieceRef {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
