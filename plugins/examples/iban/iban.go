package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kinds of problem, in Verdict.Error.
const (
	errCharacters  = "characters"
	errFormat      = "format"
	errCountry     = "country"
	errLength      = "length"
	errCheckDigits = "check_digits"
	errChecksum    = "checksum"
)

// Verdict is the check of one IBAN.
type Verdict struct {
	Input       string `json:"input" jsonschema:"the IBAN as it was written in the input"`
	Valid       bool   `json:"valid" jsonschema:"whether the IBAN passed every check"`
	IBAN        string `json:"iban,omitempty" jsonschema:"electronic format: upper case, without separators"`
	Grouped     string `json:"grouped,omitempty" jsonschema:"print format: groups of four characters"`
	Country     string `json:"country,omitempty" jsonschema:"ISO 3166 country code, when it is in the IBAN registry"`
	CountryName string `json:"countryName,omitempty" jsonschema:"English name of the country"`
	Error       string `json:"error,omitempty" jsonschema:"kind of problem: characters, format, country, length, check_digits or checksum"`
	Reason      string `json:"reason,omitempty" jsonschema:"what is wrong, precisely"`
}

// Check validates one candidate IBAN, written as input; separators
// (whitespace, '-', '.', '/') are ignored and letters may be lower case.
func Check(input string) Verdict {
	v := Verdict{Input: input}
	var b strings.Builder
	var bad []string
	pos := 0
	for _, r := range input {
		if isSeparator(r) {
			continue
		}
		pos++
		switch {
		case 'a' <= r && r <= 'z':
			r -= 'a' - 'A'
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		default:
			bad = append(bad, fmt.Sprintf("%q at position %d", r, pos))
		}
		b.WriteRune(r)
	}
	s := b.String()
	if len(bad) > 0 {
		v.Error = errCharacters
		v.Reason = "invalid characters: " + strings.Join(bad, ", ") + " (an IBAN has only letters A-Z and digits; positions do not count separators)"
		if len(bad) == 1 {
			v.Reason = "invalid character " + bad[0] + " (an IBAN has only letters A-Z and digits; positions do not count separators)"
		}
		return v
	}
	v.IBAN, v.Grouped = s, group(s)
	switch {
	case len(s) < 5:
		v.Error, v.Reason = errFormat, fmt.Sprintf("too short to be an IBAN (%d characters)", len(s))
		return v
	case !isLetter(s[0]) || !isLetter(s[1]):
		v.Error, v.Reason = errFormat, fmt.Sprintf("does not start with a two-letter country code (starts with %q)", s[:2])
		return v
	}
	cc := s[:2]
	c, ok := registry[cc]
	if !ok {
		v.Error, v.Reason = errCountry, fmt.Sprintf("unknown country %q: it has no IBANs in the registry", cc)
		return v
	}
	v.Country, v.CountryName = cc, c.name
	switch {
	case !isDigit(s[2]) || !isDigit(s[3]):
		v.Error, v.Reason = errFormat, fmt.Sprintf("check digits %q are not two digits", s[2:4])
		return v
	case len(s) != c.length:
		v.Error, v.Reason = errLength, fmt.Sprintf("length %d but %s needs %d", len(s), cc, c.length)
		return v
	}
	if cd, _ := strconv.Atoi(s[2:4]); cd < 2 || cd > 98 {
		v.Error, v.Reason = errCheckDigits, fmt.Sprintf("check digits %s are out of range: they are 02 to 98", s[2:4])
		return v
	}
	if rem := mod97(s); rem != 1 {
		v.Error, v.Reason = errChecksum, fmt.Sprintf("checksum fails (remainder %d, must be 1): a character is wrong or two are swapped", rem)
		return v
	}
	v.Valid = true
	return v
}

// mod97 returns the ISO 7064 MOD 97-10 remainder of an IBAN of letters and
// digits: the first four characters moved to the end, letters as 10 to 35.
func mod97(s string) int {
	rem := 0
	for _, c := range s[4:] + s[:4] {
		if isDigit(byte(c)) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	return rem
}

// group writes s in groups of four, the IBAN print format.
func group(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[i:min(i+4, len(s))])
	}
	return b.String()
}

