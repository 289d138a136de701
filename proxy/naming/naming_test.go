package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestExpose(t *testing.T) {
	a64 := strings.Repeat("a", 64)
	tests := []struct {
		name         string
		prefix, orig string
		want         string
	}{
		{name: "prefixed", prefix: "files", orig: "read_file", want: "files__read_file"},
		{name: "empty prefix", prefix: "", orig: "read_file", want: "read_file"},
		{name: "dash kept", prefix: "my-srv", orig: "get-x", want: "my-srv__get-x"},
		{name: "dots and slashes", prefix: "gh", orig: "repo.list/all", want: "gh__repo_list_all"},
		{name: "space and colon", prefix: "x", orig: "do it:now", want: "x__do_it_now"},
		{name: "unicode rune is one underscore", prefix: "x", orig: "héllo→", want: "x__h_llo_"},
		{name: "invalid utf-8 byte", prefix: "x", orig: "a\xffb", want: "x__a_b"},
		{name: "double underscore in original", prefix: "a", orig: "b__c", want: "a__b__c"},
		{name: "prefix sanitized too", prefix: "my.srv", orig: "t", want: "my_srv__t"},
		{name: "empty name with prefix", prefix: "p", orig: "", want: "p__"},
		{name: "exactly 64", prefix: "", orig: a64, want: a64},
		// Hashes checked with sha256sum: printf 'srv\0aaa…' | sha256sum.
		{
			name: "too long with prefix", prefix: "srv", orig: strings.Repeat("a", 70),
			want: "srv__" + strings.Repeat("a", 50) + "-cf875271",
		},
		{
			name: "65 without prefix", prefix: "", orig: strings.Repeat("x", 65),
			want: strings.Repeat("x", 55) + "-997ee4d9",
		},
		{name: "all empty", prefix: "", orig: "", want: "_-6e340b9c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Expose(tt.prefix, tt.orig)
			if got != tt.want {
				t.Errorf("Expose(%q, %q) = %q, want %q", tt.prefix, tt.orig, got, tt.want)
			}
			checkName(t, got)
		})
	}
}

// checkName fails unless name matches ^[A-Za-z0-9_-]{1,64}$.
func checkName(t *testing.T, name string) {
	t.Helper()
	if name == "" || len(name) > MaxNameLen {
		t.Errorf("exposed name %q has length %d, want 1..%d", name, len(name), MaxNameLen)
	}
	for _, r := range name {
		if !validRune(r) {
			t.Errorf("exposed name %q contains %q", name, r)
		}
	}
}

