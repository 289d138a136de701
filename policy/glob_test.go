package policy

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		s       string
		want    bool
	}{
		{name: "literal", pattern: "read_file", s: "read_file", want: true},
		{name: "literal is case-sensitive", pattern: "read_file", s: "Read_file", want: false},
		{name: "literal is whole-string", pattern: "read", s: "read_file", want: false},
		{name: "empty matches empty", pattern: "", s: "", want: true},
		{name: "empty matches nothing else", pattern: "", s: "a", want: false},
		{name: "star matches empty", pattern: "*", s: "", want: true},
		{name: "star matches anything", pattern: "*", s: "a/b?c[d]", want: true},
		{name: "star prefix", pattern: "write_*", s: "write_file", want: true},
		{name: "star prefix needs prefix", pattern: "write_*", s: "rewrite_file", want: false},
		{name: "star prefix matches empty rest", pattern: "write_*", s: "write_", want: true},
		{name: "star suffix", pattern: "*delete*", s: "bulk_delete_all", want: true},
		{name: "star inside", pattern: "a*c", s: "abbbc", want: true},
		{name: "star inside needs suffix", pattern: "a*c", s: "abbbd", want: false},
		{name: "star backtracks", pattern: "a*b*c", s: "axbxbxc", want: true},
		{name: "star backtracks and fails", pattern: "a*b*c", s: "axbxbx", want: false},
		{name: "stars in a row", pattern: "a**c", s: "ac", want: true},
		{name: "star crosses slashes", pattern: "files+file:///secret/*", s: "files+file:///secret/a/b/c.txt", want: true},
		{name: "star does not cross scheme prefix", pattern: "files+file:///secret/*", s: "files+file:///public/secret/x", want: false},
		{name: "question mark one character", pattern: "tool?", s: "tool1", want: true},
		{name: "question mark not zero", pattern: "tool?", s: "tool", want: false},
		{name: "question mark not two", pattern: "tool?", s: "tool12", want: false},
		{name: "question mark one rune", pattern: "caf?", s: "café", want: true},
		{name: "question mark matches slash", pattern: "a?b", s: "a/b", want: true},
		{name: "class", pattern: "[abc]x", s: "bx", want: true},
		{name: "class miss", pattern: "[abc]x", s: "dx", want: false},
		{name: "range", pattern: "v[0-9]", s: "v7", want: true},
		{name: "range miss", pattern: "v[0-9]", s: "va", want: false},
		{name: "negated with bang", pattern: "[!a-z]", s: "A", want: true},
		{name: "negated with bang miss", pattern: "[!a-z]", s: "q", want: false},
		{name: "negated with caret", pattern: "[^a-z]1", s: "_1", want: true},
		{name: "leading dash is literal", pattern: "a[-_]b", s: "a-b", want: true},
		{name: "trailing dash is literal", pattern: "a[_-]b", s: "a-b", want: true},
		{name: "escaped bracket in class", pattern: `[\]]`, s: "]", want: true},
		{name: "non-ASCII range", pattern: "[à-ü]", s: "é", want: true},
		{name: "class needs a character", pattern: "a[bc]", s: "a", want: false},
		{name: "escaped star is literal", pattern: `a\*`, s: "a*", want: true},
		{name: "escaped star is not a wildcard", pattern: `a\*`, s: "ab", want: false},
		{name: "escaped question mark", pattern: `what\?`, s: "what?", want: true},
		{name: "escaped backslash", pattern: `a\\b`, s: `a\b`, want: true},
		{name: "uri with query", pattern: "https://x/*?q=*", s: "https://x/p?q=1", want: true},
		{name: "closing bracket alone is literal", pattern: "a]", s: "a]", want: true},
		{name: "invalid pattern matches nothing", pattern: "a[", s: "a[", want: false},
		{name: "invalid pattern after star matches nothing", pattern: "*[z-a]", s: "x", want: false},
		{name: "invalid trailing backslash matches nothing", pattern: `a\`, s: `a\`, want: false},
		{name: "star matches invalid utf-8", pattern: "a*", s: "a\xff\xfe", want: true},
		{name: "literal invalid utf-8 byte is exact", pattern: "\xff", s: "\xfe", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(tt.pattern, tt.s); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

func TestCheckGlob(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		want    string // error text; empty for a valid pattern
	}{
		{name: "plain", pattern: "files__read_*"},
		{name: "every metacharacter", pattern: `*?[a-z][!0-9][^_][-x-]\*`},
		{name: "lone closing bracket", pattern: "]"},
		{name: "unclosed class", pattern: "write_[ab", want: `"[" at byte 7 is not closed; close the class with "]" or write "\[" for a literal "["`},
		{name: "unclosed negated class", pattern: "[!", want: `"[" at byte 1 is not closed; close the class with "]" or write "\[" for a literal "["`},
		{name: "empty class", pattern: "a[]", want: `the class at byte 2 is empty; list characters like [abc] or a range like [a-z]`},
		{name: "empty negated class", pattern: "[^]", want: `the class at byte 1 is empty; list characters like [abc] or a range like [a-z]`},
		{name: "reversed range", pattern: "[z-a]", want: `range 'z'-'a' in the class at byte 1 is reversed; write the lower character first`},
		{name: "trailing backslash", pattern: `a\`, want: `ends with "\"; write "\\" for a literal backslash`},
		{name: "trailing backslash in class", pattern: `[a\`, want: `ends with "\"; write "\\" for a literal backslash`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckGlob(tt.pattern)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckGlob(%q) = %q, want %q", tt.pattern, got, tt.want)
			}
		})
	}
}

