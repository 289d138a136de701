package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokens splits s into case-folded words. Words break at every rune that is
// neither a letter nor a digit (spaces, '_', '-', '.', '/'), at a lower-to-
// upper case change ("readFile" → read, file), before the last capital of a
// capital run followed by a lower-case letter ("HTTPServer" → http, server)
// and between letters and digits ("base64" → base, 64). A word split only by
// case or digits is also kept whole ("GitHub" → git, hub, github), so a query
// that writes it either way matches. Runes are never split: the input is
// walked rune by rune, and invalid UTF-8 becomes a separator.
func tokens(s string) []string {
	var out []string
	eachWord(s, func(parts []string) {
		out = append(out, parts...)
		if len(parts) > 1 {
			out = append(out, strings.Join(parts, ""))
		}
	})
	return out
}

// words returns the runs of letters and digits of s, each as its case-folded
// parts (see tokens).
func words(s string) [][]string {
	var out [][]string
	eachWord(s, func(parts []string) { out = append(out, slices.Clone(parts)) })
	return out
}

// eachWord calls fn with the case-folded parts of each run of letters and
// digits of s, in order. fn must not keep parts.
func eachWord(s string, fn func(parts []string)) {
	var rs []rune  // the run's runes
	var offs []int // their byte offsets in s
	var parts []string
	flush := func(end int) {
		if len(rs) == 0 {
			return
		}
		parts = parts[:0]
		start := 0
		for k := 1; k <= len(rs); k++ {
			if k < len(rs) && !isBoundary(rs, k) {
				continue
			}
			stop := end
			if k < len(rs) {
				stop = offs[k]
			}
			parts = append(parts, strings.ToLower(s[offs[start]:stop]))
			start = k
		}
		fn(parts)
		rs, offs = rs[:0], offs[:0]
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWordRune(r) {
			rs = append(rs, r)
			offs = append(offs, i)
		} else {
			flush(i)
		}
		i += size
	}
	flush(len(s))
}

func isWordRune(r rune) bool {
	return r != unicode.ReplacementChar && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
}

// isBoundary reports whether a word part starts at w[k] (0 < k < len(w)).
func isBoundary(w []rune, k int) bool {
	prev, cur := w[k-1], w[k]
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(cur):
		return !unicode.Is(unicode.Mn, cur)
	case unicode.IsLower(prev) && unicode.IsUpper(cur):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(cur):
		return k+1 < len(w) && unicode.IsLower(w[k+1])
	}
	return false
}
