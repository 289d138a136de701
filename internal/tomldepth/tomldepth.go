// Package tomldepth refuses a TOML document nested too deep for the TOML
// decoder, which takes time quadratic in the depth, before it sees it.
package tomldepth

import (
	"fmt"
	"strings"
)

// Max bounds the nesting of arrays and inline tables in a TOML
// file. The TOML decoder takes time quadratic in that depth (a 60 kB file
// of nested inline tables takes about a minute), so deeper files are
// refused before it sees them; real configurations nest a few levels.
const Max = 64

// Error is a TOML document nested deeper than Max; its text
// starts with the line ("12: arrays or …"), for callers to prefix with the
// file.
type Error struct {
	Line, Max int
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d: arrays or tables nested more than %d deep; not read", e.Line, e.Max)
}

// Check reports (as an *Error) a TOML document nested deeper
// than Max, counting the brackets and braces outside strings and
// comments. Every TOML file Manifold reads passes it before the decoder
// sees it: proxy.toml, policy files, and the clients' files.
func Check(src string) error {
	depth, line := 0, 1
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			delim := string(c)
			if strings.HasPrefix(src[i:], strings.Repeat(delim, 3)) {
				delim = strings.Repeat(delim, 3)
			}
			j := i + len(delim)
			for j < len(src) && !strings.HasPrefix(src[j:], delim) {
				if src[j] == '\\' && c == '"' {
					j++
				} else if src[j] == '\n' {
					if len(delim) == 1 {
						break // an unterminated string: the decoder says so
					}
					line++
				}
				j++
			}
			i = j + len(delim) - 1
		case '[', '{':
			depth++
			if depth > Max {
				return &Error{Line: line, Max: Max}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
