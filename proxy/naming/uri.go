package naming

import (
	"errors"
	"fmt"
	"strings"
)

// URIPrefix returns the URI prefix of a server prefix: lowercased, with "_"
// (and any other character outside [a-z0-9-]) turned into "-", and "m"
// prepended if it does not start with a letter, so that the rewritten URI
// still starts with a valid scheme. It never contains "+". The empty prefix
// (an unprefixed server) has the empty URI prefix.
func URIPrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(prefix) + 1)
	for i, r := range prefix {
		switch {
		case 'A' <= r && r <= 'Z':
			r += 'a' - 'A'
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
		default:
			r = '-'
		}
		if i == 0 && !('a' <= r && r <= 'z') {
			b.WriteByte('m')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// URIServer is one server's entry for [NewURIMap].
type URIServer struct {
	Server string // the server's key
	Prefix string // the server's name prefix; "" keeps its URIs unchanged
}

// URIMap rewrites resource URIs between upstream servers and clients,
// statelessly and reversibly: a prefixed server's URI u is shown to clients
// as URIPrefix(prefix) + "+" + u, so two servers' "file:///…" never collide.
// A URIMap is immutable and safe for concurrent use; a nil *URIMap rewrites
// nothing.
type URIMap struct {
	byServer   map[string]string // server → URI prefix ("" if unprefixed)
	byPrefix   map[string]string // URI prefix → server
	unprefixed []string          // servers with prefix "", in input order
}

// NewURIMap builds the map for the given servers. It reports every server
// key given twice and every two servers whose prefixes give the same URI
// prefix (for instance "a_b" and "A-B"), naming both; the config package
// rejects such configs first.
func NewURIMap(servers []URIServer) (*URIMap, error) {
	m := &URIMap{
		byServer: make(map[string]string, len(servers)),
		byPrefix: make(map[string]string, len(servers)),
	}
	var errs []error
	for _, s := range servers {
		if _, ok := m.byServer[s.Server]; ok {
			errs = append(errs, fmt.Errorf("server %q is listed twice; give each server one entry", s.Server))
			continue
		}
		p := URIPrefix(s.Prefix)
		if p == "" {
			m.byServer[s.Server] = ""
			m.unprefixed = append(m.unprefixed, s.Server)
			continue
		}
		if other, ok := m.byPrefix[p]; ok {
			errs = append(errs, fmt.Errorf("servers %q and %q both rewrite resource URIs as %q; give one of them another prefix", other, s.Server, p+"+…"))
			continue
		}
		m.byServer[s.Server] = p
		m.byPrefix[p] = s.Server
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("resource URI prefixes: %w", err)
	}
	return m, nil
}

// Rewrites reports whether Outward changes the URIs of server (it is
// prefixed and known).
func (m *URIMap) Rewrites(server string) bool {
	return m != nil && m.byServer[server] != ""
}

// Outward rewrites a URI from an upstream server for clients. It returns uri
// unchanged for an unprefixed or unknown server, or a nil map.
func (m *URIMap) Outward(server, uri string) string {
	if m == nil {
		return uri
	}
	p := m.byServer[server]
	if p == "" {
		return uri
	}
	return p + "+" + uri
}

// OutwardTemplate rewrites an RFC 6570 URI template from an upstream server
// for clients. The prefix is prepended as a literal ([a-z0-9-] and "+" are
// all valid template literals), so no {…} expression is touched, and a URI
// expanded from the result is the Outward form of one expanded from tmpl.
// Inward reverses templates too (completion/complete refs).
func (m *URIMap) OutwardTemplate(server, tmpl string) string {
	return m.Outward(server, tmpl)
}

// Inward maps a URI from a client back to its server and original URI. The
// part before the first "+" is matched against the URI prefixes ignoring
// case, since clients may lowercase a scheme. A URI with no known prefix
// belongs to the only unprefixed server if there is exactly one; otherwise
// ok is false and the caller must find the owner by other means. A nil map
// knows no server.
//
// An unprefixed server's URI that itself starts with another server's URI
// prefix and "+" (say "git+ssh://…" next to a server prefixed "git") is
// routed to that other server: there is no stateless way to tell them apart.
func (m *URIMap) Inward(uri string) (server, original string, ok bool) {
	if m == nil {
		return "", "", false
	}
	if i := strings.IndexByte(uri, '+'); i > 0 {
		if s, ok := m.byPrefix[lowerASCII(uri[:i])]; ok {
			return s, uri[i+1:], true
		}
	}
	if len(m.unprefixed) == 1 {
		return m.unprefixed[0], uri, true
	}
	return "", "", false
}

// lowerASCII lowercases ASCII letters only, allocating only if needed.
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