// level returns the hashed form of a name at a clash level, for building
// expectations and crafting clashes.
func level(prefix, name string, l int) string {
	s, _ := expose(prefix, name, l, MaxNameLen)
	return s
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name           string
		groups         []Group
		wantEntries    []Entry
		wantCollisions []Collision
	}{
		{
			name: "plain",
			groups: []Group{
				{Server: "files", Prefix: "files", Names: []string{"read_file", "write_file"}},
				{Server: "gh", Prefix: "", Names: []string{"create_issue"}},
			},
			wantEntries: []Entry{
				{Exposed: "create_issue", Server: "gh", Original: "create_issue"},
				{Exposed: "files__read_file", Server: "files", Original: "read_file"},
				{Exposed: "files__write_file", Server: "files", Original: "write_file"},
			},
		},
		{
			name: "duplicates ignored",
			groups: []Group{
				{Server: "s", Prefix: "s", Names: []string{"x", "x"}},
			},
			wantEntries: []Entry{{Exposed: "s__x", Server: "s", Original: "x"}},
		},
		{
			name: "valid name keeps, sanitized one hashed",
			groups: []Group{
				{Server: "s", Prefix: "s", Names: []string{"a.b", "a_b"}},
			},
			wantEntries: []Entry{
				{Exposed: "s__a_b", Server: "s", Original: "a_b"},
				{Exposed: level("s", "a.b", 1), Server: "s", Original: "a.b"},
			},
		},
		{
			name: "no valid member: all hashed",
			groups: []Group{
				{Server: "s", Prefix: "s", Names: []string{"a/b", "a.b"}},
			},
			wantEntries: sortEntries([]Entry{
				{Exposed: level("s", "a.b", 1), Server: "s", Original: "a.b"},
				{Exposed: level("s", "a/b", 1), Server: "s", Original: "a/b"},
			}),
		},
		{
			name: "unique sanitized name not hashed",
			groups: []Group{
				{Server: "s", Prefix: "", Names: []string{"a.b", "c"}},
			},
			wantEntries: []Entry{
				{Exposed: "a_b", Server: "s", Original: "a.b"},
				{Exposed: "c", Server: "s", Original: "c"},
			},
		},
		{
			name: "hashed form taken by a valid name: longer hash",
			groups: []Group{
				{Server: "s", Prefix: "", Names: []string{"a.b", "a_b", level("", "a.b", 1)}},
			},
			wantEntries: sortEntries([]Entry{
				{Exposed: "a_b", Server: "s", Original: "a_b"},
				{Exposed: level("", "a.b", 1), Server: "s", Original: level("", "a.b", 1)},
				{Exposed: level("", "a.b", 2), Server: "s", Original: "a.b"},
			}),
		},
		{
			name: "every hashed form taken: dropped and reported",
			groups: []Group{
				{Server: "s", Prefix: "", Names: []string{
					"a.b", "a_b", level("", "a.b", 1), level("", "a.b", 2), level("", "a.b", 3),
				}},
			},
			wantEntries: sortEntries([]Entry{
				{Exposed: "a_b", Server: "s", Original: "a_b"},
				{Exposed: level("", "a.b", 1), Server: "s", Original: level("", "a.b", 1)},
				{Exposed: level("", "a.b", 2), Server: "s", Original: level("", "a.b", 2)},
				{Exposed: level("", "a.b", 3), Server: "s", Original: level("", "a.b", 3)},
			}),
			wantCollisions: []Collision{{
				Exposed: level("", "a.b", 3),
				Kept:    Entry{Exposed: level("", "a.b", 3), Server: "s", Original: level("", "a.b", 3)},
				Dropped: Entry{Exposed: level("", "a.b", 3), Server: "s", Original: "a.b"},
			}},
		},
		{
			name: "long names sharing a head",
			groups: []Group{
				{Server: "s", Prefix: "s", Names: []string{strings.Repeat("n", 80) + "1", strings.Repeat("n", 80) + "2"}},
			},
			wantEntries: sortEntries([]Entry{
				{Exposed: level("s", strings.Repeat("n", 80)+"1", 0), Server: "s", Original: strings.Repeat("n", 80) + "1"},
				{Exposed: level("s", strings.Repeat("n", 80)+"2", 0), Server: "s", Original: strings.Repeat("n", 80) + "2"},
			}),
		},
		{
			name: "cross-server: earlier group wins",
			groups: []Group{
				{Server: "one", Prefix: "", Names: []string{"search"}},
				{Server: "two", Prefix: "", Names: []string{"search", "fetch"}},
			},
			wantEntries: []Entry{
				{Exposed: "fetch", Server: "two", Original: "fetch"},
				{Exposed: "search", Server: "one", Original: "search"},
			},
			wantCollisions: []Collision{{
				Exposed: "search",
				Kept:    Entry{Exposed: "search", Server: "one", Original: "search"},
				Dropped: Entry{Exposed: "search", Server: "two", Original: "search"},
			}},
		},
		{
			name: "cross-server: prefix and name split differently",
			groups: []Group{
				{Server: "one", Prefix: "a", Names: []string{"b__c"}},
				{Server: "two", Prefix: "a__b", Names: []string{"c"}},
			},
			// "a__b__c" is in the namespace of "two" (the longest prefix).
			wantEntries: []Entry{{Exposed: "a__b__c", Server: "two", Original: "c"}},
			wantCollisions: []Collision{{
				Exposed: "a__b__c",
				Dropped: Entry{Exposed: "a__b__c", Server: "one", Original: "b__c"},
				Owner:   "two",
			}},
		},
		{
			name: "squatting: an unprefixed server listed first takes no name of another namespace",
			groups: []Group{
				{Server: "squat", Prefix: "", Names: []string{"files__write_file", "files__delete_everything", "files", "filesx__y", "mine"}},
				{Server: "files", Prefix: "files", Names: []string{"write_file"}},
			},
			wantEntries: []Entry{
				{Exposed: "files", Server: "squat", Original: "files"},
				{Exposed: "files__write_file", Server: "files", Original: "write_file"},
				{Exposed: "filesx__y", Server: "squat", Original: "filesx__y"},
				{Exposed: "mine", Server: "squat", Original: "mine"},
			},
			wantCollisions: []Collision{
				{Exposed: "files__delete_everything", Dropped: Entry{Exposed: "files__delete_everything", Server: "squat", Original: "files__delete_everything"}, Owner: "files"},
				{Exposed: "files__write_file", Dropped: Entry{Exposed: "files__write_file", Server: "squat", Original: "files__write_file"}, Owner: "files"},
			},
		},
		{
			name: "squatting: an unprefixed server listed second adds nothing to another namespace",
			groups: []Group{
				{Server: "files", Prefix: "files", Names: []string{"write_file"}},
				{Server: "squat", Prefix: "", Names: []string{"files__write_file", "files__delete_everything"}},
			},
			wantEntries: []Entry{
				{Exposed: "files__write_file", Server: "files", Original: "write_file"},
			},
			wantCollisions: []Collision{
				{Exposed: "files__delete_everything", Dropped: Entry{Exposed: "files__delete_everything", Server: "squat", Original: "files__delete_everything"}, Owner: "files"},
				{Exposed: "files__write_file", Dropped: Entry{Exposed: "files__write_file", Server: "squat", Original: "files__write_file"}, Owner: "files"},
			},
		},
		{
			name: "squatting: sanitized and renamed names are checked too",
			groups: []Group{
				{Server: "files", Prefix: "files", Names: []string{"read"}},
				{Server: "gh", Prefix: "gh", Names: []string{"issue", "pr"}, Renames: map[string]string{"issue": "files__issue", "pr": "gh_pr"}},
				{Server: "squat", Prefix: "", Names: []string{"files..read"}},
			},
			wantEntries: []Entry{
				{Exposed: "files__read", Server: "files", Original: "read"},
				{Exposed: "gh_pr", Server: "gh", Original: "pr"},
			},
			wantCollisions: []Collision{
				{Exposed: "files__issue", Dropped: Entry{Exposed: "files__issue", Server: "gh", Original: "issue"}, Owner: "files"},
				{Exposed: "files__read", Dropped: Entry{Exposed: "files__read", Server: "squat", Original: "files..read"}, Owner: "files"},
			},
		},
		{
			name:   "empty",
			groups: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, collisions := Build(tt.groups)
			got := table.Entries()
			if diff := cmp.Diff(tt.wantEntries, got, cmpNilEmpty); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCollisions, collisions, cmpNilEmpty); diff != "" {
				t.Errorf("collisions (-want +got):\n%s", diff)
			}
			checkTable(t, table)

			// The same names in reverse order give the same result.
			rev := reversed(tt.groups)
			table2, collisions2 := Build(rev)
			if diff := cmp.Diff(got, table2.Entries(), cmpNilEmpty); diff != "" {
				t.Errorf("entries with names reversed (-first +second):\n%s", diff)
			}
			if diff := cmp.Diff(collisions, collisions2, cmpNilEmpty); diff != "" {
				t.Errorf("collisions with names reversed (-first +second):\n%s", diff)
			}
		})
	}
}

