package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is what a definition defines.
type Kind string

// Kinds of definitions.
const (
	Tool         Kind = "tool"
	Prompt       Kind = "prompt"
	Template     Kind = "template" // a resource template, named by its URI template
	Instructions Kind = "instructions"
)

func (k Kind) valid() bool {
	switch k {
	case Tool, Prompt, Template, Instructions:
		return true
	}
	return false
}

// fields are the members of each kind's definition that are pinned; the
// others (_meta, icons, ...) are left out.
var fields = map[Kind][]string{
	Tool:         {"name", "title", "description", "inputSchema", "outputSchema", "annotations"},
	Prompt:       {"name", "title", "description", "arguments"},
	Template:     {"uriTemplate", "name", "title", "description", "mimeType", "annotations"},
	Instructions: {"instructions"},
}

// Def is one definition of one server, in canonical form.
type Def struct {
	Kind Kind
	// Name is the server's own name of a tool or prompt, the URI template of
	// a template, and empty for instructions.
	Name string
	// Canonical is the pinned members as canonical JSON: keys sorted, no
	// insignificant whitespace, numbers in one spelling (Canonical). It is
	// the true text, which Sum is taken over; it may hold a secret that a
	// server echoed, so it is not what is written or shown (Shown).
	Canonical string
	// Display, when not empty, is Canonical with secrets masked (Mask): the
	// form that is written to the lock file and shown.
	Display string
}

// Shown is the form of d that may be written and shown: Display when d
// holds a secret, Canonical otherwise.
func (d Def) Shown() string {
	if d.Display != "" {
		return d.Display
	}
	return d.Canonical
}

// Masked reports whether d holds a secret, masked in Shown.
func (d Def) Masked() bool { return d.Display != "" }

// Mask returns d with its display form set: mask gets the canonical JSON
// and returns it with the secrets it knows replaced (redact.Redactor.JSON);
// when it changes nothing, d is returned as is. The fingerprint stays that
// of the true text, so a change of a secret's value still changes it
// without showing either value.
func (d Def) Mask(mask func([]byte) []byte) Def {
	if mask == nil {
		return d
	}
	out := mask([]byte(d.Canonical))
	if string(out) == d.Canonical {
		return d
	}
	c, err := Canonical(out)
	if err != nil || c == d.Canonical {
		// A mask that does not return JSON: show nothing of the text
		// rather than risk the secret.
		c = "{}"
	}
	d.Display = c
	return d
}

// NewDef reduces raw, the JSON of a definition of kind as the server sent
// it, to its pinned members in canonical form. name is the definition's key
// (see Def.Name).
func NewDef(kind Kind, name string, raw []byte) (Def, error) {
	if !kind.valid() {
		return Def{}, fmt.Errorf("unknown kind %q", kind)
	}
	c, ok := pinnedMembers(kind, raw)
	if !ok {
		var err error
		if c, err = pinnedDecoded(kind, raw); err != nil {
			return Def{}, fmt.Errorf("%s %q: %w", kind, name, err)
		}
	}
	return Def{Kind: kind, Name: name, Canonical: c}, nil
}

// pinnedDecoded is the canonical form of raw's pinned members, by decoding
// raw and encoding what is kept: NewDef's general way.
func pinnedDecoded(kind Kind, raw []byte) (string, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return "", err
	}
	keep := make(map[string]json.RawMessage)
	for _, f := range fields[kind] {
		if v, ok := all[f]; ok && string(v) != "null" {
			keep[f] = v
		}
	}
	b, _ := json.Marshal(keep)
	return Canonical(b)
}

