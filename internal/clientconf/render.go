package clientconf

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/tomldepth"
)

// Header starts a proxy.toml that import creates.
const Header = `# Manifold's config, written by "manifold import". Every server below was
# found in a client's configuration; comments above each say where, and what
# could not be carried over. Check with "manifold check", list the merged
# catalog with "manifold tools". Key reference: "manifold help config".

startup_timeout = "60s"   # npx may have to download a server on first run
`

// Merged is the result of [Merge].
type Merged struct {
	// Text is the new proxy.toml.
	Text []byte
	// Added are the entries appended, with the names they got.
	Added []Entry
	// Skipped says which entries were already in the file, and as what.
	Skipped []string
}

// Merge appends entries to the proxy.toml existing (nil or empty: a new
// file starting with [Header]) as [servers.NAME] tables after its last
// line, leaving every byte before them as it was. An entry for a server the
// file already has (same command and args, or same URL) is skipped; one
// whose name is taken gets another. The result is checked as `manifold check`
// would (with every variable set): an error means nothing should be written.
func Merge(existing []byte, entries []Entry) (Merged, error) {
	var m Merged
	have, err := existingServers(existing)
	if err != nil {
		return m, err
	}
	var prefix strings.Builder
	if len(strings.TrimSpace(string(existing))) == 0 {
		prefix.WriteString(Header)
	} else {
		prefix.Write(existing)
		if !strings.HasSuffix(string(existing), "\n") {
			prefix.WriteByte('\n')
		}
	}
	taken := func(n string) bool {
		for name := range have.names {
			if config.URIPrefix(name) == config.URIPrefix(n) {
				return true
			}
		}
		return false
	}
	for _, e := range entries {
		if name, ok := have.keys[e.key()]; ok {
			m.Skipped = append(m.Skipped, fmt.Sprintf("%s: already in proxy.toml as [servers.%s]", e.Name, name))
			continue
		}
		base, n := e.Name, e.Name
		for i := 2; taken(n); i++ {
			suffix := "-" + strconv.Itoa(i)
			n = strings.TrimRight(base[:min(len(base), 32-len(suffix))], "_-") + suffix
		}
		e.Name = n
		have.names[n] = true
		have.keys[e.key()] = n
		// An entry manifold would reject on its own is imported disabled,
		// with the reason, so that the rest still loads.
		if !e.Disabled {
			if _, err := config.ParseEnv("proxy.toml", []byte(Render(e)), anyVar); err != nil {
				e.Disabled = true
				e.notef("imported disabled: manifold check rejects it: %s", strings.SplitN(err.Error(), "\n", 2)[0])
			}
		}
		m.Added = append(m.Added, e)
	}
	var b strings.Builder
	b.WriteString(prefix.String())
	for _, e := range m.Added {
		b.WriteByte('\n')
		b.WriteString(Render(e))
	}
	m.Text = []byte(b.String())
	if _, err := config.ParseEnv("proxy.toml", m.Text, anyVar); err != nil {
		return m, fmt.Errorf("the merged proxy.toml would not load; nothing is written:\n%w", err)
	}
	return m, nil
}

// anyVar is an environment in which every variable is set: a merged file
// must load once the variables its notes name are set.
func anyVar(string) (string, bool) { return "https://set.invalid", true }

type servers struct {
	names map[string]bool   // server names
	keys  map[string]string // Entry.key → name
}

// existingServers reads the servers of a proxy.toml, which must parse.
func existingServers(data []byte) (servers, error) {
	s := servers{names: make(map[string]bool), keys: make(map[string]string)}
	if len(data) == 0 {
		return s, nil
	}
	if err := tomldepth.Check(string(data)); err != nil {
		return s, fmt.Errorf("proxy.toml:%w", err)
	}
	var doc struct {
		Servers map[string]map[string]any `toml:"servers"`
		Plugins map[string]any            `toml:"plugins"`
	}
	if _, err := toml.Decode(strings.TrimPrefix(string(data), "\uFEFF"), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return s, fmt.Errorf("proxy.toml:%d:%d: invalid TOML: %s; fix it first (manifold check)", pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return s, fmt.Errorf("proxy.toml: %w; fix it first (manifold check)", err)
	}
	for name, t := range doc.Servers {
		s.names[name] = true
		e := Entry{}
		e.Command, _ = t["command"].(string)
		e.URL, _ = t["url"].(string)
		if args, ok := t["args"].([]any); ok {
			for _, a := range args {
				str, _ := a.(string)
				e.Args = append(e.Args, str)
			}
		}
		s.keys[e.key()] = name
	}
	for name := range doc.Plugins {
		s.names[name] = true
	}
	return s, nil
}

// Render writes e as a [servers.NAME] table, with comments saying where it
// came from and what its notes say.
func Render(e Entry) string {
	var b strings.Builder
	for i, s := range e.Sources {
		lead := "from"
		if i > 0 {
			lead = "also"
		}
		comment(&b, lead+" "+s.String())
	}
	if e.Original != e.Name {
		comment(&b, "named "+quote(e.Original)+" there")
	}
	for _, n := range e.Notes {
		comment(&b, n)
	}
	fmt.Fprintf(&b, "[servers.%s]\n", e.Name)
	if e.isRemote() {
		kv(&b, "url", str(e.URL))
		if e.Transport != "" {
			kv(&b, "transport", str(e.Transport))
		}
		if len(e.Headers) > 0 {
			kv(&b, "headers", inlineTable(e.Headers))
		}
	} else {
		kv(&b, "command", str(e.Command))
		if len(e.Args) > 0 {
			kv(&b, "args", array(e.Args))
		}
		if len(e.Env) > 0 {
			kv(&b, "env", inlineTable(e.Env))
		}
		if e.Cwd != "" {
			kv(&b, "cwd", str(e.Cwd))
		}
	}
	if e.StartupTimeout > 0 {
		kv(&b, "startup_timeout", str(dur(e.StartupTimeout)))
	}
	if e.CallTimeout > 0 {
		kv(&b, "call_timeout", str(dur(e.CallTimeout)))
	}
	if e.Required {
		kv(&b, "required", "true")
	}
	if len(e.Allow) > 0 {
		kv(&b, "tools.allow", array(e.Allow))
	}
	if len(e.Deny) > 0 {
		kv(&b, "tools.deny", array(e.Deny))
	}
	if e.Disabled {
		kv(&b, "disabled", "true")
	}
	return b.String()
}

func kv(b *strings.Builder, k, v string) { fmt.Fprintf(b, "%s = %s\n", k, v) }

// comment writes s as comment lines; anything that is not printable is
// written escaped, so that a client file cannot put a line of its own into
// proxy.toml.
func comment(b *strings.Builder, s string) {
	b.WriteString("# ")
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('\n')
}

func dur(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// str quotes s as a TOML basic string.
func str(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// key writes k as a TOML key: bare when it can be.
func key(k string) string {
	if k != "" && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == "" {
		return k
	}
	return str(k)
}

func array(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = str(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func inlineTable(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, key(k)+" = "+str(m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// InConfig returns the original names of the entries whose server the
// proxy.toml data already has (same command and args, or same URL): those
// that connect --replace may remove from the client's file.
func InConfig(data []byte, entries []Entry) ([]string, error) {
	have, err := existingServers(data)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, ok := have.keys[e.key()]; ok {
			out = append(out, e.Original)
		}
	}
	return out, nil
}