var cmpNilEmpty = cmpopts.EquateEmpty()

func sortEntries(es []Entry) []Entry {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Exposed, b.Exposed) })
	return es
}

func reversed(groups []Group) []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		g.Names = slices.Clone(g.Names)
		slices.Reverse(g.Names)
		out[i] = g
	}
	return out
}

// checkTable checks that every entry is valid and found both ways.
func checkTable(t *testing.T, table *Table) {
	t.Helper()
	entries := table.Entries()
	if table.Len() != len(entries) {
		t.Errorf("Len() = %d, want %d", table.Len(), len(entries))
	}
	if !slices.IsSortedFunc(entries, func(a, b Entry) int { return strings.Compare(a.Exposed, b.Exposed) }) {
		t.Errorf("Entries() not sorted by exposed name: %v", entries)
	}
	for _, e := range entries {
		checkName(t, e.Exposed)
		got, ok := table.Lookup(e.Exposed)
		if !ok || got != e {
			t.Errorf("Lookup(%q) = %v, %v; want %v, true", e.Exposed, got, ok, e)
		}
		exposed, ok := table.Exposed(e.Server, e.Original)
		if !ok || exposed != e.Exposed {
			t.Errorf("Exposed(%q, %q) = %q, %v; want %q, true", e.Server, e.Original, exposed, ok, e.Exposed)
		}
	}
}

