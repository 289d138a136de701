package config

import (
	"fmt"
	"slices"
	"strings"
)

// expand replaces ${VAR} with the value of VAR, ${VAR:-default} with the
// value of VAR or default when VAR is unset or empty, and $$ with $. Any other
// $ is kept as is. missing lists, once each, the variables that are unset and
// have no default; they expand to "". err reports a malformed ${...}.
func expand(s string, lookup func(string) (string, bool)) (out string, missing []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", nil, fmt.Errorf(`unterminated "${" in %q; close it with "}" or write "$$" for a literal "$"`, s)
			}
			body := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(body, ":-")
			if !validVarName(name) {
				return "", nil, fmt.Errorf(`invalid variable name %q in %q; use letters, digits and '_', not starting with a digit, or write "$$" for a literal "$"`, name, s)
			}
			v, ok := lookup(name)
			switch {
			case hasDef && v == "":
				v = def
			case !ok && !hasDef:
				if !slices.Contains(missing, name) {
					missing = append(missing, name)
				}
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), missing, nil
}

func validVarName(s string) bool {
	if s == "" || ('0' <= s[0] && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