// pinnedMembers is NewDef's canonical form of raw without decoding the
// whole definition into a map and encoding it again (the pin check of a
// start fingerprints every definition of every server, a thousand with
// twenty servers of fifty tools): it walks raw's top-level object, keeps
// the pinned members and canonicalises only their values, each on its own
// (Canonical of an object is its members' canonical values under sorted
// keys). It handles only the common shape, an object without whitespace
// between its members, whose keys are plain and whose pinned members each
// appear once, and every value of which is valid JSON; for anything else
// ok is false and NewDef takes its general way, so the answer is never a
// different one (FuzzNewDefFast).
func pinnedMembers(kind Kind, raw []byte) (string, bool) {
	want := fields[kind]
	var kept [8]struct{ key, value []byte }
	n, seen := 0, 0 // seen: a bit per member of want
	sc := canonicalScanner{b: raw}
	if !sc.next('{') {
		return "", false
	}
	if !sc.next('}') {
		for {
			key, ok := sc.str()
			if !ok || !sc.next(':') {
				return "", false
			}
			start := sc.i
			if !sc.skip() {
				return "", false
			}
			value := raw[start:sc.i]
			if f := slices.Index(want, string(key)); f >= 0 {
				if seen&(1<<f) != 0 {
					return "", false // twice: the last one counts, left to the decoder
				}
				seen |= 1 << f
				if string(value) != "null" {
					kept[n] = struct{ key, value []byte }{key, value}
					n++
				}
			} else if !canonicalAlready(value) && !json.Valid(value) {
				return "", false
			}
			if sc.next('}') {
				break
			}
			if !sc.next(',') {
				return "", false
			}
		}
	}
	if sc.i != len(raw) {
		return "", false
	}
	slices.SortFunc(kept[:n], func(a, b struct{ key, value []byte }) int { return bytes.Compare(a.key, b.key) })
	var b strings.Builder
	b.Grow(len(raw))
	b.WriteByte('{')
	for i, m := range kept[:n] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.Write(m.key)
		b.WriteString(`":`)
		if canonicalAlready(m.value) {
			b.Write(m.value)
			continue
		}
		c, ok := canonicalValue(m.value)
		if !ok {
			return "", false
		}
		b.WriteString(c)
	}
	b.WriteByte('}')
	return b.String(), true
}

// canonicalValue is canonicalDecoded of raw when raw is exactly one JSON
// value and nothing else (no space around it either); ok is false
// otherwise.
func canonicalValue(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.InputOffset() != int64(len(raw)) {
		return "", false
	}
	var b strings.Builder
	if encode(&b, v) != nil {
		return "", false
	}
	return b.String(), true
}

// InstructionsDef is a server's instructions as a definition.
func InstructionsDef(text string) Def {
	b, _ := json.Marshal(map[string]string{"instructions": text})
	c, _ := Canonical(b)
	return Def{Kind: Instructions, Canonical: c}
}

// Sum is the fingerprint of d: "sha256:" and the hex SHA-256 of its kind,
// name and canonical form.
func (d Def) Sum() string { return sum(d.Kind, d.Name, d.Canonical) }

