package catalog

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/manifold-mcp/manifold/internal/redact"
)

// This file writes Manifold's own instructions from plain values: a
// summary, one line per server, of what each server behind the one entry is
// for (the root gathers the lines from its servers, proxy/summary.go), and
// the text helpers that make each line one plain, bounded line.

// InstructionsBudget bounds Manifold's instructions, in bytes: under the
// 2,048 that Claude Code keeps, with room to spare for a client that counts
// otherwise.
const InstructionsBudget = 2000

// Bounds on one server's line: its text is cut to the first of these that
// lets every line fit, the last (0) leaving only the server's name and tools.
var lineTextCaps = []int{160, 100, 60, 0}

// toolsNamed is how many of a server's tool names describe a server that has
// no description and no instructions.
const toolsNamed = 4

// Bound cuts s to at most n bytes at a rune boundary.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// SummaryLine is one server's line of the summary: its name, what it is
// for (TEXT) and how its tools are named.
type SummaryLine struct{ Name, Text, Tools string }

// Summary renders the instructions summary under lead from the servers'
// lines, in order, and the whole instructions ("## NAME\n\nTEXT", secrets
// not masked yet) of the servers that opted in, each only if it fits
// entirely once red has masked its secrets. Never longer than
// InstructionsBudget; "" when there is no line.
func Summary(lead string, lines []SummaryLine, full []string, red *redact.Redactor) string {
	type line = SummaryLine
	if len(lines) == 0 {
		return ""
	}
	render := func(l line, max int) string {
		text := Cut(l.Text, max)
		if text == "" {
			return "- " + l.Name + " (" + l.Tools + ")"
		}
		return "- " + l.Name + ": " + text + " (" + l.Tools + ")"
	}
	lead = Cut(PlainLine(lead), InstructionsBudget/4)
	var out string
	for _, max := range lineTextCaps {
		var b strings.Builder
		b.WriteString(lead)
		for _, l := range lines {
			b.WriteString("\n")
			b.WriteString(render(l, max))
		}
		if out = b.String(); len(out) <= InstructionsBudget {
			break
		}
	}
	if len(out) > InstructionsBudget {
		// Even bare lines do not fit: keep as many of the first servers as
		// leave room to say how many more there are.
		for k := len(lines) - 1; k >= 0; k-- {
			var b strings.Builder
			b.WriteString(lead)
			for _, l := range lines[:k] {
				b.WriteString("\n")
				b.WriteString(render(l, 0))
			}
			fmt.Fprintf(&b, "\n…and %d more servers.", len(lines)-k)
			if out = b.String(); len(out) <= InstructionsBudget {
				break
			}
		}
	}
	for _, f := range full {
		// One too long as it is is left out without the cost of masking
		// its secrets; masking may lengthen it, so it is measured again.
		if len(out)+2+len(f) > InstructionsBudget {
			continue
		}
		if f = red.String(f); len(out)+2+len(f) <= InstructionsBudget {
			out += "\n\n" + f
		}
	}
	return out
}

// FallbackText describes a server by its title and a few of its tools.
func FallbackText(title string, tools []string) string {
	title = PlainLine(title)
	if len(tools) == 0 {
		return title
	}
	names := make([]string, 0, toolsNamed)
	for _, n := range tools[:min(len(tools), toolsNamed)] {
		names = append(names, PlainLine(n))
	}
	list := strings.Join(names, ", ")
	if len(tools) > toolsNamed {
		list += ", …"
	}
	if title == "" {
		return "tools such as " + list
	}
	return title + "; tools such as " + list
}

// escapes matches terminal escape sequences: CSI (ESC [ … final), OSC
// (ESC ] … BEL or ESC \) and two-character ones.
var escapes = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_]?)`)

// PlainLine is s with terminal escapes and control or formatting characters
// (bidi overrides among them) removed, and every run of white space made
// one space.
func PlainLine(s string) string {
	s = escapes.ReplaceAllString(s, "")
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == utf8.RuneError:
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FirstSentence returns the first sentence of the first paragraph of
// instructions, as one line; Markdown headings are passed over (the first
// one stands in when there is nothing else), and list and quote marks
// dropped.
func FirstSentence(ins string) string {
	ins = escapes.ReplaceAllString(ins, "")
	var para []string
	heading := ""
	for _, raw := range strings.Split(ins, "\n") {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "#") {
			if heading == "" {
				heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
			}
			if len(para) > 0 {
				break
			}
			continue
		}
		l = strings.TrimSpace(strings.TrimLeft(l, ">*-=+ "))
		if l == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, l)
	}
	text := PlainLine(strings.Join(para, " "))
	if text == "" {
		return PlainLine(heading)
	}
	for i, r := range text {
		if r == '.' || r == '!' || r == '?' || r == '。' {
			end := i + utf8.RuneLen(r)
			if end == len(text) || text[end] == ' ' {
				return text[:end]
			}
		}
	}
	return text
}

// Cut shortens s to at most max bytes, at a word boundary where one is
// near, marking the cut with "…"; max 0 gives "".
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= len("…") {
		return ""
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > n*2/3 {
		n = i
	}
	return strings.TrimRight(s[:n], " ,;:") + "…"
}
