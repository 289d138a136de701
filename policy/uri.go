package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file holds the one canonical form of resource URIs. The proxy routes,
// decides, subscribes and forwards resources by it, and the configuration
// compiles resource globs against it, so that no spelling of a URI that an
// upstream would read as the same resource escapes a rule written for it.

// ErrURI is wrapped by every error of [CanonicalURI] and [CanonicalURIGlob].
var ErrURI = errors.New("resource URI cannot be canonicalised")

// CanonicalURI returns the canonical form of a resource URI, or an error
// (wrapping [ErrURI]) that says why it has none. Applying it twice changes
// nothing. The canonical form:
//
//   - the scheme is lowercased; a URI without a scheme is refused;
//   - the host (the authority after any "user@") is lowercased;
//   - percent-encodings of unreserved characters (A-Z a-z 0-9 - . _ ~) are
//     decoded, other percent-encodings get upper-case hex digits, and
//     characters that are not allowed raw in a URI (space, non-ASCII, `"<>^|{}`
//     and the backtick) are percent-encoded; a malformed "%" escape is refused;
//   - the path loses its dot segments ("." and "..", RFC 3986 §5.2.4, also
//     when spelled %2E), its empty segments ("a//b" is "a/b") and a trailing
//     "/" (except the root "/");
//   - a path segment holding an encoded "/" or "\" (%2F, %5C) is refused:
//     an upstream may decode it into a separator, so no rule could say which
//     resource it names; so is a raw "\";
//   - NUL and every other control character, raw or percent-encoded, is
//     refused, as is text that is not UTF-8;
//   - file URIs (scheme "file", or "P+file" as the proxy rewrites them) follow
//     RFC 8089: "file://localhost/p" and "file:/p" are "file:///p"; a file
//     URI with another host, a relative path, a query or a fragment is
//     refused.
//
// The query and fragment of other schemes are kept, percent-normalised.
func CanonicalURI(uri string) (string, error) {
	out, err := canonical(uri, nil)
	if err != nil {
		return "", fmt.Errorf("%w: %q %v", ErrURI, uri, err)
	}
	return out, nil
}

// canonical is CanonicalURI, keeping raw every rune for which opaque
// reports true: [CanonicalURIGlob] marks its wildcards so.
func canonical(uri string, opaque func(rune) bool) (string, error) {
	if !utf8.ValidString(uri) {
		return "", errors.New("is not valid UTF-8")
	}
	for i := 0; i < len(uri); i++ {
		if c := uri[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("holds the control character %q at byte %d; remove it", c, i)
		}
	}
	colon := strings.IndexByte(uri, ':')
	if colon <= 0 || !validScheme(uri[:colon], opaque) {
		return "", errors.New(`has no scheme; write an absolute URI such as "file:///path" or "demo://host/path"`)
	}
	scheme := lowerASCII(uri[:colon])
	base := scheme[strings.LastIndexByte(scheme, '+')+1:]
	file := base == "file"
	rest := uri[colon+1:]

	var query, fragment string
	hasQuery, hasFragment := false, false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, fragment, hasFragment = rest[:i], rest[i+1:], true
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query, hasQuery = rest[:i], rest[i+1:], true
	}
	if file && (hasQuery || hasFragment) {
		return "", errors.New("is a file URI with a query or fragment, which RFC 8089 file URIs do not have; remove them")
	}

	var b strings.Builder
	b.Grow(len(uri) + 8)
	b.WriteString(scheme)
	b.WriteByte(':')

	hasAuthority := strings.HasPrefix(rest, "//")
	path := rest
	if hasAuthority {
		rest = rest[2:]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		auth, err := normalizeAuthority(rest[:end], opaque)
		if err != nil {
			return "", err
		}
		if file {
			if auth == "localhost" {
				auth = ""
			}
			if auth != "" && (opaque == nil || !strings.ContainsFunc(auth, opaque)) {
				return "", fmt.Errorf("is a file URI with the host %q; only local files (no host, or localhost) can be named", auth)
			}
		}
		b.WriteString("//")
		b.WriteString(auth)
		path = rest[end:]
	} else if file {
		if !strings.HasPrefix(path, "/") {
			return "", errors.New(`is a file URI with a relative path; write "file:///absolute/path"`)
		}
		b.WriteString("//")
		hasAuthority = true
	}
	p, err := normalizePath(path, hasAuthority || strings.HasPrefix(path, "/"), file, opaque)
	if err != nil {
		return "", err
	}
	b.WriteString(p)
	if hasQuery {
		q, err := normalizePart(query, "the query", opaque)
		if err != nil {
			return "", err
		}
		b.WriteByte('?')
		b.WriteString(q)
	}
	if hasFragment {
		f, err := normalizePart(fragment, "the fragment", opaque)
		if err != nil {
			return "", err
		}
		b.WriteByte('#')
		b.WriteString(f)
	}
	return b.String(), nil
}

