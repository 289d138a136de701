package docstest

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/config"
)

// The docs are README.md and docs/*.md under the module root. Each check
// below returns its problems as "FILE:LINE: what is wrong", and each is run
// on the real docs (no problem allowed) and on testdata/bad, pages broken on
// purpose, where it must find every breakage (TestChecksFindBrokenPages).

// doc is one Markdown page, split into the lines outside code fences and
// the fenced blocks.
type doc struct {
	rel     string // slash path from the root: README.md, docs/policy.md
	prose   []line // lines outside fences
	blocks  []block
	anchors map[string]bool // GitHub's anchors of its headings
}

type line struct {
	n    int // 1-based
	text string
}

// block is one fenced code block.
type block struct {
	info  string // the fence's info string: toml, sh, json, ""
	start int    // line of the opening fence
	lines []string
	note  string // a <!-- docstest: NOTE --> comment on the line before the fence
}

var (
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlIDRE  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLinkRE  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	codeRE    = regexp.MustCompile("`[^`]+`")
	targetRE  = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	noteRE    = regexp.MustCompile(`^<!--\s*docstest:\s*(.*?)\s*-->$`)
)

// parse reads the page at root/rel.
func parse(root, rel string) (*doc, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	d := &doc{rel: rel, anchors: map[string]bool{}}
	seen := map[string]int{}
	var cur *block
	lines := strings.Split(string(b), "\n")
	for i, text := range lines {
		n := i + 1
		trimmed := strings.TrimLeft(text, " ")
		if strings.HasPrefix(trimmed, "```") {
			if cur == nil {
				cur = &block{info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), start: n}
				if i > 0 {
					if m := noteRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
						cur.note = m[1]
					}
				}
			} else {
				d.blocks = append(d.blocks, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, text)
			continue
		}
		d.prose = append(d.prose, line{n, text})
		if m := headingRE.FindStringSubmatch(text); m != nil {
			s := slug(m[1])
			a := s
			if k := seen[s]; k > 0 {
				a = fmt.Sprintf("%s-%d", s, k)
			}
			seen[s]++
			d.anchors[a] = true
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(text, -1) {
			d.anchors[m[1]] = true
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code fence never closed", rel, cur.start)
	}
	return d, nil
}

// slug is the anchor GitHub gives a heading: its text (a link's text, not
// its target) lowercased, without punctuation, spaces turned into hyphens.
func slug(h string) string {
	h = mdLinkRE.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// pages parses README.md and docs/*.md under root.
func pages(t *testing.T, root string) []*doc {
	t.Helper()
	rels := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rels = append(rels, "docs/"+filepath.Base(m))
	}
	var out []*doc
	for _, rel := range rels {
		d, err := parse(root, rel)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// spans returns the code spans of a prose line, without their backticks.
func spans(text string) []string {
	var out []string
	for _, m := range codeRE.FindAllString(text, -1) {
		out = append(out, strings.TrimSpace(m[1:len(m)-1]))
	}
	return out
}

// checkLinks: every relative link resolves to a file or folder under root,
// and its #anchor, if any, to a heading of that Markdown file. It also
// returns, per page, the pages of the docs it links to.
func checkLinks(root string, docs []*doc) (problems []string, linksTo map[string]map[string]bool) {
	byRel := map[string]*doc{}
	for _, d := range docs {
		byRel[d.rel] = d
	}
	linksTo = map[string]map[string]bool{}
	for _, d := range docs {
		linksTo[d.rel] = map[string]bool{}
		for _, l := range d.prose {
			text := codeRE.ReplaceAllString(l.text, "")
			for _, m := range targetRE.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				rel := d.rel
				if file != "" {
					rel = path.Clean(path.Join(path.Dir(d.rel), file))
					if rel == ".." || strings.HasPrefix(rel, "../") {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s leaves the repository", d.rel, l.n, target))
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: no such file %s", d.rel, l.n, target, rel))
						continue
					}
				}
				linksTo[d.rel][rel] = true
				if anchor == "" {
					continue
				}
				to := byRel[rel]
				if to == nil {
					if !strings.HasSuffix(rel, ".md") {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: an anchor in a file that is not Markdown", d.rel, l.n, target))
						continue
					}
					var err error
					if to, err = parse(root, rel); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", d.rel, l.n, target, err))
						continue
					}
				}
				if !to.anchors[anchor] {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s has no heading with anchor #%s", d.rel, l.n, target, rel, anchor))
				}
			}
		}
	}
	return problems, linksTo
}

// checkNavigation: the README links every page of docs/, and every page
// links back to the README.
func checkNavigation(docs []*doc, linksTo map[string]map[string]bool) []string {
	var problems []string
	for _, d := range docs {
		if d.rel == "README.md" {
			continue
		}
		if !linksTo["README.md"][d.rel] {
			problems = append(problems, fmt.Sprintf("README.md: does not link %s", d.rel))
		}
		if !linksTo[d.rel]["README.md"] {
			problems = append(problems, fmt.Sprintf("%s: does not link back to README.md", d.rel))
		}
	}
	return problems
}

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

// cli is what the built binary says of its commands and their flags.
type cli struct {
	flags map[string][]string // command -> flags without dashes
}

var (
	usageCmdRE = regexp.MustCompile(`(?m)^\s+manifold ([a-z][a-z-]*)`)
	flagRE     = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
)

// readCLI runs `manifold -h` for the commands and `manifold CMD -h` for the
// flags of each.
func readCLI(t *testing.T, bin string) *cli {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	c := &cli{flags: map[string][]string{}}
	for _, m := range usageCmdRE.FindAllStringSubmatch(string(out), -1) {
		c.flags[m[1]] = nil
	}
	if len(c.flags) == 0 {
		t.Fatalf("manifold -h names no command:\n%s", out)
	}
	for cmd := range c.flags {
		out, err := exec.Command(bin, cmd, "-h").CombinedOutput()
		if err != nil {
			continue // help and the like: no flag set
		}
		for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
			c.flags[cmd] = append(c.flags[cmd], m[1])
		}
	}
	return c
}

