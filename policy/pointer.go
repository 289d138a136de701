package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a JSON pointer (RFC 6901), such as "/structuredContent/credits"
// or "/paths/0": a path of reference tokens into a decoded JSON value. The
// empty Pointer is the whole value. Make one with [ParsePointer], which
// checks it.
type Pointer string

// ParsePointer checks s as a JSON pointer: "" or "/" followed by reference
// tokens separated by "/", in which "~1" stands for "/" and "~0" for "~".
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return "", nil
	}
	if s[0] != '/' {
		return "", fmt.Errorf(`%q is not a JSON pointer: it must start with "/", like "/structuredContent/credits"`, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || s[i+1] != '0' && s[i+1] != '1') {
			return "", fmt.Errorf(`%q is not a JSON pointer: "~" must be followed by 0 (for "~") or 1 (for "/")`, s)
		}
	}
	return Pointer(s), nil
}

// MustPointer is ParsePointer for pointers known to be valid; it panics on
// an invalid one.
func MustPointer(s string) Pointer {
	p, err := ParsePointer(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the pointer as written.
func (p Pointer) String() string { return string(p) }

// Tokens returns the pointer's reference tokens, unescaped; none for "".
func (p Pointer) Tokens() []string {
	if p == "" {
		return nil
	}
	var tokens []string
	for tok := range strings.SplitSeq(string(p)[1:], "/") {
		tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
	}
	return tokens
}

// Resolve returns the value that p refers to in v, a value decoded from
// JSON (map[string]any, []any, string, float64 or json.Number, bool, nil),
// and whether there is one. An array index is a decimal number without
// leading zeros; "-" (past the end) refers to nothing.
func (p Pointer) Resolve(v any) (any, bool) {
	for _, tok := range p.Tokens() {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// arrayIndex parses an array index token: "0", or digits not starting
// with 0.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 1 && tok[0] == '0' || len(tok) > 9 {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}