// validScheme reports whether s is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ),
// opaque runes counting as letters.
func validScheme(s string, opaque func(rune) bool) bool {
	for i, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case opaque != nil && opaque(r):
		case i > 0 && ('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// normalizeAuthority percent-normalises an authority and lowercases its host.
func normalizeAuthority(auth string, opaque func(rune) bool) (string, error) {
	a, err := normalizePart(auth, "the host", opaque)
	if err != nil {
		return "", err
	}
	at := strings.LastIndexByte(a, '@')
	return a[:at+1] + lowerASCII(a[at+1:]), nil
}

// normalizePath percent-normalises each segment of path and removes dot
// segments, empty segments and a trailing "/". An absolute path keeps its
// leading "/" (and a file URI's empty path becomes "/").
func normalizePath(path string, absolute, file bool, opaque func(rune) bool) (string, error) {
	if path == "" && !file {
		return "", nil
	}
	var segs []string
	for seg := range strings.SplitSeq(path, "/") {
		s, err := normalizePart(seg, "a path segment", opaque)
		if err != nil {
			return "", err
		}
		if strings.Contains(s, "%2F") || strings.Contains(s, "%5C") {
			return "", fmt.Errorf("has an encoded %q in the path segment %q; an upstream may read it as a separator, so write the path with plain \"/\"", map[bool]string{true: "/", false: `\`}[strings.Contains(s, "%2F")], seg)
		}
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				if opaque != nil && strings.ContainsFunc(segs[len(segs)-1], opaque) {
					return "", errors.New(`has ".." after a segment with a wildcard, so which segment it removes is unknown; write the path without ".."`)
				}
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	joined := strings.Join(segs, "/")
	if absolute {
		return "/" + joined, nil
	}
	return joined, nil
}

const upperHex = "0123456789ABCDEF"

// normalizePart percent-normalises one component of a URI (what names it in
// errors): unreserved characters are decoded, other escapes get upper-case
// hex, characters not allowed raw are encoded. Encoded control characters,
// malformed escapes and a raw backslash are refused.
func normalizePart(s, what string, opaque func(rune) bool) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", fmt.Errorf("has a malformed percent-encoding %q in %s; write %% as %%25", truncate(s[i:], 3), what)
			}
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			switch {
			case d < 0x20 || d == 0x7f:
				return "", fmt.Errorf("encodes the control character %q (%s) in %s; remove it", d, s[i:i+3], what)
			case unreserved(d):
				b.WriteByte(d)
			default:
				b.WriteByte('%')
				b.WriteByte(upperHex[d>>4])
				b.WriteByte(upperHex[d&15])
			}
			i += 3
		case c == '\\':
			return "", fmt.Errorf(`has a "\" in %s, which some servers read as a separator; write "/"`, what)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if opaque != nil && opaque(r) {
				b.WriteString(s[i : i+size])
			} else {
				for j := i; j < i+size; j++ {
					b.WriteByte('%')
					b.WriteByte(upperHex[s[j]>>4])
					b.WriteByte(upperHex[s[j]&15])
				}
			}
			i += size
		case unreserved(c) || strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0:
			b.WriteByte(c)
			i++
		default: // space, `"<>^{|}` and the backtick
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
			i++
		}
	}
	return b.String(), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// lowerASCII lowercases ASCII letters only.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Wildcards of a glob stand in for themselves during canonicalisation as
// runes of the Private Use Area, from wildBase on.
const (
	wildBase = 0xE000
	wildMax  = 0xF8FF
)

// CanonicalURIGlob returns the glob (see [Match]) that matches the canonical
// forms ([CanonicalURI]) of the URIs the glob was written for: its literal
// text is canonicalised as a URI would be (scheme and host lowercased, dot
// and empty segments removed, unreserved percent-encodings decoded, file URI
// forms of RFC 8089 unified), its wildcards and classes kept. A glob that
// does not start with a literal scheme ("*secret*") is only
// percent-normalised. The error, wrapping [ErrURI], says why the glob could
// never match a canonical URI (an encoded "/" or a control character, say).
func CanonicalURIGlob(glob string) (string, error) {
	if err := CheckGlob(glob); err != nil {
		return "", err
	}
	// Replace each wildcard or class by a placeholder rune, and each literal
	// rune that is a placeholder already by its percent-encoding.
	var meta []string
	var b strings.Builder
	for i := 0; i < len(glob); {
		switch glob[i] {
		case '*', '?':
			meta = append(meta, glob[i:i+1])
			b.WriteRune(rune(wildBase + len(meta) - 1))
			i++
			continue
		case '[':
			_, next, _ := class(glob, i, 0)
			meta = append(meta, glob[i:next])
			b.WriteRune(rune(wildBase + len(meta) - 1))
			i = next
			continue
		case '\\':
			i++
		}
		r, size := utf8.DecodeRuneInString(glob[i:])
		if wildBase <= r && r <= wildMax {
			for j := i; j < i+size; j++ {
				b.WriteByte('%')
				b.WriteByte(upperHex[glob[j]>>4])
				b.WriteByte(upperHex[glob[j]&15])
			}
		} else {
			b.WriteString(glob[i : i+size])
		}
		i += size
	}
	if len(meta) > wildMax-wildBase {
		return "", fmt.Errorf("%w: glob %q has too many wildcards", ErrURI, glob)
	}
	isMeta := func(r rune) bool { return wildBase <= r && r < wildBase+rune(len(meta)) }
	text := b.String()

	var out string
	var err error
	colon := strings.IndexByte(text, ':')
	if colon > 0 && !strings.ContainsFunc(text[:colon], isMeta) && validScheme(text[:colon], nil) {
		out, err = canonical(text, isMeta)
	} else {
		// No literal scheme: a wildcard may stand for any part of the URI,
		// so only what holds in every part is normalised.
		out, err = normalizeLoose(text, isMeta)
	}
	if err != nil {
		var back []string
		for i, m := range meta {
			back = append(back, string(rune(wildBase+i)), m)
		}
		why := strings.NewReplacer(back...).Replace(err.Error())
		return "", fmt.Errorf("%w: glob %q can never match a canonical URI: it %s", ErrURI, glob, why)
	}

	var g strings.Builder
	for _, r := range out {
		switch {
		case isMeta(r):
			g.WriteString(meta[r-wildBase])
		case r == '*' || r == '?' || r == '[' || r == '\\':
			g.WriteByte('\\')
			g.WriteRune(r)
		default:
			g.WriteRune(r)
		}
	}
	return g.String(), nil
}

// normalizeLoose percent-normalises text that is not known to start with a
// scheme, refusing control characters and encoded separators as
// CanonicalURI does.
func normalizeLoose(text string, opaque func(rune) bool) (string, error) {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("holds the control character %q at byte %d; remove it", c, i)
		}
	}
	s, err := normalizePart(text, "the URI", opaque)
	if err != nil {
		return "", err
	}
	if strings.Contains(s, "%2F") || strings.Contains(s, "%5C") {
		return "", errors.New(`has an encoded "/" or "\" (%2F, %5C), which canonical URIs never hold; write "/"`)
	}
	return s, nil
}
