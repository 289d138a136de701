// Package jsonscan skips over JSON values in raw bytes without decoding them:
// the scanner that the stdio hot paths of proxy and upstream use to find the
// members of a frame (id, method, _meta) without unmarshalling it, and the
// check that a frame is JSON (Valid). The skipping functions trust that
// their input is JSON the caller has checked (or will refuse later); on
// input that is not, they never read out of bounds and return an index at
// most len(b).
package jsonscan

import "bytes"

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// SkipString returns the index just past the string that starts at b[i]
// (b[i] is its opening quote), or len(b) if it does not end.
func SkipString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		k += j
		n := 0 // backslashes before the quote
		for m := k - 1; m > i && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		j = k + 1
	}
	return len(b)
}

// SkipValue returns the index just past the JSON value at b[i].
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = SkipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' &&
			b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
			i++
		}
		return i
	}
}

// Contains reports whether sep is within b, as bytes.Contains does. It is
// faster on JSON with long strings, for a sep that starts with a quote (a
// member's name, or a name and its value): bytes.Contains gives up its
// search for the first byte after a few false starts, which quotes give in
// JSON, and compares at every byte from then on; this goes from quote to
// quote while quotes are sparse (a large text result: some 25 times faster,
// BenchmarkContains), and leaves the rest to bytes.Contains where they are
// dense (structured content: as fast as it).
func Contains(b, sep []byte) bool {
	if len(sep) == 0 || sep[0] != '"' {
		return bytes.Contains(b, sep)
	}
	quotes := 0
	for i := 0; len(b)-i >= len(sep); {
		if quotes > 16 && quotes > i/32 { // more than one quote in 32 bytes
			return bytes.Contains(b[i:], sep)
		}
		k := bytes.IndexByte(b[i:len(b)-len(sep)+1], '"')
		if k < 0 {
			return false
		}
		i += k
		if string(b[i:i+len(sep)]) == string(sep) {
			return true
		}
		i++
		quotes++
	}
	return false
}
