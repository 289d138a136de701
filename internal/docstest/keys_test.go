package docstest

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/config"
)

// everyVar resolves every ${VAR} of a snippet, so that only the keys decide.
func everyVar(string) (string, bool) { return "x", true }

// unknownKeys returns the decoder's "unknown key" messages for data read as
// a file of the given kind: "proxy" (proxy.toml), "policy" (a policy file)
// or "keys" (an API keys file). Any other problem (a value out of range, a
// missing file) is not the docs test's business.
func unknownKeys(dir, kind string, data []byte) []string {
	var err error
	switch kind {
	case "policy":
		_, err = config.ParsePolicyFile(filepath.Join(dir, "policy.toml"), data)
	case "keys":
		p := filepath.Join(dir, "api-keys.toml")
		if err = os.WriteFile(p, data, 0o600); err == nil {
			_, err = config.LoadAPIKeys(p, everyVar)
		}
	default:
		_, err = config.ParseEnv(filepath.Join(dir, "proxy.toml"), data, everyVar)
	}
	if err == nil {
		return nil
	}
	var out []string
	for _, msg := range strings.Split(err.Error(), "\n") {
		if strings.Contains(msg, "unknown key") {
			out = append(out, strings.TrimPrefix(msg, dir+string(filepath.Separator)))
		}
	}
	return out
}

// fileNameRE finds the file a TOML block says it is, in its first comment:
// "# policy/base.toml", "# api-keys.toml: …", "# proxy.toml".
var fileNameRE = regexp.MustCompile(`^#\s*([\w./-]+\.toml)\b`)

// blockKind says which decoder reads a TOML block.
func blockKind(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if m := fileNameRE.FindStringSubmatch(l); m != nil {
			switch name := path.Base(m[1]); {
			case strings.Contains(m[1], "policy"):
				return "policy"
			case strings.Contains(name, "keys"):
				return "keys"
			}
		}
		break
	}
	return "proxy"
}

// foreignKeys are `key = value` mentions of other programs' files, which
// the pages name on purpose (how to configure a client for Manifold).
var foreignKeys = map[string]string{
	"mcp_optional_startup_grace_ms": "Codex's config.toml",
	"startup_timeout_sec":           "Codex's config.toml (and the error message for it in proxy.toml)",
	"CODEX_MCP_PROTOCOL_VERSION":    "an environment variable of Codex's entry",
	"type":                          "other clients' formats (configuration.md's Errors say what Manifold wants instead)",
	"gen_ai.operation.name":         "a span attribute (OpenTelemetry), not a key",
}