func isLetter(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// isSeparator reports whether r may appear between the characters of an IBAN.
func isSeparator(r rune) bool {
	return unicode.IsSpace(r) || r == '-' || r == '.' || r == '/'
}

// isListSeparator reports whether r separates IBANs.
func isListSeparator(r rune) bool {
	return r == ',' || r == ';' || r == '\n' || r == '\r'
}

// token is a run of characters between separators, at [start, end) of the
// text.
type token struct {
	start, end int
	text       string
}

// Split finds the candidate IBANs in text and returns each as it was written.
//
// IBANs are separated by commas, semicolons or new lines; whitespace, '-',
// '.' and '/' may also separate the groups within an IBAN, so within one
// line a space is ambiguous. A line that holds one country code and check
// digits at the start of a group is one IBAN. A line that holds several is
// split greedily: from a start whose country is known, groups are taken
// until they make that country's length; when they do not add up to it
// exactly, the IBAN ends before the next start. The word "IBAN" before an
// IBAN is dropped.
func Split(text string) []string {
	var out []string
	chunkStart := 0
	for i, r := range text + "\n" {
		if !isListSeparator(r) {
			continue
		}
		out = append(out, splitChunk(text, tokens(text, chunkStart, i))...)
		chunkStart = i + utf8.RuneLen(r)
	}
	return out
}

// tokens returns the tokens of text[from:to], without "IBAN" labels.
func tokens(text string, from, to int) []token {
	var toks []token
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		t := token{start: start, end: end, text: text[start:end]}
		start = -1
		if l := strings.TrimSuffix(strings.ToUpper(t.text), ":"); l == "IBAN" {
			return
		}
		toks = append(toks, t)
	}
	for i, r := range text[from:to] {
		if isSeparator(r) {
			flush(from + i)
		} else if start < 0 {
			start = from + i
		}
	}
	flush(to)
	return toks
}

// knownStart returns the IBAN length of the country whose code and check
// digits begin t, or 0.
func knownStart(t token) int {
	s := t.text
	if len(s) < 4 || !isDigit(s[2]) || !isDigit(s[3]) {
		return 0
	}
	cc := strings.ToUpper(s[:2])
	if !isLetter(cc[0]) || !isLetter(cc[1]) {
		return 0
	}
	return registry[cc].length
}

// splitChunk splits the tokens of one chunk into candidates.
func splitChunk(text string, toks []token) []string {
	if len(toks) == 0 {
		return nil
	}
	span := func(i, j int) string { return text[toks[i].start:toks[j-1].end] }
	starts := 0
	for _, t := range toks {
		if knownStart(t) > 0 {
			starts++
		}
	}
	if starts <= 1 {
		return []string{span(0, len(toks))}
	}
	var out []string
	for i := 0; i < len(toks); {
		if want := knownStart(toks[i]); want > 0 {
			n, j := 0, i
			for j < len(toks) && n < want {
				n += compactLen(toks[j].text)
				j++
			}
			if n == want {
				out = append(out, span(i, j))
				i = j
				continue
			}
		}
		j := i + 1
		for j < len(toks) && knownStart(toks[j]) == 0 {
			j++
		}
		out = append(out, span(i, j))
		i = j
	}
	return out
}

// compactLen counts the characters of a token that make up an IBAN.
func compactLen(s string) int { return utf8.RuneCountInString(s) }

// Summary is the text form of verdicts: a count, then one line per IBAN.
func Summary(vs []Verdict) string {
	valid := 0
	for _, v := range vs {
		if v.Valid {
			valid++
		}
	}
	var b strings.Builder
	noun := "IBANs"
	if len(vs) == 1 {
		noun = "IBAN"
	}
	fmt.Fprintf(&b, "%d %s checked: %d valid, %d invalid.", len(vs), noun, valid, len(vs)-valid)
	for _, v := range vs {
		shown := v.Grouped
		if shown == "" {
			shown = v.Input
		}
		if v.Valid {
			fmt.Fprintf(&b, "\n%s: valid (%s, %s)", shown, v.Country, v.CountryName)
		} else {
			fmt.Fprintf(&b, "\n%s: invalid: %s", shown, v.Reason)
		}
	}
	return b.String()
}
