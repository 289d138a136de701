// Package envref expands the references of a config string: ${VAR},
// ${env:VAR}, ${VAR:-default}, ${file:PATH} and $$. It is internal/config's,
// and internal/earlystart's, which must read a server's spawn arguments
// exactly as config does, without config's dependencies.
package envref

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Resolver says what the references in a string value stand for.
type Resolver struct {
	// env returns the value of the environment variable name; explicit
	// is true for ${env:NAME}, false for ${NAME}.
	Env func(name string, explicit bool) (string, bool)
	// file returns the secret held by the file at path, as written in
	// ${file:PATH}, or an error saying what is wrong and what to do (never
	// the file's content). Nil refuses ${file:}.
	File func(path string) (string, error)
}

// Expand is [Resolver.Expand] with ${NAME} and ${env:NAME} looked up in
// lookup and ${file:} refused.
func Expand(s string, lookup func(string) (string, bool)) (out string, missing []string, err error) {
	return Resolver{Env: func(name string, _ bool) (string, bool) { return lookup(name) }}.Expand(s)
}

// Expand replaces ${VAR} and ${env:VAR} with the value of VAR,
// ${VAR:-default} and ${env:VAR:-default} with the value of VAR or default
// when VAR is unset or empty, ${file:PATH} with the secret in the file at
// PATH, and $$ with $. Any other $ is kept as is. missing lists, once each,
// the variables that are unset and have no default; they expand to "". err
// reports a malformed ${...} or a file that cannot be read. What is a
// reference is ScanRefs's to say.
func (r Resolver) Expand(s string) (out string, missing []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	for _, p := range ScanRefs(s) {
		switch p.Kind {
		case PieceText:
			b.WriteString(p.Text)
		case PieceOpen:
			return "", nil, fmt.Errorf(`unterminated "${" in %q; close it with "}" or write "$$" for a literal "$"`, s)
		case PieceRef:
			v, miss, err := r.reference(p.Text, s)
			if err != nil {
				return "", nil, err
			}
			if miss != "" && !slices.Contains(missing, miss) {
				missing = append(missing, miss)
			}
			b.WriteString(v)
		}
	}
	return b.String(), missing, nil
}

// PieceKind is what one Piece of a config string is (ScanRefs).
type PieceKind int

const (
	PieceText PieceKind = iota // literal text, "$$" already read as "$"
	PieceRef                   // a ${...} reference; the text is its body
	PieceOpen                  // an unterminated "${" and the rest of the string, as written
)

// Piece is one piece of a config string: its kind and text.
type Piece struct {
	Kind PieceKind
	Text string
}

// ScanRefs splits s into literal text and ${...} references, the one
// tokenizer of both what the loader expands (Resolver.expand) and what
// `manifold check` reads as written out (literalPart), so that the two
// never disagree on what a reference is: "$$" is a literal "$"; "${" starts
// a reference whose body runs to the first "}" (no nesting: "${a${b}}" is
// the reference "a${b" and the text "}"); a "${" with no "}" after it ends
// the scan (PieceOpen); any other "$", a trailing one included, is text.
// Adjacent text is one Piece.
func ScanRefs(s string) []Piece {
	var out []Piece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, Piece{PieceText, lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			lit.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			lit.WriteByte('$')
			i++
		case '{':
			flush()
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return append(out, Piece{PieceOpen, s[i:]})
			}
			out = append(out, Piece{PieceRef, s[i+2 : i+2+end]})
			i += 2 + end
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return out
}

// reference resolves the body of one ${...} of s: the value, or the name
// of a variable that is unset and has no default.
func (r Resolver) reference(body, s string) (value, missing string, err error) {
	if path, ok := strings.CutPrefix(body, "file:"); ok {
		switch {
		case path == "":
			return "", "", fmt.Errorf(`"${file:}" names no file; write the path of the file that holds the secret, like ${file:/run/secrets/token} or ${file:token} (relative to this file's folder)`)
		case r.File == nil:
			return "", "", errors.New(`${file:...} is not read here; write the value out`)
		}
		v, err := r.File(path)
		return v, "", err
	}
	explicit := false
	if name, ok := strings.CutPrefix(body, "env:"); ok {
		body, explicit = name, true
	}
	name, def, hasDef := strings.Cut(body, ":-")
	if !validVarName(name) {
		if scheme, _, ok := strings.Cut(name, ":"); ok && !explicit && validVarName(scheme) {
			return "", "", fmt.Errorf(`unknown reference "${%s:...}" in %q; write ${NAME} or ${env:NAME} for an environment variable, ${file:PATH} for a file that holds a secret, or "$$" for a literal "$"`, scheme, s)
		}
		return "", "", fmt.Errorf(`invalid variable name %q in %q; use letters, digits and '_', not starting with a digit, or write "$$" for a literal "$"`, name, s)
	}
	v, ok := r.Env(name, explicit)
	switch {
	case hasDef && v == "":
		v = def
	case !ok && !hasDef:
		missing = name
	}
	return v, missing, nil
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