func TestTableLookupMissing(t *testing.T) {
	table, _ := Build([]Group{{Server: "s", Prefix: "s", Names: []string{"x"}}})
	var nilTable *Table
	tests := []struct {
		name             string
		table            *Table
		exposed          string
		server, original string
	}{
		{name: "unknown exposed", table: table, exposed: "s__y", server: "s", original: "y"},
		{name: "unknown server", table: table, exposed: "x", server: "t", original: "x"},
		{name: "nil table", table: nilTable, exposed: "s__x", server: "s", original: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e, ok := tt.table.Lookup(tt.exposed); ok {
				t.Errorf("Lookup(%q) = %v, true; want false", tt.exposed, e)
			}
			if e, ok := tt.table.Exposed(tt.server, tt.original); ok {
				t.Errorf("Exposed(%q, %q) = %q, true; want false", tt.server, tt.original, e)
			}
		})
	}
	if n := nilTable.Len(); n != 0 || nilTable.Entries() != nil {
		t.Errorf("nil table: Len() = %d, Entries() = %v; want 0, nil", n, nilTable.Entries())
	}
}

func TestEntriesIsACopy(t *testing.T) {
	table, _ := Build([]Group{{Server: "s", Prefix: "s", Names: []string{"x"}}})
	table.Entries()[0].Exposed = "changed"
	if got := table.Entries()[0].Exposed; got != "s__x" {
		t.Errorf("Entries()[0].Exposed = %q after modifying a returned slice, want %q", got, "s__x")
	}
}

func TestBuildShuffled(t *testing.T) {
	// Names that clash in many ways: sanitization, length, hashed forms.
	names := []string{"a.b", "a_b", "a/b", "a b", "", "_", level("p", "a.b", 1), level("p", "a/b", 1)}
	for i := range 5 {
		long := strings.Repeat("L", 70) + fmt.Sprint(i)
		names = append(names, long, level("p", long, 0))
	}
	want, wantColl := Build([]Group{{Server: "s", Prefix: "p", Names: names}})
	checkTable(t, want)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		shuffled := slices.Clone(names)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, gotColl := Build([]Group{{Server: "s", Prefix: "p", Names: shuffled}})
		if diff := cmp.Diff(want.Entries(), got.Entries()); diff != "" {
			t.Fatalf("shuffle %d: entries (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantColl, gotColl); diff != "" {
			t.Fatalf("shuffle %d: collisions (-want +got):\n%s", i, diff)
		}
	}
	if got, want := want.Len()+len(wantColl), len(names); got != want {
		t.Errorf("entries + collisions = %d, want %d names", got, want)
	}
}