// inlineKeyRE is a `key = value` mention, written as in TOML (spaced):
// `KEY=value` is an environment variable or another program's setting.
var inlineKeyRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*) = (.+)$`)

// keyChecker knows where a key may stand in proxy.toml: the tables it
// learns from the decoder itself, by asking it for the valid keys of each.
type keyChecker struct {
	dir      string
	top      []string // the top-level keys of proxy.toml
	tables   []string // the keys that are tables, at the top level or in a server
	contexts []string // proxy.toml heads a key may be appended to
	known    map[string]bool
}

const probeKey = "zzzqqq"

// validKeys asks the decoder which keys the table that head ends in holds:
// it names them when a key is far from all of them.
func (k *keyChecker) validKeys(head string) []string {
	for _, msg := range unknownKeys(k.dir, "proxy", []byte(head+probeKey+" = 1\n")) {
		if _, list, ok := strings.Cut(msg, probeKey+": unknown key; valid keys here are "); ok {
			return strings.Split(list, ", ")
		}
	}
	return nil
}

func newKeyChecker(t *testing.T) *keyChecker {
	k := &keyChecker{dir: t.TempDir(), contexts: []string{""}, known: map[string]bool{}}
	top := k.validKeys("")
	k.top = top
	if len(top) == 0 {
		t.Fatal("the decoder named no valid top-level key for an unknown one; the docs test learns the tables from that message")
	}
	const server = "[servers.x]\ncommand = \"true\"\n"
	for _, tbl := range top {
		switch tbl {
		case "servers":
			k.tables = append(k.tables, tbl)
			k.contexts = append(k.contexts, server, server+"[servers.x.overrides.t]\n")
			for _, s := range k.validKeys(server) {
				k.contexts = append(k.contexts, server+"[servers.x."+s+"]\n")
				if k.validKeys(server+"[servers.x."+s+"]\n") != nil || s == "overrides" {
					k.tables = append(k.tables, s)
				}
			}
		case "plugins":
			k.tables = append(k.tables, tbl)
			k.contexts = append(k.contexts, "[plugins.x]\npath = \"x\"\n")
		case "rules":
			k.tables = append(k.tables, tbl)
			k.contexts = append(k.contexts, "[rules.x]\nmatch = \"*\"\n")
		default:
			head := "[" + tbl + "]\n"
			sub := k.validKeys(head)
			if sub == nil {
				continue // not a table
			}
			k.tables = append(k.tables, tbl)
			k.contexts = append(k.contexts, head)
			for _, s := range sub {
				k.contexts = append(k.contexts, head+"["+tbl+"."+s+"]\n")
			}
		}
	}
	// Keep the heads where the decoder reports an unknown key: not those
	// that are no table (a TOML error, or a value's type wrong), nor those
	// whose keys are free (env, headers, catalog.clients).
	kept := k.contexts[:0]
	for _, c := range k.contexts {
		if len(unknownKeys(k.dir, "proxy", []byte(c+probeKey+" = 1\n"))) > len(unknownKeys(k.dir, "proxy", []byte(c))) {
			kept = append(kept, c)
		}
	}
	k.contexts = kept
	return k
}

// knownInline reports whether the mention `key = value` names a key that
// some table of proxy.toml holds; ok is false when the mention is not TOML.
func (k *keyChecker) knownInline(key, value string) (known, ok bool) {
	var v map[string]any
	stmt := key + " = " + value
	if _, err := toml.Decode(stmt, &v); err != nil {
		stmt = key + " = 0" // an elided value ("{ readOnlyHint = true, ... }"): the key decides
		if _, err := toml.Decode(stmt, &v); err != nil {
			return false, false
		}
	}
	if r, seen := k.known[key]; seen {
		return r, true
	}
	for _, c := range k.contexts {
		if len(unknownKeys(k.dir, "proxy", []byte(c+stmt+"\n"))) == len(unknownKeys(k.dir, "proxy", []byte(c))) {
			k.known[key] = true
			return true, true
		}
	}
	k.known[key] = false
	return false, true
}

// foreignTables are table headers of other programs' files that the pages
// name on purpose.
var foreignTables = map[string]string{
	"mcp_servers": "Codex's config.toml (what Manifold writes there, and the error message for it in proxy.toml)",
}

var (
	pathRE        = regexp.MustCompile(`^[a-z_]+(?:\.[A-Za-z_]+)+$`)
	tableRE       = regexp.MustCompile(`^\[([A-Za-z_][A-Za-z0-9_.-]*)\]$`)
	placeholderRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// knownTable reports whether the header [name] of a code span is a table of
// proxy.toml; ok is false when it is not a header that the check can read
// (`[redacted]`, one word that is no top-level key). Upper-case segments are
// placeholders: [servers.NAME.health].
func (k *keyChecker) knownTable(name string) (known, ok bool) {
	segs := strings.Split(name, ".")
	if foreignTables[segs[0]] != "" {
		return false, false
	}
	if len(segs) == 1 && !slices.Contains(k.top, name) {
		return false, false
	}
	for i, s := range segs {
		if placeholderRE.MatchString(s) {
			segs[i] = "x"
		}
	}
	var head string
	switch segs[0] {
	case "servers":
		head = "[servers.x]\ncommand = \"true\"\n"
	case "plugins":
		head = "[plugins.x]\npath = \"x\"\n"
	}
	data := head + "[" + strings.Join(segs, ".") + "]\n"
	if head != "" && len(segs) == 2 {
		data = head // [servers.NAME] itself
	}
	var v map[string]any
	if _, err := toml.Decode(data, &v); err != nil {
		return false, true
	}
	return len(unknownKeys(k.dir, "proxy", []byte(data))) == 0, true
}

var (
	headerRE       = regexp.MustCompile(`^\s*\[([A-Za-z_][A-Za-z0-9_.-]*)\]`)
	commentedKeyRE = regexp.MustCompile(`^\s*#\s*([a-z_][a-z0-9_]*) = `)
)

