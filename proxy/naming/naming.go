// Package naming holds the aggregating proxy's name and URI rules: the table
// that maps exposed tool and prompt names to (server, original name) and back,
// and the reversible, stateless rewriting of resource URIs.
//
// Exposed names are "<prefix>__<name>" (or the name alone for an empty
// prefix), restricted to [A-Za-z0-9_-] and at most a length limit: 64 (the
// clients' hard limit) for [Build] and [Expose], the caller's budget for
// [BuildLimit] and [ExposeLimit]. The mapping
// is kept in a [Table] in both directions; it is never recovered by splitting
// strings, since original names may themselves contain "__".
//
// The package is pure: standard library only, no SDK types, no I/O, no
// logging. It must not learn about sessions, policy or configuration files;
// the proxy feeds it names and prefixes and consults the results.
package naming

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// MaxNameLen is the longest exposed name, the limit that clients enforce
// (^[a-zA-Z0-9_-]{1,64}$).
const MaxNameLen = 64

// MinNameLen is the smallest length limit: room for a head, "-" and a hash.
const MinNameLen = 16

// limit clamps a length limit to [MinNameLen, MaxNameLen]; zero means
// MaxNameLen.
func limit(max int) int {
	switch {
	case max <= 0 || max > MaxNameLen:
		return MaxNameLen
	case max < MinNameLen:
		return MinNameLen
	}
	return max
}

// Separator joins a prefix and an original name.
const Separator = "__"

// maxLevel is the last hash level tried when resolving clashes inside one
// server: level k >= 1 uses 8<<(k-1) hex digits (8, 16, 32).
const maxLevel = 3

// Entry is one exposed name and where it leads.
type Entry struct {
	Exposed  string // the name clients see
	Server   string // the upstream server's key
	Original string // the name the upstream knows
}

// Collision reports an entry left out of a [Table] because an exposed name was
// already taken, or lies in another server's namespace. Across servers, Kept
// is the earlier server's entry (config order). Within one server it can only
// happen if even the longest hashed form clashes (practically never); Kept and
// Dropped then share a server.
type Collision struct {
	Exposed string
	Kept    Entry
	Dropped Entry
	// Owner, when not empty, is the server whose namespace (its prefix and
	// "__") holds Exposed, which Dropped's server may not expose there,
	// whatever the order of the groups; Kept is then the zero Entry.
	Owner string
}

// Group is one server's names, as input to [Build].
type Group struct {
	Server string   // the server's key; unique across groups
	Prefix string   // "" exposes names without a prefix
	Names  []string // original names; duplicates are ignored
	// Renames maps original names to exposed names chosen by the operator
	// (overrides). They are used as given (the caller validates them) and
	// win a clash within the group; across groups the earlier group wins as
	// for any name.
	Renames map[string]string
}

// Table maps exposed names to (server, original) and back, for one kind of
// name (tools or prompts). A Table is immutable and safe for concurrent use;
// the nil *Table is empty.
type Table struct {
	byExposed map[string]Entry
	byOrigin  map[origin]string
	entries   []Entry // sorted by Exposed
}

type origin struct{ server, original string }

// Expose returns the exposed form of one name, without the clash handling
// that [Build] adds between names of the same server:
//
//   - the full name is prefix + "__" + name, or name alone if prefix is "";
//   - every character outside [A-Za-z0-9_-] becomes "_";
//   - a result longer than 64 characters, or an empty one, is replaced by
//     a readable head, "-" and the first 8 hex digits of
//     sha256(prefix + "\x00" + name), so it is stable across restarts.
func Expose(prefix, name string) string {
	return ExposeLimit(prefix, name, MaxNameLen)
}

// ExposeLimit is [Expose] with names of at most max characters (clamped to
// MinNameLen..MaxNameLen; 0 means MaxNameLen). The hash does not depend on
// max, only the head's length does.
func ExposeLimit(prefix, name string, max int) string {
	exposed, _ := expose(prefix, name, 0, limit(max))
	return exposed
}

// Full returns the full name of one name before any shortening: prefix,
// "__" and name (name alone if prefix is ""), with every character outside
// [A-Za-z0-9_-] replaced by "_". It is what [Expose] returns when the result
// fits, and may be longer than any limit; policy rules written for the whole
// name match it.
func Full(prefix, name string) string {
	if prefix == "" {
		return sanitize(name)
	}
	return sanitize(prefix + Separator + name)
}