func FuzzExpose(f *testing.F) {
	f.Add("files", "read_file")
	f.Add("", "")
	f.Add("a", "b__c")
	f.Add("x", "héllo/wörld")
	f.Add("srv", strings.Repeat("a", 70))
	f.Add("", strings.Repeat("z", 64))
	f.Fuzz(func(t *testing.T, prefix, name string) {
		got := Expose(prefix, name)
		checkName(t, got)
		if again := Expose(prefix, name); again != got {
			t.Errorf("Expose(%q, %q) not deterministic: %q then %q", prefix, name, got, again)
		}
		full := name
		if prefix != "" {
			full = prefix + "__" + name
		}
		valid := full != "" && len(full) <= MaxNameLen && strings.IndexFunc(full, func(r rune) bool { return !validRune(r) }) < 0
		if valid && got != full {
			t.Errorf("Expose(%q, %q) = %q, want the valid full name %q", prefix, name, got, full)
		}
		for l := 1; l <= maxLevel; l++ {
			checkName(t, level(prefix, name, l))
		}
	})
}

func FuzzBuild(f *testing.F) {
	f.Add("p", "a.b\na_b\nc", "", "c\na_b")
	f.Add("", "\n_\n-", "q", "x")
	f.Add("a", "b__c", "a__b", "c")
	f.Add("s", strings.Repeat("n", 80)+"1\n"+strings.Repeat("n", 80)+"2", "s", "a.b")
	f.Fuzz(func(t *testing.T, prefix1, names1, prefix2, names2 string) {
		groups := []Group{
			{Server: "one", Prefix: prefix1, Names: strings.Split(names1, "\n")},
			{Server: "two", Prefix: prefix2, Names: strings.Split(names2, "\n")},
		}
		// Add each name's hashed forms to provoke clashes.
		for i := range groups {
			for _, n := range groups[i].Names {
				if len(groups[i].Names) > 40 {
					break
				}
				groups[i].Names = append(groups[i].Names, level(groups[i].Prefix, n, 0), level(groups[i].Prefix, n, 1))
			}
		}
		table, collisions := Build(groups)
		checkTable(t, table)

		dropped := make(map[origin]bool)
		prefixOf := map[string]string{"one": prefix1, "two": prefix2}
		for _, e := range table.Entries() {
			if owner := namespaceOwner(groups, e.Exposed); owner != nil && owner.Prefix != prefixOf[e.Server] {
				t.Errorf("entry %+v is in the namespace of %q (prefix %q)", e, owner.Server, owner.Prefix)
			}
		}
		for _, c := range collisions {
			if c.Owner != "" {
				owner := namespaceOwner(groups, c.Exposed)
				if c.Kept != (Entry{}) || c.Dropped.Exposed != c.Exposed || owner == nil || owner.Server != c.Owner || prefixOf[c.Dropped.Server] == owner.Prefix {
					t.Errorf("namespace collision %+v: wrong entries or owner", c)
				}
				o := origin{c.Dropped.Server, c.Dropped.Original}
				if _, ok := table.Exposed(o.server, o.original); ok || dropped[o] {
					t.Errorf("collision %+v: dropped entry is in the table or dropped twice", c)
				}
				dropped[o] = true
				continue
			}
			if c.Kept.Exposed != c.Exposed || c.Dropped.Exposed != c.Exposed {
				t.Errorf("collision %+v: entries do not carry its exposed name", c)
			}
			if e, ok := table.Lookup(c.Exposed); !ok || e != c.Kept {
				t.Errorf("collision %+v: Lookup(%q) = %v, %v; want the kept entry", c, c.Exposed, e, ok)
			}
			o := origin{c.Dropped.Server, c.Dropped.Original}
			if _, ok := table.Exposed(o.server, o.original); ok || dropped[o] {
				t.Errorf("collision %+v: dropped entry is in the table or dropped twice", c)
			}
			dropped[o] = true
		}
		distinct := 0
		for _, g := range groups {
			names := slices.Clone(g.Names)
			slices.Sort(names)
			names = slices.Compact(names)
			distinct += len(names)
			for _, n := range names {
				exposed, ok := table.Exposed(g.Server, n)
				if !ok && !dropped[origin{g.Server, n}] {
					t.Errorf("(%q, %q) is neither in the table nor reported dropped", g.Server, n)
				}
				if !ok {
					continue
				}
				if e, _ := table.Lookup(exposed); e != (Entry{Exposed: exposed, Server: g.Server, Original: n}) {
					t.Errorf("Lookup(Exposed(%q, %q)) = %v", g.Server, n, e)
				}
				if v, unchanged := expose(g.Prefix, n, 0, MaxNameLen); unchanged && exposed != v {
					t.Errorf("(%q, %q): valid full name %q exposed as %q", g.Server, n, v, exposed)
				}
			}
		}
		if got := table.Len() + len(collisions); got != distinct {
			t.Errorf("entries %d + collisions %d != %d distinct names", table.Len(), len(collisions), distinct)
		}

		table2, collisions2 := Build(reversed(groups))
		if diff := cmp.Diff(table.Entries(), table2.Entries(), cmpNilEmpty); diff != "" {
			t.Errorf("entries depend on name order (-first +reversed):\n%s", diff)
		}
		if diff := cmp.Diff(collisions, collisions2, cmpNilEmpty); diff != "" {
			t.Errorf("collisions depend on name order (-first +reversed):\n%s", diff)
		}
	})
}

