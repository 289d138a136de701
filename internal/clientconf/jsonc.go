package clientconf

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a JSON-with-comments parser that keeps where every value is
// in the source, so that an edit can replace or insert a member and leave
// every other byte as it was. It accepts what the clients accept: // and /*
// comments, trailing commas, a byte order mark.

// maxDepth bounds the nesting of a client file; deeper files are refused
// rather than parsed with unbounded recursion.
const maxDepth = 256

type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// node is one JSON value and its span [start, end) in the source.
type node struct {
	kind       kind
	start, end int
	str        string // kindString: the decoded value; kindNumber: the literal
	boolean    bool
	members    []member // kindObject, in source order
	elems      []*node  // kindArray
	badUTF8    bool     // kindString: invalid UTF-8 was replaced with U+FFFD
}

// member is one "key": value of an object. start is the key's first byte.
type member struct {
	key   string
	start int
	value *node
}

// get returns the value of the last member named key (the one JSON parsers
// keep), or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i].value
		}
	}
	return nil
}

// syntaxError is a problem in a JSON file, at a line and column.
type syntaxError struct {
	line, col int
	msg       string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

type jsonParser struct {
	src string
	off int
}

// parseJSONC parses src, which may start with a byte order mark.
func parseJSONC(src string) (*node, error) {
	p := &jsonParser{src: src}
	if strings.HasPrefix(src, "\uFEFF") {
		p.off = len("\uFEFF")
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.off == len(p.src) {
		return nil, p.errorf("the file is empty; a client file holds one JSON object")
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.off != len(p.src) {
		return nil, p.errorf("unexpected %s after the end of the top-level value", p.what())
	}
	return n, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.src[:p.off], "\n")
	col := p.off - strings.LastIndexByte(p.src[:p.off], '\n')
	return &syntaxError{line: line, col: col, msg: fmt.Sprintf(format, args...)}
}

// what describes the byte at p.off for an error message.
func (p *jsonParser) what() string {
	if p.off >= len(p.src) {
		return "end of file"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.off:])
	if r == utf8.RuneError || r < 0x20 {
		return fmt.Sprintf("byte 0x%02x", p.src[p.off])
	}
	return strconv.QuoteRune(r)
}

// space skips white space and comments.
func (p *jsonParser) space() error {
	for p.off < len(p.src) {
		switch c := p.src[p.off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.off++
		case c == '/' && p.off+1 < len(p.src) && p.src[p.off+1] == '/':
			if i := strings.IndexByte(p.src[p.off:], '\n'); i >= 0 {
				p.off += i + 1
			} else {
				p.off = len(p.src)
			}
		case c == '/' && p.off+1 < len(p.src) && p.src[p.off+1] == '*':
			i := strings.Index(p.src[p.off+2:], "*/")
			if i < 0 {
				return p.errorf("unterminated /* comment")
			}
			p.off += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jsonParser) value(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested more than %d levels deep", maxDepth)
	}
	if p.off >= len(p.src) {
		return nil, p.errorf("unexpected end of file; a value is missing")
	}
	start := p.off
	switch c := p.src[p.off]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, bad, err := p.string()
		if err != nil {
			return nil, err
		}
		return &node{kind: kindString, start: start, end: p.off, str: s, badUTF8: bad}, nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	for _, lit := range []struct {
		word string
		n    node
	}{{"true", node{kind: kindBool, boolean: true}}, {"false", node{kind: kindBool}}, {"null", node{kind: kindNull}}} {
		if strings.HasPrefix(p.src[p.off:], lit.word) {
			p.off += len(lit.word)
			n := lit.n
			n.start, n.end = start, p.off
			return &n, nil
		}
	}
	return nil, p.errorf("unexpected %s; expected a value", p.what())
}

func (p *jsonParser) object(depth int) (*node, error) {
	n := &node{kind: kindObject, start: p.off}
	p.off++ // {
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.off < len(p.src) && p.src[p.off] == '}' {
			p.off++
			n.end = p.off
			return n, nil
		}
		if p.off >= len(p.src) || p.src[p.off] != '"' {
			return nil, p.errorf("unexpected %s; expected a member name in double quotes or '}'", p.what())
		}
		keyStart := p.off
		key, _, err := p.string()
		if err != nil {
			return nil, err
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.off >= len(p.src) || p.src[p.off] != ':' {
			return nil, p.errorf("unexpected %s; expected ':' after the member name %q", p.what(), key)
		}
		p.off++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key: key, start: keyStart, value: v})
		if err := p.space(); err != nil {
			return nil, err
		}
		switch {
		case p.off < len(p.src) && p.src[p.off] == ',':
			p.off++
		case p.off < len(p.src) && p.src[p.off] == '}':
		default:
			return nil, p.errorf("unexpected %s; expected ',' or '}' after the member %q", p.what(), key)
		}
	}
}

func (p *jsonParser) array(depth int) (*node, error) {
	n := &node{kind: kindArray, start: p.off}
	p.off++ // [
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.off < len(p.src) && p.src[p.off] == ']' {
			p.off++
			n.end = p.off
			return n, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		switch {
		case p.off < len(p.src) && p.src[p.off] == ',':
			p.off++
		case p.off < len(p.src) && p.src[p.off] == ']':
		default:
			return nil, p.errorf("unexpected %s; expected ',' or ']' in an array", p.what())
		}
	}
}

func (p *jsonParser) number() (*node, error) {
	start := p.off
	for p.off < len(p.src) && strings.IndexByte("+-0123456789.eE", p.src[p.off]) >= 0 {
		p.off++
	}
	lit := p.src[start:p.off]
	if _, err := strconv.ParseFloat(lit, 64); err != nil && !strings.Contains(err.Error(), "range") {
		p.off = start
		return nil, p.errorf("%q is not a number", lit)
	}
	return &node{kind: kindNumber, start: start, end: p.off, str: lit}, nil
}

// string decodes the string at p.off. bad reports invalid UTF-8, replaced
// with U+FFFD.
func (p *jsonParser) string() (s string, bad bool, err error) {
	p.off++ // "
	var b strings.Builder
	for {
		if p.off >= len(p.src) {
			return "", false, p.errorf("unterminated string")
		}
		c := p.src[p.off]
		switch {
		case c == '"':
			p.off++
			return b.String(), bad, nil
		case c == '\\':
			if p.off+1 >= len(p.src) {
				return "", false, p.errorf("unterminated string")
			}
			e := p.src[p.off+1]
			p.off += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", false, p.errorf(`invalid \u escape`)
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(utf8.RuneError)
					if strings.HasPrefix(p.src[p.off:], `\u`) {
						save := p.off
						p.off += 2
						if lo, ok := p.hex4(); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
							r2 = utf16.DecodeRune(r, lo)
						} else {
							p.off = save
						}
					}
					r = r2
				}
				b.WriteRune(r)
			default:
				p.off -= 2
				return "", false, p.errorf(`invalid escape "\%c" in a string`, e)
			}
		case c < 0x20:
			return "", false, p.errorf("control character 0x%02x in a string; write it escaped", c)
		default:
			r, size := utf8.DecodeRuneInString(p.src[p.off:])
			if r == utf8.RuneError && size == 1 {
				bad = true
			}
			b.WriteRune(r)
			p.off += size
		}
	}
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.off+4 > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.src[p.off:p.off+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.off += 4
	return rune(v), true
}
