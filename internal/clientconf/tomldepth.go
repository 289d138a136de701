package clientconf

import (
	"fmt"
	"strings"
)

// maxTOMLDepth bounds the nesting of arrays and inline tables in a TOML
// file. The TOML decoder takes time quadratic in that depth (a 60 kB file
// of nested inline tables takes about a minute), so deeper files are
// refused before it sees them; real configurations nest a few levels.
const maxTOMLDepth = 64

// checkTOMLDepth reports a TOML document nested deeper than maxTOMLDepth,
// counting the brackets and braces outside strings and comments.
func checkTOMLDepth(src string) error {
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
			if depth > maxTOMLDepth {
				return fmt.Errorf("%d: arrays or tables nested more than %d deep; not read", line, maxTOMLDepth)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
