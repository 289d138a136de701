package pin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Finding is one reason to look at a definition closely.
type Finding struct {
	// Rule names what was found: one of Rules' names, or "shadowing".
	Rule string
	// Where is the member the text was in ("description",
	// "inputSchema.properties.note.description", "name").
	Where string
	// Text is the matching text with a little of its context.
	Text string
}

func (f Finding) String() string {
	if f.Rule == "shadowing" {
		return fmt.Sprintf("shadowing: %s %s", f.Where, f.Text)
	}
	return fmt.Sprintf("instruction-like text (%s) in %s: %q", f.Rule, f.Where, f.Text)
}

// Rule is one pattern of text that addresses the model rather than
// describing a tool.
type Rule struct {
	Name string
	Why  string
	re   func() *regexp.Regexp
	// match, if set, is used instead of re.
	match func(string) (int, int, bool)
}

// Rules are the instruction-like patterns Scan looks for: a small set, each
// a phrase that a tool's description has no reason to say to the model.
var Rules = []Rule{
	{Name: "override", Why: "tells the model to drop its instructions",
		re: lazyRE(`(?i)\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(of\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|preceding|other|system)\s+(instructions?|prompts?|rules|directions|messages)`)},
	{Name: "before-answering", Why: "orders the model to act before it answers",
		re: lazyRE(`(?i)\bbefore\s+(answering|responding|replying|you\s+(answer|respond|reply|do\s+anything)|using\s+(this|any\s+other)\s+tool|calling\s+(this|any\s+other)\s+tool)`)},
	{Name: "conceal", Why: "asks to keep something from the user",
		re: lazyRE(`(?i)(\b(do\s+not|don't|dont|never)\s+(tell|inform|notify|alert|mention\s+(it|this|that)\s+to|show\s+(it|this|that)\s+to)\s+the\s+user|\bwithout\s+(telling|informing|notifying|alerting)\s+the\s+user|\b(hide|conceal|keep)\s+(it|this|that)\s+(secret\s+)?from\s+the\s+user)`)},
	{Name: "secret-file", Why: "names a credential file",
		re: lazyRE(`(?i)(~|\$HOME|/home/[^/\s]+|/root)?/?\.(ssh|aws|gnupg|kube|docker)/|\bid_(rsa|dsa|ecdsa|ed25519)\b|/etc/(shadow|passwd|sudoers)\b|\.netrc\b|\.npmrc\b|\.pgpass\b|\.git-credentials\b`)},
	{Name: "pass-as", Why: "tells the model to smuggle data into an argument",
		re: lazyRE(`(?i)\b(pass|put|include|send|add)\s+(it|them|its\s+contents?|their\s+contents?|the\s+(file'?s?\s+)?contents?(\s+of\s+\S+)?|the\s+(key|keys|token|tokens|secret|secrets|password|passwords|credentials?|conversation|chat\s+history))\s+(as|in|into|inside)\s+(the\s+)?[` + "`" + `'"]?[A-Za-z_]\w*[` + "`" + `'"]?(\s+(argument|parameter|field))?`)},
	{Name: "tag", Why: "an <IMPORTANT>-style tag that addresses the model",
		re: lazyRE(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|assistant)\s*>`)},
	{Name: "hidden-characters", Why: "characters a person does not see (tags, zero-width, bidirectional overrides)",
		match: hiddenChars},
}

// lazyRE compiles expr on first use: most processes of the binary (the
// reaper, most commands, a proxy without pins) never scan a definition, and
// these expressions cost about 190 KB of allocations to compile.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// hiddenChars finds Unicode tag characters, zero-width characters and
// bidirectional controls, which hide text from a person reading the
// definition.
func hiddenChars(s string) (int, int, bool) {
	for i, r := range s {
		if (r >= 0xE0000 && r <= 0xE007F) || r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r == 0xFEFF ||
			(r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return i, i + utf8.RuneLen(r), true
		}
	}
	return 0, 0, false
}

// texts returns the text members of a canonical definition by where they
// are: every "description" and "title" at any depth, and the
// instructions.
func texts(canonical string) [][2]string {
	var v any
	if json.Unmarshal([]byte(canonical), &v) != nil {
		return nil
	}
	var out [][2]string
	var walk func(path string, v any, depth int)
	walk = func(path string, v any, depth int) {
		if depth > 64 {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if s, ok := v[k].(string); ok && (k == "description" || k == "title" || k == "instructions") {
					out = append(out, [2]string{p, s})
					continue
				}
				walk(p, v[k], depth+1)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e, depth+1)
			}
		}
	}
	walk("", v, 0)
	return out
}

// Scan returns the instruction-like text in d's descriptions and titles, at
// most one finding per rule and member. Instructions are not scanned by
// these rules (instructions address the model by design); Shadows checks
// them.
func Scan(d Def) []Finding {
	if d.Kind == Instructions {
		return nil
	}
	var out []Finding
	for _, t := range texts(d.Canonical) {
		for _, r := range Rules {
			var i, j int
			var ok bool
			if r.match != nil {
				i, j, ok = r.match(t[1])
			} else if loc := r.re().FindStringIndex(t[1]); loc != nil {
				i, j, ok = loc[0], loc[1], true
			}
			if ok {
				out = append(out, Finding{Rule: r.Name, Where: t[0], Text: excerpt(t[1], i, j)})
			}
		}
	}
	return out
}

// excerpt is s[i:j] with up to 20 bytes either side, hidden characters
// shown as \u escapes.
func excerpt(s string, i, j int) string {
	a, b := max(0, i-20), min(len(s), j+20)
	for a > 0 && !utf8.RuneStart(s[a]) {
		a--
	}
	for b < len(s) && !utf8.RuneStart(s[b]) {
		b++
	}
	var out strings.Builder
	for _, r := range s[a:b] {
		if _, _, hidden := hiddenChars(string(r)); hidden || !unicode.IsPrint(r) && r != ' ' {
			fmt.Fprintf(&out, `\u%04X`, r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

// Names are the tool names of the other servers that Shadows looks for,
// each mapped to whose it is ("tool \"read_file\" of server \"files\"").
type Names struct {
	// Exposed are the names clients see.
	Exposed map[string]string
	// Original are the servers' own names that are Distinctive.
	Original map[string]string
}

// Shadows returns the places where d names a tool of another server: its
// own name is another server's exposed tool name, or its text (see Scan;
// instructions too) contains another server's exposed name or distinctive
// original name as a whole word. own are the names (original and exposed)
// of d's own server, which never count in text.
func Shadows(d Def, others Names, own map[string]bool) []Finding {
	var out []Finding
	if d.Kind == Tool || d.Kind == Prompt {
		if whose, ok := others.Exposed[d.Name]; ok {
			out = append(out, Finding{Rule: "shadowing", Where: "name", Text: fmt.Sprintf("%q is the name clients see for %s", d.Name, whose)})
		}
	}
	for _, t := range texts(d.Canonical) {
		seen := map[string]bool{}
		for _, w := range words(t[1]) {
			if own[w] || seen[w] {
				continue
			}
			whose, ok := others.Exposed[w]
			if !ok {
				whose, ok = others.Original[w]
			}
			if ok {
				seen[w] = true
				out = append(out, Finding{Rule: "shadowing", Where: t[0], Text: fmt.Sprintf("names %s (%q)", whose, w)})
			}
		}
	}
	return out
}

// words splits s into runs of name characters ([A-Za-z0-9_.-]), each
// without the dots that end a sentence.
func words(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !(r < utf8.RuneSelf && (nameByte(byte(r)) || r == '.')) }) {
		if f = strings.Trim(f, ".-"); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Distinctive reports whether a tool name is specific enough to be looked
// for in other servers' text (see Shadows): at least 4 characters with a
// "_", "-" or "." in it or a lower-to-upper case change. A plain word such
// as "search" is not: prose says it all the time.
func Distinctive(n string) bool {
	if len(n) < 4 {
		return false
	}
	if strings.ContainsAny(n, "_-.") {
		return true
	}
	prev := rune(0)
	for _, r := range n {
		if unicode.IsLower(prev) && unicode.IsUpper(r) {
			return true
		}
		prev = r
	}
	return false
}

func nameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
