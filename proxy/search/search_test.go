package search

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var testDocs = []Doc{
	{
		ID: "files__read_text_file", Name: "files__read_text_file", Server: "files",
		Description: "Read the complete contents of a file from the file system as text.",
		Params:      []Param{{Name: "path", Description: "Path of the file"}, {Name: "head", Description: "Only the first N lines"}},
		ServerText:  "Secure file system access within allowed directories.",
	},
	{
		ID: "files__list_directory", Name: "files__list_directory", Server: "files",
		Description: "Get a detailed listing of all files and directories in a specified path.",
		Params:      []Param{{Name: "path"}},
		ServerText:  "Secure file system access within allowed directories.",
	},
	{
		ID: "files__move_file", Name: "files__move_file", Server: "files",
		Description: "Move or rename files and directories.",
		Params:      []Param{{Name: "source"}, {Name: "destination"}},
	},
	{
		ID: "github__create_pull_request", Name: "github__create_pull_request", Server: "github",
		Title: "Open new pull request", Description: "Create a new pull request in a GitHub repository.",
		Params: []Param{{Name: "owner"}, {Name: "repo"}, {Name: "title"}, {Name: "head"}, {Name: "base"}},
	},
	{
		ID: "github__list_issues", Name: "github__list_issues", Server: "github",
		Description: "List issues in a GitHub repository with filtering options.",
		Params:      []Param{{Name: "owner"}, {Name: "repo"}, {Name: "state", Description: "open, closed or all"}},
	},
	{
		ID: "browser__browser_take_screenshot", Name: "browser__browser_take_screenshot", Server: "browser",
		Description: "Take a screenshot of the current page.",
		Params:      []Param{{Name: "fullPage", Description: "Capture the full scrollable page"}},
	},
	{
		ID: "time__get_current_time", Name: "time__get_current_time", Server: "time",
		Description: "Get current time in a specific timezone.",
		Params:      []Param{{Name: "timezone", Description: "IANA timezone name"}},
	},
	{
		ID: "wiki__recherche_café", Name: "wiki__recherche_café", Server: "wiki",
		Description: "Recherche d'articles sur le café et le thé. 検索する記事",
	},
}

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func TestSearchRanksTheObviousMatchFirst(t *testing.T) {
	ix := New(testDocs)
	tests := []struct {
		query string
		want  string
	}{
		{query: "read a text file", want: "files__read_text_file"},
		{query: "files__read_text_file", want: "files__read_text_file"},
		{query: "readTextFile", want: "files__read_text_file"},
		{query: "what is in this folder", want: "files__list_directory"},
		{query: "rename a file", want: "files__move_file"},
		{query: "open a PR", want: "github__create_pull_request"},
		{query: "show me the open tickets of my repo", want: "github__list_issues"},
		{query: "capture the page as an image", want: "browser__browser_take_screenshot"},
		{query: "what time is it in Tokyo", want: "time__get_current_time"},
		{query: "CAFÉ", want: "wiki__recherche_café"},
		{query: "read the file notes.txt", want: "files__read_text_file"},
		{query: "read /home/me/notes.txt", want: "files__read_text_file"},
		{query: `read "my notes about the timezone"`, want: "files__read_text_file"},
		{query: "list the files in ./src/time", want: "files__list_directory"},
		{query: "検索する記事", want: "wiki__recherche_café"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := ix.Search(tt.query, 3)
			if len(hits) == 0 || hits[0].ID != tt.want {
				t.Errorf("Search(%q) = %v, want %q first", tt.query, hits, tt.want)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Errorf("Search(%q): hits not best first: %v", tt.query, hits)
				}
			}
		})
	}
}

func TestSearchReturnsNoHits(t *testing.T) {
	ix := New(testDocs)
	tests := []struct {
		name  string
		query string
		k     int
	}{
		{name: "words no doc has", query: "zebra quantum pancake", k: 5},
		{name: "empty", query: "", k: 5},
		{name: "blank", query: " \t\n", k: 5},
		{name: "punctuation only", query: "?!-_/.", k: 5},
		{name: "stop words only", query: "can you please do it for me", k: 5},
		{name: "one common word among unknown ones", query: "book a flight to Paris in a file", k: 5},
		{name: "a task for a tool the catalog lacks", query: "send an email to my boss about the file", k: 5},
		{name: "a product the catalog lacks", query: "play the music files on Spotify", k: 5},
		{name: "k zero", query: "read a text file", k: 0},
		{name: "k negative", query: "read a text file", k: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if hits := ix.Search(tt.query, tt.k); len(hits) != 0 {
				t.Errorf("Search(%q, %d) = %v, want no hits", tt.query, tt.k, hits)
			}
		})
	}
	if hits := New(nil).Search("read a file", 5); len(hits) != 0 {
		t.Errorf("empty index: Search = %v, want no hits", hits)
	}
}