func sum(kind Kind, name, canonical string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", kind, name, canonical)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Canonical returns the canonical form of the JSON value raw: object keys
// sorted, no insignificant whitespace, strings with the shortest escapes
// (HTML characters unescaped), and numbers spelt one way: an integral value
// below 2^53 as an integer ("1.0", "1e0" and "10E-1" are "1"), another as
// the shortest float that round-trips; a number out of float64's range as
// written. Two values that differ only in those respects have the same
// canonical form, any other difference gives another.
func Canonical(raw []byte) (string, error) {
	if canonicalAlready(raw) {
		return string(raw), nil // what decoding and encoding it would give
	}
	return canonicalDecoded(raw)
}

// canonicalDecoded is Canonical by decoding raw and encoding it again.
func canonicalDecoded(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return "", fmt.Errorf("not JSON: more than one value")
	}
	var b strings.Builder
	if err := encode(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func encode(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(number(v))
	case string:
		b.WriteString(quote(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			if err := encode(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

// canonicalAlready reports whether raw is in canonical form already, so
// that Canonical(raw) is raw as it is: a lock file's definitions are, and so
// are most definitions as the SDK encodes them. It checks only what it can
// without decoding: strings must be plain (see plain) and keys plain and in
// order, numbers spelt as number spells them, no whitespace anywhere, one
// value; anything else (an escape, a non-ASCII character, a space, a value
// nested deeper than maxCanonicalDepth) is left to canonicalDecoded, so a
// "false" costs a decoding and never a different answer.
func canonicalAlready(raw []byte) bool {
	sc := canonicalScanner{b: raw}
	return sc.value(0) && sc.i == len(raw)
}

// maxCanonicalDepth bounds the nesting that canonicalAlready follows.
const maxCanonicalDepth = 100

// canonicalScanner reads a JSON value that is in canonical form; each
// method reports false at the first byte that is not.
type canonicalScanner struct {
	b []byte
	i int // the next byte to read
}

func (sc *canonicalScanner) value(depth int) bool {
	if sc.i >= len(sc.b) || depth > maxCanonicalDepth {
		return false
	}
	switch c := sc.b[sc.i]; {
	case c == '{':
		sc.i++
		if sc.next('}') {
			return true
		}
		var prev []byte
		for first := true; ; first = false {
			key, ok := sc.str()
			if !ok || !first && bytes.Compare(prev, key) >= 0 || !sc.next(':') || !sc.value(depth+1) {
				return false // a key not plain, out of order or twice; or a bad value
			}
			prev = key
			if sc.next('}') {
				return true
			}
			if !sc.next(',') {
				return false
			}
		}
	case c == '[':
		sc.i++
		if sc.next(']') {
			return true
		}
		for {
			if !sc.value(depth + 1) {
				return false
			}
			if sc.next(']') {
				return true
			}
			if !sc.next(',') {
				return false
			}
		}
	case c == '"':
		_, ok := sc.str()
		return ok
	case c == 't':
		return sc.literal("true")
	case c == 'f':
		return sc.literal("false")
	case c == 'n':
		return sc.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return sc.number()
	}
	return false
}

// next reads the byte c if it comes next.
func (sc *canonicalScanner) next(c byte) bool {
	if sc.i < len(sc.b) && sc.b[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

func (sc *canonicalScanner) literal(s string) bool {
	if !bytes.HasPrefix(sc.b[sc.i:], []byte(s)) {
		return false
	}
	sc.i += len(s)
	return true
}

// str reads a plain string and returns what is between its quotes.
func (sc *canonicalScanner) str() ([]byte, bool) {
	if !sc.next('"') {
		return nil, false
	}
	start := sc.i
	for ; sc.i < len(sc.b); sc.i++ {
		switch c := sc.b[sc.i]; {
		case c == '"':
			sc.i++
			return sc.b[start : sc.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// maxSkipDepth bounds the nesting that skip follows, far below the
// decoder's own bound, so that a value it reads is never valid alone and
// too deep as a member.
const maxSkipDepth = 1000

// skip reads one value of any spelling and reports whether it ended where
// a value can end; it only delimits the value (strings, with their escapes,
// and nesting are followed), the caller checks what it read.
func (sc *canonicalScanner) skip() bool {
	depth := 0
	for sc.i < len(sc.b) {
		switch c := sc.b[sc.i]; c {
		case '"':
			sc.i++
			for {
				if sc.i >= len(sc.b) {
					return false
				}
				c := sc.b[sc.i]
				sc.i++
				if c == '\\' {
					sc.i++
				} else if c == '"' {
					break
				}
			}
			if depth == 0 {
				return true
			}
			continue
		case '{', '[':
			if depth++; depth > maxSkipDepth {
				return false
			}
		case '}', ']':
			if depth == 0 {
				return true // the enclosing object's end: a scalar ended
			}
			depth--
			if depth == 0 {
				sc.i++
				return true
			}
		case ',':
			if depth == 0 {
				return true
			}
		}
		sc.i++
	}
	return false
}

// number reads a number of JSON's grammar spelt as number spells it.
func (sc *canonicalScanner) number() bool {
	j := sc.i
	digits := func() int {
		n := 0
		for ; j < len(sc.b) && '0' <= sc.b[j] && sc.b[j] <= '9'; j++ {
			n++
		}
		return n
	}
	if j < len(sc.b) && sc.b[j] == '-' {
		j++
	}
	if j < len(sc.b) && sc.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return false
	}
	if j < len(sc.b) && sc.b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(sc.b) && (sc.b[j] == 'e' || sc.b[j] == 'E') {
		j++
		if j < len(sc.b) && (sc.b[j] == '+' || sc.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	lit := string(sc.b[sc.i:j])
	if number(json.Number(lit)) != lit {
		return false
	}
	sc.i = j
	return true
}

// quote is a JSON string without HTML escaping, so that "<IMPORTANT>" reads
// as such in the lock file.
func quote(s string) string {
	if plain(s) {
		return `"` + s + `"` // what the encoder below writes, without it
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// plain reports whether s is printable ASCII without '"' or '\\': its JSON
// string is s between quotes, nothing escaped. (Most names, keys and
// descriptions are; quote takes the encoder only for the others.)
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// number is the one spelling of a JSON number (see Canonical).
func number(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return string(n) // out of range: as written
	}
	if f == 0 {
		return "0" // -0, 0.0, 0e5
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Pretty is the canonical form c indented, one member a line, for diffs
// and for reading.
func Pretty(c string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(c), "", "  ") != nil {
		return c
	}
	return buf.String()
}