var (
	// a shell word that runs manifold (bin/manifold, /home/me/bin/manifold),
	// then a command word
	invokeRE   = regexp.MustCompile(`(?:^|[\s(\[$])(?:[^\s()\[\]"'$]*/)?manifold\s+([a-z][a-z-]*)(?:\s|$)`)
	longRE     = regexp.MustCompile(`(?:^|[\s\[(|])--([a-z][a-z0-9-]*)`)
	shellEndRE = regexp.MustCompile(`&&|\|\||;| \| | #|\$\(|\)$`)
)

// commandSnippets returns the code a page shows: its code spans and the
// lines of its code blocks (of a block of a terminal's text, the lines
// typed after a "$ " prompt).
func commandSnippets(d *doc) []line {
	var out []line
	for _, l := range d.prose {
		for _, s := range spans(l.text) {
			out = append(out, line{l.n, s})
		}
	}
	for _, b := range d.blocks {
		output := b.info == "" || b.info == "text" || b.info == "console"
		for i, s := range b.lines {
			if output { // a terminal's text: only what follows a prompt was typed
				var typed bool
				if s, typed = strings.CutPrefix(s, "$ "); !typed {
					continue
				}
			}
			out = append(out, line{b.start + 1 + i, s})
		}
	}
	return out
}

// checkCommands: every `manifold CMD --flag` a page shows names a command
// of the binary and a flag of that command.
func checkCommands(c *cli, docs []*doc) (problems []string, commands, flags int) {
	for _, d := range docs {
		for _, s := range commandSnippets(d) {
			ms := invokeRE.FindAllStringSubmatchIndex(s.text, -1)
			for i, m := range ms {
				cmd := s.text[m[2]:m[3]]
				commands++
				known, ok := c.flags[cmd]
				if !ok {
					problems = append(problems, fmt.Sprintf("%s:%d: `%s`: manifold has no command %q", d.rel, s.n, s.text, cmd))
					continue
				}
				rest := s.text[m[1]:]
				if i+1 < len(ms) {
					rest = s.text[m[1]:ms[i+1][0]]
				}
				if loc := shellEndRE.FindStringIndex(rest); loc != nil {
					rest = rest[:loc[0]]
				}
				if before, _, found := strings.Cut(rest, " -- "); found {
					rest = before // "--" ends the flags
				}
				for _, f := range longRE.FindAllStringSubmatch(rest, -1) {
					flags++
					if f[1] == "help" || slices.Contains(known, f[1]) {
						continue
					}
					problems = append(problems, fmt.Sprintf("%s:%d: `%s`: manifold %s has no flag --%s", d.rel, s.n, s.text, cmd, f[1]))
				}
			}
		}
	}
	return problems, commands, flags
}

// checkShown: every command of the binary is shown on some page.
func checkShown(c *cli, docs []*doc) []string {
	shown := map[string]bool{}
	for _, d := range docs {
		for _, s := range commandSnippets(d) {
			for _, m := range invokeRE.FindAllStringSubmatch(s.text, -1) {
				shown[m[1]] = true
			}
		}
	}
	var problems []string
	for _, cmd := range slices.Sorted(maps.Keys(c.flags)) {
		if !shown[cmd] {
			problems = append(problems, fmt.Sprintf("manifold %s is shown on no page", cmd))
		}
	}
	return problems
}

