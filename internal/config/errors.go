package config

import (
	"fmt"
	"strconv"
	"strings"
)

// problem is one thing wrong in the file.
type problem struct {
	file      string
	line, col int    // 1-based; 0 when unknown
	off       int    // byte offset in the file, for ordering; -1 when unknown
	key       string // dotted key path; may be empty
	msg       string // what is wrong and what to do
	// unset: msg is an environment variable that is not set (expandAt);
	// in a server's env, headers or args that leaves the server out
	// (Config.LeftOut) instead of failing the config.
	unset bool
}

// Error formats the problem as "file:line:col: key: msg", dropping the parts
// that are unknown.
func (p *problem) Error() string {
	var b strings.Builder
	b.WriteString(p.file)
	b.WriteByte(':')
	if p.line > 0 {
		b.WriteString(strconv.Itoa(p.line))
		b.WriteByte(':')
		if p.col > 0 {
			b.WriteString(strconv.Itoa(p.col))
			b.WriteByte(':')
		}
	}
	b.WriteByte(' ')
	if p.key != "" {
		b.WriteString(p.key)
		b.WriteString(": ")
	}
	b.WriteString(p.msg)
	return b.String()
}

// unknownKeyMsg says that key is not valid where it is, suggesting the
// closest of the valid keys.
func unknownKeyMsg(key string, valid []string) string {
	if s, ok := closest(key, valid); ok {
		return fmt.Sprintf("unknown key; did you mean %q?", s)
	}
	if len(valid) == 0 {
		return "unknown key; remove it"
	}
	return "unknown key; valid keys here are " + strings.Join(valid, ", ")
}

// closest returns the candidate that key most likely misspells: one that
// differs only in case, or else the nearest within an edit distance of 2
// (ties go to the earlier candidate).
func closest(key string, candidates []string) (string, bool) {
	for _, c := range candidates {
		if strings.EqualFold(c, key) {
			return c, true
		}
	}
	best, bestDist := "", 3
	lk := strings.ToLower(key)
	for _, c := range candidates {
		d := levenshtein(lk, c)
		if d < bestDist && d < len(c) && d < len(key) {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// levenshtein returns the edit distance between a and b, counted in bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// typeName names the TOML type of a decoded value for messages.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case map[string]any:
		return "table"
	case []map[string]any:
		return "array of tables"
	case []any:
		return "array"
	default:
		return "date/time"
	}
}