func BenchmarkBuild(b *testing.B) {
	// 3000 names over 10 servers; some need sanitizing, some hashing, a few clash.
	groups := make([]Group, 10)
	for s := range groups {
		g := Group{Server: fmt.Sprintf("server%d", s), Prefix: fmt.Sprintf("srv%d", s)}
		for i := range 300 {
			switch i % 10 {
			case 0:
				g.Names = append(g.Names, fmt.Sprintf("ns.tool.%d", i))
			case 1:
				g.Names = append(g.Names, fmt.Sprintf("a_very_long_tool_name_that_goes_on_and_on_and_on_forever_%d", i))
			case 2:
				g.Names = append(g.Names, fmt.Sprintf("ns_tool_%d", i))
			case 3:
				g.Names = append(g.Names, fmt.Sprintf("ns.tool_%d", i-1)) // clashes with case 2
			default:
				g.Names = append(g.Names, fmt.Sprintf("tool_%d", i))
			}
		}
		groups[s] = g
	}
	b.ReportAllocs()
	for b.Loop() {
		Build(groups)
	}
}

func TestExposeLimit(t *testing.T) {
	long := "this_is_a_very_long_tool_name_that_the_proxy_must_shorten_before_exposing_it_080"
	hash := func(prefix, name string, digits int) string {
		sum := sha256.Sum256([]byte(prefix + "\x00" + name))
		return hex.EncodeToString(sum[:])[:digits]
	}
	tests := []struct {
		name         string
		prefix, orig string
		max          int
		want         string
	}{
		{name: "fits 49", prefix: "alpha", orig: strings.Repeat("a", 42), max: 49, want: "alpha__" + strings.Repeat("a", 42)},
		{name: "one over 49", prefix: "alpha", orig: strings.Repeat("a", 43), max: 49,
			want: "alpha__" + strings.Repeat("a", 33) + "-" + hash("alpha", strings.Repeat("a", 43), 8)},
		{name: "long name, budget 49", prefix: "alpha", orig: long, max: 49,
			want: ("alpha__" + long)[:40] + "-" + hash("alpha", long, 8)},
		{name: "zero is 64", prefix: "alpha", orig: long, max: 0,
			want: ("alpha__" + long)[:55] + "-" + hash("alpha", long, 8)},
		{name: "over 64 is 64", prefix: "alpha", orig: long, max: 100,
			want: ("alpha__" + long)[:55] + "-" + hash("alpha", long, 8)},
		{name: "below the minimum is the minimum", prefix: "alpha", orig: long, max: 5,
			want: ("alpha__" + long)[:MinNameLen-9] + "-" + hash("alpha", long, 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExposeLimit(tt.prefix, tt.orig, tt.max)
			if got != tt.want {
				t.Errorf("ExposeLimit(%q, %q, %d) = %q, want %q", tt.prefix, tt.orig, tt.max, got, tt.want)
			}
			checkName(t, got)
		})
	}
}

