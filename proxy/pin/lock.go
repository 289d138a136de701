package pin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Limits on a lock file: beyond them Parse refuses it, whatever it holds.
const (
	MaxLockBytes   = 64 << 20
	MaxLineBytes   = 4 << 20
	MaxLockEntries = 200_000
)

// Key names one definition of one server.
type Key struct {
	Server string
	Kind   Kind
	Name   string
}

func (k Key) String() string {
	if k.Kind == Instructions {
		return k.Server + " instructions"
	}
	return fmt.Sprintf("%s %s %q", k.Server, k.Kind, k.Name)
}

// Entry is one approved definition.
type Entry struct {
	Key
	// Sum is the definition's fingerprint (Def.Sum).
	Sum string
	// Canonical is the definition's canonical form as it may be shown
	// (Def.Shown), kept so that a change can be shown as a diff.
	Canonical string
	// Masked says that Canonical has secrets masked (Def.Masked): Sum is
	// over the true text, which the lock does not hold, so it cannot be
	// checked against Canonical.
	Masked bool
	// Line is where Parse read the entry (1-based); zero for entries made
	// since.
	Line int
}

// EntryOf is the entry that approves d of server.
func EntryOf(server string, d Def) Entry {
	return Entry{Key: Key{Server: server, Kind: d.Kind, Name: d.Name}, Sum: d.Sum(), Canonical: d.Shown(), Masked: d.Masked()}
}

// Lock is a set of approved definitions, at most one per Key. A nil *Lock
// is empty. A Lock is not changed once made: With returns a new one.
type Lock struct {
	entries map[Key]Entry
	servers map[string]int // entries per server
}

// NewLock makes a lock of entries; a later entry of a key replaces an
// earlier one.
func NewLock(entries ...Entry) *Lock {
	l := &Lock{entries: make(map[Key]Entry, len(entries)), servers: make(map[string]int)}
	for _, e := range entries {
		l.put(e)
	}
	return l
}

func (l *Lock) put(e Entry) {
	if _, ok := l.entries[e.Key]; !ok {
		l.servers[e.Server]++
	}
	l.entries[e.Key] = e
}

// Lookup returns the entry of k.
func (l *Lock) Lookup(k Key) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	e, ok := l.entries[k]
	return e, ok
}

// Has reports whether the lock holds any entry of server.
func (l *Lock) Has(server string) bool { return l != nil && l.servers[server] > 0 }

// Len is the number of entries.
func (l *Lock) Len() int {
	if l == nil {
		return 0
	}
	return len(l.entries)
}

// With returns a lock with entries added to l's, replacing those of the
// same keys; l is unchanged.
func (l *Lock) With(entries ...Entry) *Lock {
	out := NewLock(l.Entries()...)
	for _, e := range entries {
		out.put(e)
	}
	return out
}

// Entries returns the entries sorted by server, kind and name.
func (l *Lock) Entries() []Entry {
	if l == nil {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(l.entries), func(a, b Key) int {
		return cmpKeys(a, b)
	})
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = l.entries[k]
	}
	return out
}

