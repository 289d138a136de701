package search

import (
	"strings"
	"unicode"
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
	for _, parts := range words(s) {
		out = append(out, parts...)
		if len(parts) > 1 {
			out = append(out, strings.Join(parts, ""))
		}
	}
	return out
}

// words returns the runs of letters and digits of s, each as its case-folded
// parts (see tokens).
func words(s string) [][]string {
	var out [][]string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && isWordRune(rs[j]) {
			j++
		}
		out = append(out, parts(rs[i:j]))
		i = j
	}
	return out
}

func isWordRune(r rune) bool {
	return r != unicode.ReplacementChar && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
}

// parts splits one run of letters and digits at case and digit changes.
func parts(w []rune) []string {
	var out []string
	start := 0
	for k := 1; k <= len(w); k++ {
		if k < len(w) && !isBoundary(w, k) {
			continue
		}
		out = append(out, fold(w[start:k]))
		start = k
	}
	return out
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

// fold lower-cases a word part rune by rune.
func fold(w []rune) string {
	var b strings.Builder
	for _, r := range w {
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
