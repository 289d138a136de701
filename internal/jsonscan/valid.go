package jsonscan

import "encoding/binary"

// MaxDepth is how deep Valid lets arrays and objects nest, as
// encoding/json does: a value nested deeper is not valid.
const MaxDepth = 10000

// Valid reports whether b is one JSON value (RFC 8259), with whitespace
// around it allowed, exactly as encoding/json.Valid does, nesting limit
// included (FuzzValid holds it to that). It checks in one pass without a
// state function per byte, and without allocating: several times faster
// than encoding/json.Valid (BenchmarkValid), which every frame and every
// raw answer on the hot paths goes through, once or twice.
//
// Like encoding/json.Valid it checks syntax only: the bytes inside a string
// may be any but control characters, valid UTF-8 or not.
func Valid(b []byte) bool {
	var k kinds
	depth := 0
	i := 0
	n := len(b)
value: // a value is expected at b[i], after whitespace
	for i < n && isSpace(b[i]) {
		i++
	}
	if i >= n {
		return false
	}
	switch b[i] {
	case '{':
		if depth == MaxDepth {
			return false
		}
		k.set(depth, true)
		depth++
		i++
		for i < n && isSpace(b[i]) {
			i++
		}
		if i < n && b[i] == '}' {
			depth--
			i++
			goto next
		}
		goto key
	case '[':
		if depth == MaxDepth {
			return false
		}
		k.set(depth, false)
		depth++
		i++
		for i < n && isSpace(b[i]) {
			i++
		}
		if i < n && b[i] == ']' {
			depth--
			i++
			goto next
		}
		goto value
	case '"':
		if i = validString(b, i); i < 0 {
			return false
		}
	case 't':
		if !hasLiteral(b, i, "true") {
			return false
		}
		i += 4
	case 'f':
		if !hasLiteral(b, i, "false") {
			return false
		}
		i += 5
	case 'n':
		if !hasLiteral(b, i, "null") {
			return false
		}
		i += 4
	default:
		if i = validNumber(b, i); i < 0 {
			return false
		}
	}
next: // a value ended just before b[i]
	for i < n && isSpace(b[i]) {
		i++
	}
	if depth == 0 {
		return i == n
	}
	if i >= n {
		return false
	}
	if k.object(depth - 1) {
		switch b[i] {
		case ',':
			i++
			goto key
		case '}':
			depth--
			i++
			goto next
		}
		return false
	}
	switch b[i] {
	case ',':
		i++
		goto value
	case ']':
		depth--
		i++
		goto next
	}
	return false
key: // a member's name is expected at b[i], after whitespace
	for i < n && isSpace(b[i]) {
		i++
	}
	if i >= n || b[i] != '"' {
		return false
	}
	if i = validString(b, i); i < 0 {
		return false
	}
	for i < n && isSpace(b[i]) {
		i++
	}
	if i >= n || b[i] != ':' {
		return false
	}
	i++
	goto value
}

// kinds has a bit per open array or object, set for an object: a word for
// the first 64 levels, which is all that frames use, and more words only
// for a value nested deeper.
type kinds struct {
	low  uint64
	high []uint64 // levels 64 and deeper
}

func (k *kinds) set(level int, object bool) {
	w := &k.low
	if level >= 64 {
		i := level/64 - 1
		if i >= len(k.high) {
			k.high = append(k.high, 0)
		}
		w = &k.high[i]
	}
	if object {
		*w |= 1 << (level & 63)
	} else {
		*w &^= 1 << (level & 63)
	}
}

func (k *kinds) object(level int) bool {
	w := k.low
	if level >= 64 {
		w = k.high[level/64-1]
	}
	return w&(1<<(level&63)) != 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// plain marks the bytes a string holds as they are: not a control
// character, a quote or a backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString returns the index just past the valid string that starts at
// b[i] (its opening quote), or -1.
func validString(b []byte, i int) int {
	i++
	for {
		// Eight plain bytes at a time, then one by one.
		for len(b)-i >= 8 && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// plain8 reports whether the eight bytes of w are all plain: none below
// 0x20 (bytes of 0x80 and above are plain), a quote or a backslash. Each
// test is exact for "some byte of w": the borrow of a byte that matches can
// only mark bytes above it.
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - 0x20*ones) &^ w
	quote := w ^ '"'*ones
	quote = (quote - ones) &^ quote
	backslash := w ^ '\\'*ones
	backslash = (backslash - ones) &^ backslash
	return (control|quote|backslash)&highs == 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validNumber returns the index just past the valid number that starts at
// b[i], or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	n := len(b)
	if i < n && b[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		for i++; i < n && isDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n || !isDigit(b[i]) {
			return -1
		}
		for i++; i < n && isDigit(b[i]); i++ {
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || !isDigit(b[i]) {
			return -1
		}
		for i++; i < n && isDigit(b[i]); i++ {
		}
	}
	return i
}