func TestSearchReturnsAtMostK(t *testing.T) {
	ix := New(testDocs)
	for k := 1; k <= 3; k++ {
		if hits := ix.Search("list files directories in the file system", k); len(hits) == 0 || len(hits) > k {
			t.Errorf("Search(k=%d) returned %d hits: %v", k, len(hits), hits)
		}
	}
}

func TestSearchIsDeterministic(t *testing.T) {
	// Two docs with the same text tie; the tie breaks by ID, whatever the order of the docs.
	a := Doc{ID: "b__x", Name: "b__x", Title: "Frobnicate", Description: "frobnicate widgets"}
	b := Doc{ID: "a__x", Name: "a__x", Title: "Frobnicate", Description: "frobnicate widgets"}
	others := []Doc{{ID: "c__y", Name: "c__y", Description: "paint fences"}, {ID: "c__z", Name: "c__z", Description: "mow lawns"}}
	for _, docs := range [][]Doc{append([]Doc{a, b}, others...), append([]Doc{b, a}, others...)} {
		got := ids(New(docs).Search("frobnicate widgets", 5))
		if diff := cmp.Diff([]string{"a__x", "b__x"}, got); diff != "" {
			t.Errorf("ties (-want +got):\n%s", diff)
		}
	}
}

func TestSearchConcurrent(t *testing.T) {
	ix := New(testDocs)
	want := ids(ix.Search("read a text file", 5))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				q := []string{"read a text file", "open a PR", "zebra", "検索", "time in Tokyo"}[(g+i)%5]
				got := ix.Search(q, 5)
				if q == "read a text file" {
					if diff := cmp.Diff(want, ids(got)); diff != "" {
						t.Errorf("concurrent Search (-want +got):\n%s", diff)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "files__read_text_file", want: []string{"files", "read", "text", "file"}},
		{in: "browser-take-screenshot", want: []string{"browser", "take", "screenshot"}},
		{in: "readFile", want: []string{"read", "file", "readfile"}},
		{in: "HTTPServer", want: []string{"http", "server", "httpserver"}},
		{in: "GitHub", want: []string{"git", "hub", "github"}},
		{in: "base64 v2", want: []string{"base", "64", "base64", "v", "2", "v2"}},
		{in: "path/to/file.txt", want: []string{"path", "to", "file", "txt"}},
		{in: "Ünïcödé CAFÉ", want: []string{"ünïcödé", "café"}},
		{in: "cafe\u0301", want: []string{"cafe\u0301"}}, // a combining accent stays with its letter
		{in: "検索する記事", want: []string{"検索する記事"}},
		{in: "bad\xffutf8", want: []string{"bad", "utf", "8", "utf8"}},
		{in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tokens(tt.in)); diff != "" {
				t.Errorf("tokens(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestAnalyseQuery(t *testing.T) {
	ix := New(testDocs)
	tests := []struct {
		query string
		want  []term
	}{
		{query: "GitHub", want: []term{{word: "github"}}},             // the catalog knows it whole
		{query: "FooBar", want: []term{{word: "foo"}, {word: "bar"}}}, // it does not
		{query: "read notes.txt", want: []term{{word: "read"}, {word: "fil"}, {word: "not", role: roleValue}, {word: "txt", role: roleValue}}},
		{query: `find "open files" now`, want: []term{{word: "find"}, {word: "open", role: roleValue}, {word: "fil", role: roleValue}}},
		{query: "post in #general, ask @ann", want: []term{{word: "post"}, {word: "channel"}, {word: "general", role: roleValue}, {word: "ask", role: roleArg}, {word: "user"}, {word: "ann", role: roleValue}}},
		{query: "a folder called Build now", want: []term{{word: "folder"}, {word: "build", role: roleValue}}},
		{query: "search the web for weather in London", want: []term{{word: "search"}, {word: "web"}, {word: "weather", role: roleArg}, {word: "london", role: roleName}}},
		{query: "Weather in Berlin and GitHub", want: []term{{word: "weather"}, {word: "berlin", role: roleName}, {word: "github"}}},
		{query: "look up trace 4bf92f3577b3 for issue 55", want: []term{{word: "lookup"}, {word: "trac"}, {word: "4", role: roleValue}, {word: "bf", role: roleValue}, {word: "92", role: roleValue}, {word: "f", role: roleValue}, {word: "3577", role: roleValue}, {word: "b", role: roleValue}, {word: "3", role: roleValue}, {word: "issu"}, {word: "55", role: roleValue}}},
		{query: "open a pull request.", want: []term{{word: "open"}, {word: "pr"}}},
		{query: "pull the request", want: []term{{word: "pull"}, {word: "request"}}},
		{query: `"unclosed quote`, want: []term{{word: "unclos", role: roleValue}, {word: "quot", role: roleValue}}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ix.analyseQuery(tt.query), cmp.AllowUnexported(term{})); diff != "" {
				t.Errorf("analyseQuery(%q) (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

func TestValueKind(t *testing.T) {
	tests := map[string]string{
		"https://example.com/a": "url", "www.example.org": "url", "example.com": "url", "(example.io),": "url",
		"notes.txt": "file", "./src/main.go": "file", "/etc/hosts": "file", `C:\\x`: "file", "~/notes": "file", "report.md.": "file",
		"#general": "channel", "@ann": "user", "ann@example.com": "email",
		"hello": "", "#": "", "e.g.": "", "v1.2": "", "3.14": "",
	}
	for in, want := range tests {
		if got := valueKind(in); got != want {
			t.Errorf("valueKind(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStem(t *testing.T) {
	// Each group's words must meet; words of different groups must not.
	groups := [][]string{
		{"file", "files"},
		{"directory", "directories"},
		{"create", "creates", "created", "creating"},
		{"write", "writes", "writing"},
		{"run", "runs", "running"},
		{"search", "searches", "searching", "searched"},
		{"issue", "issues"},
		{"copy", "copies", "copied"},
		{"add", "adds", "added", "adding"},
		{"pull", "pulls", "pulling"},
		{"status"},
		{"string", "strings"},
		{"process", "processes"},
		{"box", "boxes"},
		{"recent", "recently"},
		{"week", "weekly"},
	}
	seen := map[string]string{}
	for _, g := range groups {
		s := stem(g[0])
		for _, w := range g {
			if got := stem(w); got != s {
				t.Errorf("stem(%q) = %q, want %q (as stem(%q))", w, got, s, g[0])
			}
		}
		if other, ok := seen[s]; ok {
			t.Errorf("stem(%q) = stem(%q) = %q", g[0], other, s)
		}
		seen[s] = g[0]
	}
	for _, w := range []string{"café", "検索", "v2", "abc"} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

func FuzzSearch(f *testing.F) {
	for _, s := range []string{"read a file", "", "ÜNÏCÖDÉ", "検索", "\xff\xfe", "a\u0301b", "getHTTPServerV2_x-y", strings.Repeat("z", 300)} {
		f.Add(s)
	}
	docs := append(testDocs, Doc{ID: "fuzz", Name: "fuzz", Description: "\xff broken \u0301 text"})
	ix, sem := New(docs), NewWith(docs, Options{Semantic: true})
	f.Fuzz(func(t *testing.T, q string) {
		hits := ix.Search(q, 3)
		for _, h := range append(sem.Search(q, 3), hits...) {
			if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
				t.Fatalf("Search(%q): hit %v", q, h)
			}
		}
		if len(hits) > 3 {
			t.Fatalf("Search(%q) returned %d hits", q, len(hits))
		}
		for _, tok := range tokens(q) {
			if !utf8.ValidString(tok) || tok == "" {
				t.Fatalf("tokens(%q) has %q", q, tok)
			}
		}
		_ = fmt.Sprint(hits)
	})
}

func TestSearchServerProfile(t *testing.T) {
	// Most tools of server s9 say "Acme"; the one that does not is found by
	// the word too, below its siblings that say it themselves.
	docs := []Doc{
		{ID: "s9__x", Name: "s9__x", Server: "s9", Description: "Frobnicate widgets in Acme."},
		{ID: "s9__y", Name: "s9__y", Server: "s9", Description: "List the gadgets of an Acme account."},
		{ID: "s9__z", Name: "s9__z", Server: "s9", Description: "Delete a gadget."},
		{ID: "s2__z", Name: "s2__z", Server: "s2", Description: "Delete a gadget."},
		{ID: "s2__w", Name: "s2__w", Server: "s2", Description: "Polish a gadget."},
		{ID: "s2__v", Name: "s2__v", Server: "s2", Description: "Paint a gadget."},
	}
	o := defaultOptions
	o.MinConfidence = math.Inf(-1) // this tests the ranking alone
	got := ids(build(docs, o).Search("delete an acme gadget", 5))
	if len(got) < 2 || got[0] != "s9__z" {
		t.Errorf("Search = %v, want s9__z first (its server's profile has acme)", got)
	}
	o.Profile = 0
	if got := ids(build(docs, o).Search("delete an acme gadget", 5)); len(got) > 0 && got[0] == "s9__z" {
		t.Errorf("without profiles Search = %v; the test does not test profiles", got)
	}
}
