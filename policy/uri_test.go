package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonicalURI(t *testing.T) {
	tests := []struct {
		name, uri, want string
	}{
		{name: "canonical already", uri: "demo://resource/dynamic/text/1", want: "demo://resource/dynamic/text/1"},
		{name: "scheme upper", uri: "DEMO://resource/dynamic/text/1", want: "demo://resource/dynamic/text/1"},
		{name: "scheme mixed", uri: "Demo://resource/dynamic/text/1", want: "demo://resource/dynamic/text/1"},
		{name: "host case", uri: "demo://RESOURCE/dynamic/Text/1", want: "demo://resource/dynamic/Text/1"},
		{name: "proxy prefix case", uri: "EV+demo://resource/x", want: "ev+demo://resource/x"},
		{name: "proxy prefix mixed", uri: "Ev+Demo://resource/x", want: "ev+demo://resource/x"},
		{name: "dot segment", uri: "file:///srv/./secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "dot dot segment", uri: "file:///srv/x/../secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "dot dot above root", uri: "file:///../../srv/secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "encoded dot", uri: "file:///srv/%2e/secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "encoded dot dot", uri: "file:///srv/x/%2E%2E/secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "encoded letter", uri: "file:///srv/%73ecret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "encoded unreserved", uri: "demo://h/%41%7e%2D%5f", want: "demo://h/A~-_"},
		{name: "reserved kept encoded upper hex", uri: "demo://h/a%3ab%20c", want: "demo://h/a%3Ab%20c"},
		{name: "empty segments", uri: "file:///srv//secret///s.txt", want: "file:///srv/secret/s.txt"},
		{name: "trailing slash", uri: "file:///srv/secret/", want: "file:///srv/secret"},
		{name: "root", uri: "file:///", want: "file:///"},
		{name: "file localhost", uri: "file://localhost/srv/secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "file LOCALHOST", uri: "FILE://LocalHost/srv/secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "file one slash", uri: "file:/srv/secret/s.txt", want: "file:///srv/secret/s.txt"},
		{name: "prefixed file localhost", uri: "fs+file://localhost/srv/s.txt", want: "fs+file:///srv/s.txt"},
		{name: "prefixed file one slash", uri: "fs+file:/srv/s.txt", want: "fs+file:///srv/s.txt"},
		{name: "file empty path", uri: "file://", want: "file:///"},
		{name: "space and non-ASCII encoded", uri: "demo://h/a b/é", want: "demo://h/a%20b/%C3%A9"},
		{name: "query kept", uri: "demo://h/p?a=%41&b=%2f", want: "demo://h/p?a=A&b=%2F"},
		{name: "fragment kept", uri: "demo://h/p#Frag", want: "demo://h/p#Frag"},
		{name: "no authority", uri: "urn:isbn:0451450523", want: "urn:isbn:0451450523"},
		{name: "authority empty path", uri: "demo://h", want: "demo://h"},
		{name: "userinfo kept", uri: "demo://User@Host:80/p", want: "demo://User@host:80/p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalURI(tt.uri)
			if err != nil {
				t.Fatalf("CanonicalURI(%q): %v", tt.uri, err)
			}
			if got != tt.want {
				t.Errorf("CanonicalURI(%q) = %q, want %q", tt.uri, got, tt.want)
			}
			if again, err := CanonicalURI(got); err != nil || again != got {
				t.Errorf("CanonicalURI(%q) = %q, %v; want it unchanged", got, again, err)
			}
		})
	}
}

func TestCanonicalURIRefused(t *testing.T) {
	tests := []struct {
		name, uri, wantErr string
	}{
		{name: "trailing NUL", uri: "file:///srv/secret/s.txt\x00", wantErr: "control character"},
		{name: "encoded NUL", uri: "file:///srv/secret/s.txt%00", wantErr: "control character"},
		{name: "newline", uri: "demo://h/a\nb", wantErr: "control character"},
		{name: "DEL", uri: "demo://h/a\x7f", wantErr: "control character"},
		{name: "encoded slash", uri: "file:///srv/secret%2fs.txt", wantErr: `encoded "/"`},
		{name: "encoded slash upper", uri: "file:///srv/secret%2Fs.txt", wantErr: `encoded "/"`},
		{name: "encoded backslash", uri: "file:///srv/secret%5cs.txt", wantErr: `encoded "\\"`},
		{name: "raw backslash", uri: `file:///srv\secret`, wantErr: `"\"`},
		{name: "bad escape", uri: "demo://h/%zz", wantErr: "malformed percent-encoding"},
		{name: "short escape", uri: "demo://h/%4", wantErr: "malformed percent-encoding"},
		{name: "no scheme", uri: "/srv/secret", wantErr: "no scheme"},
		{name: "empty", uri: "", wantErr: "no scheme"},
		{name: "bad scheme", uri: "1x://h", wantErr: "no scheme"},
		{name: "not UTF-8", uri: "demo://h/\xff", wantErr: "UTF-8"},
		{name: "file remote host", uri: "file://example.com/etc/passwd", wantErr: "host"},
		{name: "file relative", uri: "file:secret.txt", wantErr: "relative path"},
		{name: "file query", uri: "file:///srv/s.txt?x", wantErr: "query"},
		{name: "file fragment", uri: "file:///srv/s.txt#x", wantErr: "fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalURI(tt.uri)
			if err == nil {
				t.Fatalf("CanonicalURI(%q) = %q, want an error", tt.uri, got)
			}
			if !errors.Is(err, ErrURI) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CanonicalURI(%q) error %q, want ErrURI mentioning %q", tt.uri, err, tt.wantErr)
			}
		})
	}
}