func cmpKeys(a, b Key) int {
	if c := strings.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// lockHeader opens every lock file that Format writes.
const lockHeader = `# manifold.lock: the upstream definitions a person approved. Commit it beside proxy.toml.
# Manifold hides a definition that is new or changed since (pin = "quarantine") or flags it (pin = "warn");
# review and accept one with ` + "`manifold approve SERVER[/NAME]`" + `, do not edit lines by hand.
# One line per definition: SERVER KIND NAME SUM DEFINITION (canonical JSON); "masked" before the
# definition says it held a secret of the config, shown as [redacted], and SUM is over the true text.
`

// Format is the text of a lock file holding l: the header, then one line
// per entry in Entries order. Parse reads it back.
func (l *Lock) Format() []byte {
	var b bytes.Buffer
	b.WriteString(lockHeader)
	for _, e := range l.Entries() {
		masked := ""
		if e.Masked {
			masked = maskedFlag + " "
		}
		fmt.Fprintf(&b, "%s %s %s %s %s%s\n", strconv.Quote(e.Server), e.Kind, strconv.Quote(e.Name), e.Sum, masked, e.Canonical)
	}
	return b.Bytes()
}

// Parse reads a lock file's text; file names it in errors, which start with
// "file:line: ". A line that is not well formed, whose fingerprint does not
// match its definition, or whose key was on an earlier line is an error,
// and so is a file over the limits; Parse reports every problem at once (up
// to 20).
func Parse(file string, data []byte) (*Lock, error) {
	if len(data) > MaxLockBytes {
		return nil, fmt.Errorf("%s: %d bytes is over the limit of %d; this is not a lock file that manifold wrote: move it away and approve the definitions again", file, len(data), MaxLockBytes)
	}
	l := NewLock()
	var errs []error
	at := map[Key]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		e, err := parseLine(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", file, n, err))
		} else if first, dup := at[e.Key]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %s is on line %d already; keep one of the two lines (or delete both and approve again)", file, n, e.Key, first))
		} else if l.Len() >= MaxLockEntries {
			errs = append(errs, fmt.Errorf("%s:%d: more than %d entries; this is not a lock file that manifold wrote", file, n, MaxLockEntries))
			break
		} else {
			e.Line = n
			at[e.Key] = n
			l.put(e)
		}
		if len(errs) >= 20 {
			errs = append(errs, fmt.Errorf("%s: too many problems; stopped at line %d", file, n))
			break
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line is longer than %d bytes", MaxLineBytes)
		}
		errs = append(errs, fmt.Errorf("%s:%d: %w", file, n+1, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// maskedFlag marks a line whose definition has secrets masked. The lines of
// definitions without one are as they were before the flag existed, so an
// older lock file reads as it did, and one rewritten without secrets in it
// does not change.
const maskedFlag = "masked"

// parseLine reads `"SERVER" KIND "NAME" SUM [masked] DEFINITION`.
func parseLine(line string) (Entry, error) {
	var e Entry
	rest := line
	server, rest, err := quoted(rest, "server")
	if err != nil {
		return e, err
	}
	kind, rest, _ := strings.Cut(rest, " ")
	if !Kind(kind).valid() {
		return e, fmt.Errorf("kind %q is not tool, prompt, template or instructions", cut(kind))
	}
	name, rest, err := quoted(rest, "name")
	if err != nil {
		return e, err
	}
	sum, def, _ := strings.Cut(rest, " ")
	if !validSum(sum) {
		return e, fmt.Errorf("fingerprint %q is not sha256:<64 hex digits>", cut(sum))
	}
	def, masked := strings.CutPrefix(def, maskedFlag+" ")
	canon, err := Canonical([]byte(def))
	if err != nil {
		return e, fmt.Errorf("definition: %w", err)
	}
	e = Entry{Key: Key{Server: server, Kind: Kind(kind), Name: name}, Sum: sum, Canonical: canon, Masked: masked}
	if server == "" {
		return e, fmt.Errorf("empty server name")
	}
	if masked {
		return e, nil // the sum is over text the line does not hold
	}
	if got := sum2(e); got != sum {
		return e, fmt.Errorf("the fingerprint of %s does not match its definition (edited by hand?); delete the line and run `manifold approve %s`", e.Key, e.Server)
	}
	return e, nil
}

func sum2(e Entry) string { return sum(e.Kind, e.Name, e.Canonical) }

// quoted reads a Go-quoted string and the space after it.
func quoted(s, what string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", fmt.Errorf("the %s is not a quoted string at %q", what, cut(s))
	}
	v, _ := strconv.Unquote(q)
	rest, ok := strings.CutPrefix(s[len(q):], " ")
	if !ok {
		return "", "", fmt.Errorf("no space after the %s %s", what, cut(q))
	}
	return v, rest, nil
}

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// NewEntry is the entry that approves the definition canonical (any JSON
// spelling of it) under k; an error if it is not JSON.
func NewEntry(k Key, canonical string) (Entry, error) {
	if !k.Kind.valid() {
		return Entry{}, fmt.Errorf("unknown kind %q", k.Kind)
	}
	c, err := Canonical([]byte(canonical))
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", k, err)
	}
	return Entry{Key: k, Sum: sum(k.Kind, k.Name, c), Canonical: c}, nil
}

// NewMaskedEntry is the entry that approves, under k, the definition whose
// true text has fingerprint sum and whose display form (secrets masked) is
// shown; an error if sum is not a fingerprint or shown is not JSON.
func NewMaskedEntry(k Key, sum, shown string) (Entry, error) {
	if !k.Kind.valid() {
		return Entry{}, fmt.Errorf("unknown kind %q", k.Kind)
	}
	if !validSum(sum) {
		return Entry{}, fmt.Errorf("%s: fingerprint %q is not sha256:<64 hex digits>", k, cut(sum))
	}
	c, err := Canonical([]byte(shown))
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", k, err)
	}
	return Entry{Key: k, Sum: sum, Canonical: c, Masked: true}, nil
}

// validSum reports whether s is "sha256:" and 64 lower-case hex digits.
func validSum(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
