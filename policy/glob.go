package policy

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// CheckGlob reports why pattern is not a valid glob, or nil if it is.
func CheckGlob(pattern string) error {
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '*', '?':
			i++
		case '[':
			_, next, err := class(pattern, i, utf8.RuneError)
			if err != nil {
				return err
			}
			i = next
		case '\\':
			if i+1 == len(pattern) {
				return errors.New(`ends with "\"; write "\\" for a literal backslash`)
			}
			_, size := utf8.DecodeRuneInString(pattern[i+1:])
			i += 1 + size
		default:
			_, size := utf8.DecodeRuneInString(pattern[i:])
			i += size
		}
	}
	return nil
}

// Match reports whether s matches the glob pattern as a whole. The syntax,
// for names and URIs alike:
//
//   - "*" matches any run of characters, including none and including "/";
//   - "?" matches exactly one character;
//   - "[abc]" matches one of the characters listed, "[a-z]" one in a range,
//     "[!a-z]" or "[^a-z]" one outside; a "-" first or last is literal;
//   - "\c" matches the character c itself: "\*", "\?", "\[", "\\".
//
// Every other character stands for itself. Matching is case-sensitive; a
// character is a UTF-8 encoded rune. An invalid pattern (see [CheckGlob])
// matches nothing.
//
// The cost is bounded by len(pattern)·len(s): a star backtracks to the last
// star only, never recursively.
func Match(pattern, s string) bool {
	if CheckGlob(pattern) != nil {
		return false
	}
	px, sx := 0, 0
	starP, starS := -1, 0 // the last star seen and where in s its run ends
	for {
		if px < len(pattern) {
			if pattern[px] == '*' {
				starP, starS = px, sx
				px++
				continue
			}
			if sx < len(s) {
				if pw, sw := one(pattern, px, s[sx:]); sw > 0 {
					px += pw
					sx += sw
					continue
				}
			}
		} else if sx == len(s) {
			return true
		}
		// Mismatch: let the last star swallow one more character.
		if starP < 0 || starS == len(s) {
			return false
		}
		_, size := utf8.DecodeRuneInString(s[starS:])
		starS += size
		px, sx = starP+1, starS
	}
}

// one matches the element of a valid pattern at px (not a star) against the
// start of the non-empty rest. It returns the widths of the element and of
// the character it matched, or sw == 0 on a mismatch.
func one(pattern string, px int, rest string) (pw, sw int) {
	r, size := utf8.DecodeRuneInString(rest)
	switch pattern[px] {
	case '?':
		return 1, size
	case '[':
		ok, next, _ := class(pattern, px, r)
		if !ok {
			return 0, 0
		}
		return next - px, size
	case '\\':
		px++
		pw = 1
	}
	_, lw := utf8.DecodeRuneInString(pattern[px:])
	if len(rest) < lw || rest[:lw] != pattern[px:px+lw] {
		return 0, 0
	}
	return pw + lw, lw
}

// class parses the character class that starts at pattern[i] == '[' and
// reports whether r is in it and where the class ends.
func class(pattern string, i int, r rune) (match bool, next int, err error) {
	start := i
	i++
	negate := i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^')
	if negate {
		i++
	}
	for first := true; ; first = false {
		if i >= len(pattern) {
			return false, 0, fmt.Errorf(`"[" at byte %d is not closed; close the class with "]" or write "\[" for a literal "["`, start+1)
		}
		if pattern[i] == ']' {
			if first {
				return false, 0, fmt.Errorf(`the class at byte %d is empty; list characters like [abc] or a range like [a-z]`, start+1)
			}
			return match != negate, i + 1, nil
		}
		lo, n, err := classChar(pattern, i)
		if err != nil {
			return false, 0, err
		}
		i += n
		hi := lo
		if i+1 < len(pattern) && pattern[i] == '-' && pattern[i+1] != ']' {
			if hi, n, err = classChar(pattern, i+1); err != nil {
				return false, 0, err
			}
			i += 1 + n
			if hi < lo {
				return false, 0, fmt.Errorf(`range %q-%q in the class at byte %d is reversed; write the lower character first`, lo, hi, start+1)
			}
		}
		if lo <= r && r <= hi {
			match = true
		}
	}
}

// classChar decodes one character of a class at pattern[i], which may be
// escaped with a backslash.
func classChar(pattern string, i int) (r rune, width int, err error) {
	if pattern[i] == '\\' {
		if i+1 == len(pattern) {
			return 0, 0, errors.New(`ends with "\"; write "\\" for a literal backslash`)
		}
		r, size := utf8.DecodeRuneInString(pattern[i+1:])
		return r, 1 + size, nil
	}
	r, size := utf8.DecodeRuneInString(pattern[i:])
	return r, size, nil
}