func TestCanonicalURIGlob(t *testing.T) {
	tests := []struct {
		name, glob, want string
	}{
		{name: "canonical already", glob: "file:///srv/secret/*", want: "file:///srv/secret/*"},
		{name: "scheme case", glob: "DEMO://resource/dynamic/text/*", want: "demo://resource/dynamic/text/*"},
		{name: "proxy prefix case", glob: "EV+Demo://resource/*", want: "ev+demo://resource/*"},
		{name: "dot segments", glob: "file:///srv/x/.././secret/*", want: "file:///srv/secret/*"},
		{name: "encoded letters", glob: "file:///srv/%73ecret/*", want: "file:///srv/secret/*"},
		{name: "localhost", glob: "file://localhost/srv/secret/*", want: "file:///srv/secret/*"},
		{name: "one slash", glob: "file:/srv/secret/*", want: "file:///srv/secret/*"},
		{name: "empty segments and trailing slash", glob: "file:///srv//secret/", want: "file:///srv/secret"},
		{name: "classes and question marks kept", glob: "demo://h/[a-c]?/*.txt", want: "demo://h/[a-c]?/*.txt"},
		{name: "escapes kept", glob: `demo://h/a\*b`, want: `demo://h/a\*b`},
		{name: "no literal scheme", glob: "*%73ecret*", want: "*secret*"},
		{name: "wildcard scheme", glob: "*://h/%7Ex", want: "*://h/~x"},
		{name: "wildcard host in file", glob: "file://*/secret", want: "file://*/secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalURIGlob(tt.glob)
			if err != nil {
				t.Fatalf("CanonicalURIGlob(%q): %v", tt.glob, err)
			}
			if got != tt.want {
				t.Errorf("CanonicalURIGlob(%q) = %q, want %q", tt.glob, got, tt.want)
			}
		})
	}
}

func TestCanonicalURIGlobNeverMatches(t *testing.T) {
	for _, glob := range []string{
		"file:///srv/secret%2f*",
		"*secret%2F*",
		"file:///srv/*\x00",
		"file:///srv/*%00",
		"file://example.com/*",
		"file:///srv/*/../secret",
		"demo://h/%zz*",
	} {
		if got, err := CanonicalURIGlob(glob); err == nil {
			t.Errorf("CanonicalURIGlob(%q) = %q, want an error: it can never match", glob, got)
		} else if !errors.Is(err, ErrURI) {
			t.Errorf("CanonicalURIGlob(%q) error %v, want ErrURI", glob, err)
		}
	}
}

// TestDecideCanonicalURI: a deny on a canonical URI holds for every
// spelling the issue found reading it, whether the deny is the server's
// resources list or a policy file rule on the exposed URI.
func TestDecideCanonicalURI(t *testing.T) {
	rules := &Rules{
		Servers:   map[string]*ServerRules{"fs": {Resources: List{Deny: []Pattern{{Glob: "file:///srv/secret/*"}}}}},
		FileRules: []Rule{{Name: "ev", URI: true, Deny: true, Match: "ev+demo://resource/dynamic/text/1"}},
	}
	variants := []struct{ server, exposed string }{
		{"fs", "file:///srv/secret/s.txt"},
		{"fs", "FILE:///srv/secret/s.txt"},
		{"fs", "File:///srv/secret/s.txt"},
		{"fs", "file:///srv/./secret/s.txt"},
		{"fs", "file:///srv/x/../secret/s.txt"},
		{"fs", "file:///srv/%2e/secret/s.txt"},
		{"fs", "file:///srv/x/%2E%2E/secret/s.txt"},
		{"fs", "file:///srv/%73ecret/s.txt"},
		{"fs", "file:///srv/secret%2fs.txt"},
		{"fs", "file:///srv//secret/s.txt"},
		{"fs", "file://localhost/srv/secret/s.txt"},
		{"fs", "file:/srv/secret/s.txt"},
		{"fs", "file:///srv/secret/s.txt\x00"},
		{"ev", "ev+demo://resource/dynamic/text/1"},
		{"ev", "EV+demo://resource/dynamic/text/1"},
		{"ev", "Ev+DEMO://resource/dynamic/text/1"},
		{"ev", "ev+demo://resource/dynamic/./text/%31"},
	}
	for _, v := range variants {
		original := v.exposed
		if i := strings.IndexByte(original, '+'); v.server == "ev" && i > 0 {
			original = original[i+1:]
		}
		d := rules.Decide(Item{Kind: Resource, Server: v.server, Original: original, Exposed: v.exposed})
		if d.Visible {
			t.Errorf("Decide(%q) = %s, want hidden", v.exposed, d)
		}
	}
	if d := rules.Decide(Item{Kind: Resource, Server: "fs", Original: "file:///srv/public/p.txt"}); !d.Visible {
		t.Errorf("Decide(public) = %s, want visible", d)
	}
}

