package naming

import (
	"strings"
	"testing"
)

func TestURIPrefix(t *testing.T) {
	tests := []struct {
		name, prefix, want string
	}{
		{name: "plain", prefix: "files", want: "files"},
		{name: "upper and underscore", prefix: "My_Files", want: "my-files"},
		{name: "dash kept", prefix: "a-b", want: "a-b"},
		{name: "leading digit", prefix: "1st", want: "m1st"},
		{name: "leading underscore", prefix: "_x", want: "m-x"},
		{name: "leading dash", prefix: "-x", want: "m-x"},
		{name: "other characters", prefix: "a.b+c/é", want: "a-b-c--"},
		{name: "empty is unprefixed", prefix: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URIPrefix(tt.prefix); got != tt.want {
				t.Errorf("URIPrefix(%q) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
}

func TestNewURIMapErrors(t *testing.T) {
	tests := []struct {
		name     string
		servers  []URIServer
		wantErrs []string // substrings of the error; none means no error
	}{
		{
			name:    "distinct",
			servers: []URIServer{{Server: "files", Prefix: "files"}, {Server: "b", Prefix: ""}, {Server: "c", Prefix: ""}},
		},
		{
			name:     "prefixes collide",
			servers:  []URIServer{{Server: "one", Prefix: "a_b"}, {Server: "two", Prefix: "A-B"}},
			wantErrs: []string{`servers "one" and "two" both rewrite resource URIs as "a-b+…"`},
		},
		{
			name:     "m prepended collides",
			servers:  []URIServer{{Server: "one", Prefix: "1x"}, {Server: "two", Prefix: "m1x"}},
			wantErrs: []string{`"one" and "two"`},
		},
		{
			name: "all problems at once",
			servers: []URIServer{
				{Server: "one", Prefix: "x"}, {Server: "one", Prefix: "y"},
				{Server: "two", Prefix: "X"},
			},
			wantErrs: []string{`server "one" is listed twice`, `servers "one" and "two"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewURIMap(tt.servers)
			if len(tt.wantErrs) == 0 {
				if err != nil || m == nil {
					t.Fatalf("NewURIMap() = %v, %v; want a map", m, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewURIMap() succeeded, want an error")
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func mustURIMap(t testing.TB, servers ...URIServer) *URIMap {
	t.Helper()
	m, err := NewURIMap(servers)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestURIRoundTrip(t *testing.T) {
	m := mustURIMap(t,
		URIServer{Server: "files", Prefix: "files"},
		URIServer{Server: "every", Prefix: "Every_Thing"},
		URIServer{Server: "plain", Prefix: ""},
	)
	tests := []struct {
		name, server, uri, want string
	}{
		{name: "file", server: "files", uri: "file:///tmp/a.txt", want: "files+file:///tmp/a.txt"},
		{name: "custom scheme", server: "every", uri: "test://static/resource/1", want: "every-thing+test://static/resource/1"},
		{name: "plus in scheme", server: "files", uri: "git+ssh://host/repo.git", want: "files+git+ssh://host/repo.git"},
		{name: "no scheme", server: "files", uri: "relative/path", want: "files+relative/path"},
		{name: "empty", server: "files", uri: "", want: "files+"},
		{name: "unicode", server: "files", uri: "file:///tmp/Ünïcødé 文件.txt", want: "files+file:///tmp/Ünïcødé 文件.txt"},
		{name: "percent-encoding", server: "files", uri: "file:///a%20b%2Bc?q=%2B+x#f", want: "files+file:///a%20b%2Bc?q=%2B+x#f"},
		{name: "looks prefixed already", server: "files", uri: "every-thing+x:y", want: "files+every-thing+x:y"},
		{name: "unprefixed unchanged", server: "plain", uri: "file:///etc/hosts", want: "file:///etc/hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.Outward(tt.server, tt.uri)
			if got != tt.want {
				t.Errorf("Outward(%q, %q) = %q, want %q", tt.server, tt.uri, got, tt.want)
			}
			server, orig, ok := m.Inward(got)
			if !ok || server != tt.server || orig != tt.uri {
				t.Errorf("Inward(%q) = %q, %q, %v; want %q, %q, true", got, server, orig, ok, tt.server, tt.uri)
			}
		})
	}
}

func TestInward(t *testing.T) {
	one := mustURIMap(t, URIServer{Server: "files", Prefix: "files"}, URIServer{Server: "plain", Prefix: ""})
	two := mustURIMap(t, URIServer{Server: "files", Prefix: "files"}, URIServer{Server: "p1"}, URIServer{Server: "p2"})
	none := mustURIMap(t, URIServer{Server: "files", Prefix: "files"})
	var nilMap *URIMap
	tests := []struct {
		name       string
		m          *URIMap
		uri        string
		wantServer string
		wantOrig   string
		wantOK     bool
	}{
		{name: "prefixed", m: one, uri: "files+file:///a", wantServer: "files", wantOrig: "file:///a", wantOK: true},
		{name: "scheme uppercased by client", m: one, uri: "FILES+file:///a", wantServer: "files", wantOrig: "file:///a", wantOK: true},
		{name: "mixed case", m: one, uri: "FiLeS+File:///A", wantServer: "files", wantOrig: "File:///A", wantOK: true},
		{name: "only the first plus", m: one, uri: "files+git+ssh://h/r", wantServer: "files", wantOrig: "git+ssh://h/r", wantOK: true},
		{name: "unknown prefix goes to the one unprefixed", m: one, uri: "git+ssh://h/r", wantServer: "plain", wantOrig: "git+ssh://h/r", wantOK: true},
		{name: "no plus goes to the one unprefixed", m: one, uri: "file:///etc/hosts", wantServer: "plain", wantOrig: "file:///etc/hosts", wantOK: true},
		{name: "leading plus", m: one, uri: "+files", wantServer: "plain", wantOrig: "+files", wantOK: true},
		{name: "empty to the one unprefixed", m: one, uri: "", wantServer: "plain", wantOrig: "", wantOK: true},
		{name: "two unprefixed: unknown", m: two, uri: "file:///etc/hosts"},
		{name: "two unprefixed: prefixed still found", m: two, uri: "files+x", wantServer: "files", wantOrig: "x", wantOK: true},
		{name: "no unprefixed: unknown", m: none, uri: "file:///etc/hosts"},
		{name: "no unprefixed: prefix not case-folded beyond ASCII", m: none, uri: "fİles+x"},
		{name: "nil map", m: nilMap, uri: "files+x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, orig, ok := tt.m.Inward(tt.uri)
			if server != tt.wantServer || orig != tt.wantOrig || ok != tt.wantOK {
				t.Errorf("Inward(%q) = %q, %q, %v; want %q, %q, %v", tt.uri, server, orig, ok, tt.wantServer, tt.wantOrig, tt.wantOK)
			}
		})
	}
	if got := nilMap.Outward("files", "x"); got != "x" {
		t.Errorf("nil map: Outward = %q, want unchanged", got)
	}
	if got := one.Outward("unknown", "x"); got != "x" {
		t.Errorf("unknown server: Outward = %q, want unchanged", got)
	}
}

// expandSimple expands the RFC 6570 expressions of a template that uses only
// {var} and {+var} with one variable each, enough to check that prefixing
// keeps expressions intact.
func expandSimple(t *testing.T, tmpl string, vars map[string]string) string {
	t.Helper()
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			t.Fatalf("unclosed expression in %q", tmpl)
		}
		b.WriteString(tmpl[:i])
		expr := strings.TrimPrefix(tmpl[i+1:i+j], "+")
		v, ok := vars[expr]
		if !ok {
			t.Fatalf("template %q: unknown variable %q", tmpl, expr)
		}
		b.WriteString(v)
		tmpl = tmpl[i+j+1:]
	}
}

func TestOutwardTemplate(t *testing.T) {
	m := mustURIMap(t, URIServer{Server: "files", Prefix: "files"}, URIServer{Server: "plain"})
	vars := map[string]string{"path": "tmp/a", "id": "7", "x": "y"}
	tests := []struct {
		name, server, tmpl, want string
	}{
		{name: "literal scheme", server: "files", tmpl: "file:///{+path}", want: "files+file:///{+path}"},
		{name: "custom scheme", server: "files", tmpl: "test://dynamic/resource/{id}", want: "files+test://dynamic/resource/{id}"},
		{name: "starts with an expression", server: "files", tmpl: "{+path}", want: "files+{+path}"},
		{name: "plus inside expression", server: "files", tmpl: "git+ssh://{+path}?{x}", want: "files+git+ssh://{+path}?{x}"},
		{name: "unprefixed unchanged", server: "plain", tmpl: "file:///{+path}", want: "file:///{+path}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.OutwardTemplate(tt.server, tt.tmpl)
			if got != tt.want {
				t.Fatalf("OutwardTemplate(%q, %q) = %q, want %q", tt.server, tt.tmpl, got, tt.want)
			}
			// Expressions are untouched: the same expressions, in order.
			if g, w := expressions(got), expressions(tt.tmpl); g != w {
				t.Errorf("expressions %q, want %q", g, w)
			}
			// Expanding the rewritten template gives the rewritten expansion,
			// which Inward maps back to the server and the original expansion.
			expanded := expandSimple(t, got, vars)
			if want := m.Outward(tt.server, expandSimple(t, tt.tmpl, vars)); expanded != want {
				t.Errorf("expansion %q, want %q", expanded, want)
			}
			server, orig, ok := m.Inward(expanded)
			if !ok || server != tt.server || orig != expandSimple(t, tt.tmpl, vars) {
				t.Errorf("Inward(%q) = %q, %q, %v", expanded, server, orig, ok)
			}
			// completion/complete refs carry the template itself.
			if server, orig, ok := m.Inward(got); !ok || server != tt.server || orig != tt.tmpl {
				t.Errorf("Inward(template %q) = %q, %q, %v; want %q, %q, true", got, server, orig, ok, tt.server, tt.tmpl)
			}
		})
	}
}

// expressions returns the {…} parts of a template, concatenated.
func expressions(tmpl string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return b.String() + "unclosed"
		}
		b.WriteString(tmpl[i : i+j+1])
		tmpl = tmpl[i+j+1:]
	}
}

func FuzzURI(f *testing.F) {
	f.Add("files", "other", "file:///tmp/a.txt", "file:///tmp/a.txt")
	f.Add("Every_Thing", "e", "test://static/resource/1", "")
	f.Add("1x", "m1x", "git+ssh://h/r", "x")
	f.Add("a", "a_b", "b+c", "c")
	f.Add("é", "_", "%2B+€", "+")
	f.Fuzz(func(t *testing.T, prefix1, prefix2, uri1, uri2 string) {
		if prefix1 == "" || prefix2 == "" {
			return // round trips are promised for prefixed servers
		}
		for _, p := range []string{URIPrefix(prefix1), URIPrefix(prefix2)} {
			if strings.Contains(p, "+") || p[0] < 'a' || p[0] > 'z' || p != strings.ToLower(p) {
				t.Errorf("URIPrefix gave %q: want lowercase, no '+', starting with a letter", p)
			}
		}
		m, err := NewURIMap([]URIServer{{Server: "one", Prefix: prefix1}, {Server: "two", Prefix: prefix2}})
		if URIPrefix(prefix1) == URIPrefix(prefix2) {
			if err == nil {
				t.Fatalf("prefixes %q and %q share a URI prefix, want an error", prefix1, prefix2)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		type pair struct{ server, uri string }
		pairs := []pair{{"one", uri1}, {"one", uri2}, {"two", uri1}, {"two", uri2}}
		seen := make(map[string]pair)
		for _, p := range pairs {
			out := m.Outward(p.server, p.uri)
			if prev, ok := seen[out]; ok && prev != p {
				t.Errorf("Outward(%v) = Outward(%v) = %q", p, prev, out)
			}
			seen[out] = p
			for _, o := range []string{out, upperHead(out)} {
				server, orig, ok := m.Inward(o)
				if !ok || server != p.server || orig != p.uri {
					t.Errorf("Inward(%q) = %q, %q, %v; want %q, %q, true", o, server, orig, ok, p.server, p.uri)
				}
			}
			if got := m.OutwardTemplate(p.server, p.uri); got != out {
				t.Errorf("OutwardTemplate(%v) = %q, want %q", p, got, out)
			}
		}
	})
}

// upperHead uppercases the part before the first "+", as a client that
// normalizes scheme case might.
func upperHead(s string) string {
	i := strings.IndexByte(s, '+')
	return strings.ToUpper(s[:i]) + s[i:]
}

func TestRewrites(t *testing.T) {
	m, err := NewURIMap([]URIServer{{Server: "a", Prefix: "a"}, {Server: "b", Prefix: ""}})
	if err != nil {
		t.Fatal(err)
	}
	for server, want := range map[string]bool{"a": true, "b": false, "unknown": false} {
		if got := m.Rewrites(server); got != want {
			t.Errorf("Rewrites(%q) = %v, want %v", server, got, want)
		}
	}
	if (*URIMap)(nil).Rewrites("a") {
		t.Error("a nil map rewrites")
	}
}