// knownIn reports whether the table header of proxy.toml ("" for the top
// level) holds key.
func (k *keyChecker) knownIn(header, key string) bool {
	var head string
	segs := strings.Split(header, ".")
	switch {
	case header == "":
	case segs[0] == "servers" && len(segs) >= 2, segs[0] == "plugins" && len(segs) >= 2:
		head = "[servers.x]\ncommand = \"true\"\n"
		if segs[0] == "plugins" {
			head = "[plugins.x]\npath = \"x\"\n"
		}
		if segs[1] = "x"; len(segs) > 2 {
			head += "[" + strings.Join(segs, ".") + "]\n"
		}
	default:
		head = "[" + header + "]\n"
	}
	return len(unknownKeys(k.dir, "proxy", []byte(head+key+" = 0\n"))) == len(unknownKeys(k.dir, "proxy", []byte(head)))
}

// checkKeys: every TOML block decodes as TOML and its keys are ones the
// decoder of its file knows; every `key = value` code span names a key
// that some table of proxy.toml holds, and every `[table]` span a table.
func checkKeys(t *testing.T, docs []*doc) (problems []string, blocks, mentions int) {
	k := newKeyChecker(t)
	for _, d := range docs {
		for _, b := range d.blocks {
			if b.info != "toml" || b.note != "" {
				continue
			}
			data := []byte(strings.Join(b.lines, "\n") + "\n")
			var v map[string]any
			if _, err := toml.Decode(string(data), &v); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: TOML block does not parse: %v", d.rel, b.start, err))
				continue
			}
			blocks++
			kind := blockKind(b.lines)
			for _, msg := range unknownKeys(k.dir, kind, data) {
				problems = append(problems, fmt.Sprintf("%s:%d: TOML block: %s", d.rel, b.start, msg))
			}
			if kind != "proxy" {
				continue
			}
			// A key commented out (an alternative, or a default spelt
			// out) must be one its table holds too.
			header := ""
			for i, l := range b.lines {
				if m := headerRE.FindStringSubmatch(l); m != nil {
					header = m[1]
					continue
				}
				m := commentedKeyRE.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				mentions++
				if !k.knownIn(header, m[1]) {
					problems = append(problems, fmt.Sprintf("%s:%d: `%s`: [%s] has no key %s", d.rel, b.start+1+i, strings.TrimSpace(l), header, m[1]))
				}
			}
		}
		for _, l := range d.prose {
			for _, s := range spans(l.text) {
				if m := tableRE.FindStringSubmatch(s); m != nil {
					known, ok := k.knownTable(m[1])
					if ok {
						mentions++
					}
					if ok && !known {
						problems = append(problems, fmt.Sprintf("%s:%d: `%s`: proxy.toml has no table %s", d.rel, l.n, s, m[1]))
					}
					continue
				}
				if pathRE.MatchString(s) && slices.Contains(k.tables, s[:strings.IndexByte(s, '.')]) {
					// a key path (http.listen, tools.deny, servers.NAME.start)
					segs := strings.Split(s, ".")
					for i, seg := range segs {
						if placeholderRE.MatchString(seg) {
							segs[i] = "x"
						}
					}
					if known, ok := k.knownInline(strings.Join(segs, "."), "0"); ok {
						mentions++
						if !known {
							problems = append(problems, fmt.Sprintf("%s:%d: `%s`: no table of proxy.toml has the key %s", d.rel, l.n, s, s))
						}
					}
					continue
				}
				m := inlineKeyRE.FindStringSubmatch(s)
				if m == nil || foreignKeys[m[1]] != "" {
					continue
				}
				known, ok := k.knownInline(m[1], m[2])
				if ok {
					mentions++
				}
				if ok && !known {
					problems = append(problems, fmt.Sprintf("%s:%d: `%s`: no table of proxy.toml has the key %s", d.rel, l.n, s, m[1]))
				}
			}
		}
	}
	return problems, blocks, mentions
}