// expose returns the candidate exposed name at the given clash level, and
// whether it is the full name verbatim (level 0 and no change needed). max
// is already clamped.
func expose(prefix, name string, level, max int) (string, bool) {
	full := name
	if prefix != "" {
		full = prefix + Separator + name
	}
	s := sanitize(full)
	if level == 0 && s != "" && len(s) <= max {
		return s, s == full
	}
	digits := 8
	if level > 0 {
		digits = 8 << (level - 1)
	}
	return hashed(s, prefix, name, min(digits, max-2), max), false
}

// sanitize replaces every rune outside [A-Za-z0-9_-] with "_". It returns s
// itself when nothing needs to change.
func sanitize(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return !validRune(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if validRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func validRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-'
}

// hashed returns head + "-" + the first digits hex digits of the name's hash,
// with head the sanitized name cut to fit in max ("_" if empty).
func hashed(sanitized, prefix, name string, digits, max int) string {
	// Keep "<prefix>__" and one character in the head when fewer digits
	// (never under 8) make room: a head cut into the prefix would take the
	// name out of its server's namespace.
	if keep := len(prefix) + len(Separator) + 1; prefix != "" && max-1-digits < keep && max-1-keep >= 8 {
		digits = min(digits, max-1-keep)
	}
	sum := sha256.Sum256([]byte(prefix + "\x00" + name))
	h := hex.EncodeToString(sum[:])[:digits]
	head := sanitized
	if n := max - 1 - digits; len(head) > n {
		head = head[:n] // sanitized is ASCII: byte cut is safe
	}
	if head == "" {
		head = "_"
	}
	return head + "-" + h
}

// Build builds the table for groups given in priority (config) order. It is
// deterministic: the same groups give the same table and collisions,
// whatever the order of names within a group.
//
// Within one server, names are first exposed as by [Expose]. When several
// names of a server would share one exposed name, a name that needed no
// change (its full name was already valid) keeps it; every other member of
// the clash takes the hashed form (head + "-" + 8 hex digits), and if that
// too clashes, 16 then 32 digits, fewer (at least 8) when more would cut the
// head into "<prefix>__". So a valid name is never renamed because of
// another name of its server, and a shortened name stays in its namespace.
//
// A server's namespace is every name that starts with its prefix and "__".
// An exposed name in the namespace of another server (the one with the
// longest such prefix) is left out, whatever the order of the groups, and
// reported as a [Collision] with Owner set: an unprefixed server listing
// "files__write_file", or a rename to it, never takes a name of the server
// with prefix "files", nor adds one to its namespace.
//
// Across servers, the earlier group wins an exposed name; the later entry is
// left out and reported as a [Collision] naming both servers. Collisions are
// returned in group order, then by exposed name and original name.
//
// Server keys should be unique; if one appears in two groups,
// [Table.Exposed] answers with its first group's entry.
func Build(groups []Group) (*Table, []Collision) {
	return BuildLimit(groups, MaxNameLen)
}

// BuildLimit is [Build] with exposed names of at most max characters
// (clamped to MinNameLen..MaxNameLen; 0 means MaxNameLen), for clients that
// put the names in a longer one: Claude Code sends "mcp__<entry>__<name>" to
// a model API that takes 64 characters. Operator renames are used as given.
func BuildLimit(groups []Group, max int) (*Table, []Collision) {
	max = limit(max)
	n := 0
	for _, g := range groups {
		n += len(g.Names)
	}
	t := &Table{
		byExposed: make(map[string]Entry, n),
		byOrigin:  make(map[origin]string, n),
		entries:   make([]Entry, 0, n),
	}
	var collisions []Collision
	for _, g := range groups {
		entries, dropped := resolve(g, max)
		for _, e := range entries {
			if owner := namespaceOwner(groups, e.Exposed); owner != nil && owner.Prefix != g.Prefix {
				dropped = append(dropped, Collision{Exposed: e.Exposed, Dropped: e, Owner: owner.Server})
				continue
			}
			if kept, ok := t.byExposed[e.Exposed]; ok {
				dropped = append(dropped, Collision{Exposed: e.Exposed, Kept: kept, Dropped: e})
				continue
			}
			t.byExposed[e.Exposed] = e
			t.entries = append(t.entries, e)
			o := origin{e.Server, e.Original}
			if _, ok := t.byOrigin[o]; !ok {
				t.byOrigin[o] = e.Exposed
			}
		}
		slices.SortFunc(dropped, compareCollisions)
		collisions = append(collisions, dropped...)
	}
	slices.SortFunc(t.entries, func(a, b Entry) int { return strings.Compare(a.Exposed, b.Exposed) })
	return t, collisions
}

// namespaceOwner returns the group whose namespace holds exposed: the first
// one with the longest non-empty prefix such that exposed starts with that
// prefix and "__". It returns nil when no namespace holds it.
func namespaceOwner(groups []Group, exposed string) *Group {
	var owner *Group
	for i := range groups {
		g := &groups[i]
		if g.Prefix == "" || !strings.HasPrefix(exposed, g.Prefix+Separator) {
			continue
		}
		if owner == nil || len(g.Prefix) > len(owner.Prefix) {
			owner = g
		}
	}
	return owner
}

// candidate is one name of a group during clash resolution.
type candidate struct {
	original  string
	exposed   string
	unchanged bool // exposed is the full name verbatim
	fixed     bool // exposed was chosen by the operator: it never moves
	level     int
	dropped   bool
}

// resolve exposes the names of one group and settles clashes between them.
// It returns the entries sorted by exposed name, and the collisions unsorted.
// The result depends only on the set of names: each round looks at the whole
// set.
func resolve(g Group, max int) ([]Entry, []Collision) {
	names := slices.Clone(g.Names)
	slices.Sort(names)
	names = slices.Compact(names)

	cands := make([]candidate, len(names))
	for i, name := range names {
		if r, ok := g.Renames[name]; ok {
			cands[i] = candidate{original: name, exposed: r, unchanged: true, fixed: true}
			continue
		}
		exposed, unchanged := expose(g.Prefix, name, 0, max)
		cands[i] = candidate{original: name, exposed: exposed, unchanged: unchanged}
	}

	var collisions []Collision
	entry := func(c *candidate) Entry {
		return Entry{Exposed: c.exposed, Server: g.Server, Original: c.original}
	}
	// Each round either raises a level or drops a candidate, so the loop ends
	// after at most (maxLevel+1)*len(cands) rounds; in practice one or two.
	for {
		seen := make(map[string]int, len(cands))
		var clashes map[string][]int
		for i := range cands {
			c := &cands[i]
			if c.dropped {
				continue
			}
			j, ok := seen[c.exposed]
			if !ok {
				seen[c.exposed] = i
				continue
			}
			if clashes == nil {
				clashes = make(map[string][]int)
			}
			if _, ok := clashes[c.exposed]; !ok {
				clashes[c.exposed] = []int{j}
			}
			clashes[c.exposed] = append(clashes[c.exposed], i)
		}
		if len(clashes) == 0 {
			break
		}
		for exposed, members := range clashes {
			// Groups are disjoint, so the map's order does not matter.
			keeper := -1
			for _, i := range members {
				if cands[i].fixed || cands[i].unchanged && (keeper < 0 || !cands[keeper].fixed) {
					keeper = i // an operator's rename first, then the verbatim name
				}
			}
			var stuck []int // at the last level: cannot move
			for _, i := range members {
				c := &cands[i]
				switch {
				case i == keeper:
				case c.fixed: // two renames to one name: config prevents it
					stuck = append(stuck, i)
				case c.level < maxLevel:
					c.level++
					c.exposed, c.unchanged = expose(g.Prefix, c.original, c.level, max)
				default:
					stuck = append(stuck, i)
				}
			}
			if len(stuck) == 0 || keeper < 0 && len(stuck) < len(members) {
				// Stuck members with no keeper wait: the movers leave, and
				// the next round settles what is left.
				continue
			}
			if keeper < 0 {
				keeper, stuck = stuck[0], stuck[1:] // members are in name order
			}
			for _, i := range stuck {
				cands[i].dropped = true
				collisions = append(collisions, Collision{Exposed: exposed, Kept: entry(&cands[keeper]), Dropped: entry(&cands[i])})
			}
		}
	}

	entries := make([]Entry, 0, len(cands))
	for i := range cands {
		if !cands[i].dropped {
			entries = append(entries, entry(&cands[i]))
		}
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Exposed, b.Exposed) })
	return entries, collisions
}

func compareCollisions(a, b Collision) int {
	return cmp.Or(strings.Compare(a.Exposed, b.Exposed), strings.Compare(a.Dropped.Original, b.Dropped.Original))
}

// Lookup returns the entry for an exposed name.
func (t *Table) Lookup(exposed string) (Entry, bool) {
	if t == nil {
		return Entry{}, false
	}
	e, ok := t.byExposed[exposed]
	return e, ok
}

// Exposed returns the exposed name of a server's original name, if the table
// has it.
func (t *Table) Exposed(server, original string) (string, bool) {
	if t == nil {
		return "", false
	}
	exposed, ok := t.byOrigin[origin{server, original}]
	return exposed, ok
}

// Entries returns a copy of all entries, sorted by exposed name.
func (t *Table) Entries() []Entry {
	if t == nil {
		return nil
	}
	return slices.Clone(t.entries)
}

// Len returns the number of entries.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}