// globRegexp translates a valid, valid-UTF-8 glob into an equivalent regular
// expression, as an independent oracle for Match.
func globRegexp(pattern string) string {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	lit := func(r rune) string { return fmt.Sprintf(`\x{%x}`, r) }
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRuneInString(pattern[i:])
		switch r {
		case '*':
			b.WriteString(`.*`)
			i++
		case '?':
			b.WriteString(`.`)
			i++
		case '\\':
			r, size = utf8.DecodeRuneInString(pattern[i+1:])
			b.WriteString(lit(r))
			i += 1 + size
		case '[':
			_, next, _ := class(pattern, i, 0)
			body := pattern[i+1 : next-1]
			b.WriteString("[")
			if body[0] == '!' || body[0] == '^' {
				b.WriteString("^")
				body = body[1:]
			}
			for j := 0; j < len(body); {
				c, n := utf8.DecodeRuneInString(body[j:])
				switch {
				case c == '\\':
					c, n = utf8.DecodeRuneInString(body[j+1:])
					b.WriteString(lit(c))
					j += 1 + n
				case c == '-' && j > 0 && j+1 < len(body):
					b.WriteString("-")
					j++
				default:
					b.WriteString(lit(c))
					j += n
				}
			}
			b.WriteString("]")
			i = next
		default:
			b.WriteString(lit(r))
			i += size
		}
	}
	b.WriteString(`)$`)
	return b.String()
}

func FuzzMatch(f *testing.F) {
	seeds := [][2]string{
		{"*", ""},
		{"write_*", "write_file"},
		{"a*b*c", "axbxbxc"},
		{"[!a-z]?", "A1"},
		{`[\]-]x`, "]x"},
		{`a\*`, "a*"},
		{"files+file:///secret/*", "files+file:///secret/a/b"},
		{"[à-ü]*", "é\xff"},
		{"[a-]", "-"},
		{"a[", "a["},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		got := Match(pattern, s)
		if !Match("*", s) {
			t.Errorf("Match(%q, %q) = false", "*", s)
		}
		if !strings.ContainsAny(pattern, `*?[\`) && !Match(pattern, pattern) {
			t.Errorf("Match(%q, itself) = false for a pattern without metacharacters", pattern)
		}
		if CheckGlob(pattern) != nil {
			if got {
				t.Errorf("Match(%q, %q) = true for an invalid pattern", pattern, s)
			}
			return
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) && strings.ContainsRune(pattern, utf8.RuneError) {
			// The oracle cannot tell a literal U+FFFD from an invalid byte.
			return
		}
		re, err := regexp.Compile(globRegexp(pattern))
		if err != nil {
			t.Fatalf("oracle regexp for %q: %v", pattern, err)
		}
		if want := re.MatchString(s); got != want {
			t.Errorf("Match(%q, %q) = %v, oracle %s says %v", pattern, s, got, re, want)
		}
	})
}
