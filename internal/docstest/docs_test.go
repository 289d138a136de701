package docstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
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
	last    int             // its number of lines
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
	d.last = len(lines)
	if lines[len(lines)-1] == "" {
		d.last-- // the newline that ends the last line
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
	// The README is the front door (STYLE.md, "Docs"): read in five
	// minutes; what does not fit goes to a page of docs/.
	const frontDoor = 400
	if n := docs[0].last; n > frontDoor {
		t.Errorf("README.md has %d lines, more than the front door's %d: move a section to a page of docs/", n, frontDoor)
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