// moduleRoot is the folder holding go.mod, above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

var build struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

// manifold builds the binary once per test run.
func manifold(t *testing.T, root string) string {
	t.Helper()
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "docstest")
		if err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(dir, "manifold")
		cmd := exec.Command("go", "build", "-o", build.bin, "./cmd/manifold")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("go build ./cmd/manifold: %v\n%s", build.err, build.out)
	}
	return build.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.bin != "" {
		os.RemoveAll(filepath.Dir(build.bin))
	}
	os.Exit(code)
}

func report(t *testing.T, what string, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
}

// TestDocs runs every check on README.md and docs/*.md.
func TestDocs(t *testing.T) {
	root := moduleRoot(t)
	docs := pages(t, root)
	if len(docs) < 2 {
		t.Fatalf("found %d pages, want README.md and docs/*.md", len(docs))
	}
	t.Run("links", func(t *testing.T) {
		problems, linksTo := checkLinks(root, docs)
		report(t, "link", problems)
		report(t, "navigation", checkNavigation(docs, linksTo))
	})
	t.Run("keys", func(t *testing.T) {
		problems, blocks, mentions := checkKeys(t, docs)
		report(t, "config key", problems)
		t.Logf("%d TOML blocks and %d `key = value`, `table.key` and `[table]` mentions checked", blocks, mentions)
	})
	t.Run("commands", func(t *testing.T) {
		c := readCLI(t, manifold(t, root))
		problems, commands, flags := checkCommands(c, docs)
		report(t, "command", problems)
		report(t, "command", checkShown(c, docs))
		t.Logf("%d manifold commands shown, with %d flags, checked", commands, flags)
	})
}

// TestChecksFindBrokenPages: each check finds what testdata/bad breaks on
// purpose, and nothing else.
func TestChecksFindBrokenPages(t *testing.T) {
	root := moduleRoot(t)
	bad := filepath.Join("testdata", "bad")
	docs := pages(t, bad)
	links, linksTo := checkLinks(bad, docs)
	keys, _, _ := checkKeys(t, docs)
	c := readCLI(t, manifold(t, root))
	commands, _, _ := checkCommands(c, docs)
	got := map[string][]string{
		"links":      links,
		"navigation": checkNavigation(docs, linksTo),
		"keys":       keys,
		"commands":   commands,
	}
	want := map[string][]string{
		"links": {
			"README.md:5: link docs/gone.md: no such file docs/gone.md",
			"README.md:6: link docs/page.md#nowhere: docs/page.md has no heading with anchor #nowhere",
			"docs/page.md:7: link #no-such-heading: docs/page.md has no heading with anchor #no-such-heading",
		},
		"navigation": {
			"README.md: does not link docs/orphan.md",
			"docs/orphan.md: does not link back to README.md",
		},
		"keys": {
			`README.md:10: TOML block: proxy.toml:3:1: servers.files.comand: unknown key; did you mean "command"?`,
			"README.md:17: TOML block does not parse",
			`README.md:23: TOML block: policy.toml:3:1: rules.wide.mtach: unknown key; did you mean "match"?`,
			"README.md:43: `# jwks_urll = \"https://idp.example.com/certs\"   # commented out, and misspelt`: [auth] has no key jwks_urll",
			"README.md:28: `isolaton = \"session\"`: no table of proxy.toml has the key isolaton",
			"README.md:37: `[servers.NAME.helth]`: proxy.toml has no table servers.NAME.helth",
			"README.md:38: `http.session_timeout`: no table of proxy.toml has the key http.session_timeout",
			"README.md:38: `tools.dney`: no table of proxy.toml has the key tools.dney",
		},
		"commands": {
			"README.md:30: `manifold serv --config proxy.toml`: manifold has no command \"serv\"",
			"README.md:34: `bin/manifold tools --jsn`: manifold tools has no flag --jsn",
		},
	}
	if shown := checkShown(c, docs); !slices.Contains(shown, "manifold serve is shown on no page") || slices.Contains(shown, "manifold tools is shown on no page") {
		t.Errorf("shown: got %q, want every command but tools", shown)
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Errorf("%s: got %d problems, want %d:\n\t%s", name, len(g), len(w), strings.Join(g, "\n\t"))
			continue
		}
		for i := range w {
			if !strings.HasPrefix(g[i], w[i]) {
				t.Errorf("%s: problem %d\n\tgot  %s\n\twant %s…", name, i, g[i], w[i])
			}
		}
	}
}