// TestBuildLimitKeepsPrefix: two long names of a 32-character prefix whose
// 8-digit hashes collide (found by search) take longer hashes, and under the
// budget of 49 the head still keeps "<prefix>__", so the names stay in the
// server's namespace.
func TestBuildLimitKeepsPrefix(t *testing.T) {
	prefix := strings.Repeat("p", 30) + "_q"
	names := []string{strings.Repeat("x", 20) + "_44378", strings.Repeat("x", 20) + "_194416"}
	tab, collisions := BuildLimit([]Group{{Server: "s", Prefix: prefix, Names: names}}, 49)
	if len(collisions) != 0 {
		t.Fatalf("collisions: %v", collisions)
	}
	entries := tab.Entries()
	if len(entries) != 2 || entries[0].Exposed == entries[1].Exposed {
		t.Fatalf("entries = %v, want two distinct names", entries)
	}
	for _, e := range entries {
		checkName(t, e.Exposed)
		if len(e.Exposed) > 49 || !strings.HasPrefix(e.Exposed, prefix+Separator) {
			t.Errorf("%q: exposed as %q, want at most 49 characters starting with %q", e.Original, e.Exposed, prefix+Separator)
		}
	}
}

// TestFull: the full name is the unshortened, sanitized exposed name, what
// ExposeLimit returns when it fits, whatever its length.
func TestFull(t *testing.T) {
	long := "this_is_a_very_long_tool_name_that_the_proxy_must_shorten_before_exposing_it_080"
	for _, tt := range []struct{ prefix, name, want string }{
		{prefix: "fx", name: long, want: "fx__" + long},
		{prefix: "fx", name: "dotted.name", want: "fx__dotted_name"},
		{prefix: "", name: "a b", want: "a_b"},
	} {
		if got := Full(tt.prefix, tt.name); got != tt.want {
			t.Errorf("Full(%q, %q) = %q, want %q", tt.prefix, tt.name, got, tt.want)
		}
		if len(tt.want) <= MaxNameLen && Expose(tt.prefix, tt.name) != tt.want {
			t.Errorf("Expose(%q, %q) = %q, want the full name %q", tt.prefix, tt.name, Expose(tt.prefix, tt.name), tt.want)
		}
	}
}

// TestBuildLimit: under a small budget, names that share a long head and
// even their hashed forms stay distinct, within the budget, and map both
// ways; the result does not depend on the order of the names.
func TestBuildLimit(t *testing.T) {
	for _, max := range []int{MinNameLen, 30, 49} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			var names []string
			for i := range 200 {
				names = append(names, strings.Repeat("n", 70)+fmt.Sprint(i))
			}
			names = append(names, "short", "x.y")
			table, collisions := BuildLimit([]Group{{Server: "s", Prefix: "srv", Names: names}}, max)
			if len(collisions) != 0 {
				t.Fatalf("collisions: %v", collisions)
			}
			seen := map[string]bool{}
			for _, n := range names {
				exposed, ok := table.Exposed("s", n)
				if !ok {
					t.Fatalf("%q not in the table", n)
				}
				if len(exposed) > max {
					t.Errorf("%q exposed as %q: %d characters, over %d", n, exposed, len(exposed), max)
				}
				checkName(t, exposed)
				if seen[exposed] {
					t.Errorf("%q exposed twice", exposed)
				}
				seen[exposed] = true
				if e, ok := table.Lookup(exposed); !ok || e.Original != n || e.Server != "s" {
					t.Errorf("Lookup(%q) = %+v, %v; want original %q", exposed, e, ok, n)
				}
			}
			rev := slices.Clone(names)
			slices.Reverse(rev)
			again, _ := BuildLimit([]Group{{Server: "s", Prefix: "srv", Names: rev}}, max)
			if diff := cmp.Diff(table.Entries(), again.Entries()); diff != "" {
				t.Errorf("order of names changed the table (-first +second):\n%s", diff)
			}
		})
	}
}