// spellings returns URIs that an upstream reading the canonical URI c
// would read as the same resource.
func spellings(c string, seed uint64) []string {
	colon := strings.IndexByte(c, ':')
	scheme, rest := c[:colon], c[colon+1:]
	out := []string{strings.ToUpper(scheme) + ":" + rest}
	// Mixed case of the scheme.
	var mixed strings.Builder
	for i := 0; i < len(scheme); i++ {
		ch := scheme[i]
		if seed>>(i%64)&1 == 1 && 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		mixed.WriteByte(ch)
	}
	out = append(out, mixed.String()+":"+rest)
	base := scheme[strings.LastIndexByte(scheme, '+')+1:]
	if strings.HasPrefix(rest, "//") {
		hier, suffix := rest[2:], ""
		if i := strings.IndexAny(hier, "?#"); i >= 0 {
			hier, suffix = hier[:i], hier[i:]
		}
		auth, path, _ := strings.Cut(hier, "/")
		if base == "file" && auth == "" {
			out = append(out, scheme+"://localhost/"+path+suffix, scheme+"://LOCALHOST/"+path+suffix, scheme+":/"+path+suffix)
		}
		if path != "" {
			segs := strings.Split(path, "/")
			// Dot and empty segments before each segment.
			for i := range segs {
				ins := func(extra ...string) string {
					s := append(append(append([]string{}, segs[:i]...), extra...), segs[i:]...)
					return scheme + "://" + auth + "/" + strings.Join(s, "/") + suffix
				}
				out = append(out, ins("."), ins("x", ".."), ins("%2e"), ins("zz", "%2E%2E"), ins(""))
			}
			// Percent-encoding of unreserved characters.
			var enc strings.Builder
			for i := 0; i < len(path); i++ {
				ch := path[i]
				if unreserved(ch) && seed>>(i%64)&1 == 1 {
					enc.WriteByte('%')
					enc.WriteByte(upperHex[ch>>4])
					enc.WriteByte("0123456789abcdef"[ch&15])
				} else {
					enc.WriteByte(ch)
				}
			}
			out = append(out, scheme+"://"+auth+"/"+enc.String()+suffix, scheme+"://"+auth+"/"+path+"/"+suffix)
		}
	}
	return out
}

func FuzzCanonicalURI(f *testing.F) {
	for _, s := range []string{
		"file:///srv/secret/s.txt", "DEMO://resource/dynamic/text/1", "ev+demo://resource/./x/../y",
		"file://localhost/a%2fb", "file:/a//b/", "demo://h/%41?q=%2f#F", "urn:x:y", "x:", "file:", "a+file:/x",
		"demo://User@Host:1/%C3%A9", "demo://h/a b\x00",
	} {
		f.Add(s, uint64(0x5555))
	}
	f.Fuzz(func(t *testing.T, uri string, seed uint64) {
		c, err := CanonicalURI(uri)
		if err != nil {
			return
		}
		again, err := CanonicalURI(c)
		if err != nil || again != c {
			t.Fatalf("CanonicalURI(%q) = %q, but CanonicalURI(%q) = %q, %v", uri, c, c, again, err)
		}
		// A rule denying exactly the canonical URI (as a glob, escaped)
		// denies every spelling of it.
		glob := escapeGlob(c)
		cg, err := CanonicalURIGlob(glob)
		if err != nil || cg != glob {
			t.Fatalf("CanonicalURIGlob(%q) = %q, %v; want it unchanged", glob, cg, err)
		}
		rules := &Rules{
			Servers:   map[string]*ServerRules{"s": {Resources: List{Deny: []Pattern{{Glob: glob}}}}},
			FileRules: []Rule{{Name: "r", URI: true, Deny: true, Match: glob}},
		}
		for _, v := range append(spellings(c, seed), c) {
			vc, err := CanonicalURI(v)
			if err != nil {
				continue // refused: never read
			}
			if vc != c {
				t.Fatalf("spelling %q of %q canonicalises to %q", v, c, vc)
			}
			if d := rules.Decide(Item{Kind: Resource, Server: "s", Original: v}); d.Visible {
				t.Fatalf("spelling %q of the denied %q is visible", v, c)
			}
			if d := (&Rules{FileRules: rules.FileRules}).Decide(Item{Kind: Resource, Server: "s", Original: v, Exposed: v}); d.Visible {
				t.Fatalf("spelling %q of the denied %q is visible to a policy file rule", v, c)
			}
		}
	})
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
