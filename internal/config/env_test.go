package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	lookup := env(map[string]string{"HOME": "/home/u", "EMPTY": "", "D": "$$"})
	tests := []struct {
		name        string
		in          string
		want        string
		wantMissing []string
		wantErr     bool
	}{
		{name: "no dollar", in: "plain", want: "plain"},
		{name: "variable", in: "${HOME}/x", want: "/home/u/x"},
		{name: "two variables", in: "${HOME}:${HOME}", want: "/home/u:/home/u"},
		{name: "default when unset", in: "${NOPE:-a b}", want: "a b"},
		{name: "default when empty", in: "${EMPTY:-dflt}", want: "dflt"},
		{name: "empty default", in: "x${NOPE:-}y", want: "xy"},
		{name: "set value wins over default", in: "${HOME:-dflt}", want: "/home/u"},
		{name: "empty without default", in: "[${EMPTY}]", want: "[]"},
		{name: "dollar dollar", in: "$$HOME $${HOME}", want: "$HOME ${HOME}"},
		{name: "values are not expanded again", in: "${D}", want: "$$"},
		{name: "lone dollars stay", in: "a$ $b $", want: "a$ $b $"},
		{name: "missing", in: "${A}${B}${A}", want: "", wantMissing: []string{"A", "B"}},
		{name: "unterminated", in: "${HOME", wantErr: true},
		{name: "empty name", in: "${}", wantErr: true},
		{name: "bad name", in: "${A-B}", wantErr: true},
		{name: "leading digit", in: "${1}", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, missing, err := expand(tt.in, lookup)
			if (err != nil) != tt.wantErr {
				t.Fatalf("expand(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantMissing, missing); diff != "" {
				t.Errorf("expand(%q) missing (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	valid := []string{"command", "args", "env", "cwd", "url", "prefix"}
	tests := []struct {
		key    string
		want   string
		wantOK bool
	}{
		{key: "comand", want: "command", wantOK: true},
		{key: "COMMAND", want: "command", wantOK: true},
		{key: "arg", want: "args", wantOK: true},
		{key: "ulr", want: "url", wantOK: true},
		{key: "perfix", want: "prefix", wantOK: true},
		{key: "x", wantOK: false},
		{key: "timeout", wantOK: false},
	}
	for _, tt := range tests {
		got, ok := closest(tt.key, valid)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("closest(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestOneReferenceScanner: what the loader expands (expand) and what check
// reads as written out (literalPart) are the same tokenizer's pieces
// (scanRefs), over hostile inputs: a lone "${", "$${x}", nesting,
// unterminated references, trailing and repeated "$", and very long
// strings. Where expand succeeds and no reference has a default, expanding
// every reference to "" gives exactly literalPart: the two agree on where
// each reference starts and ends.
func TestOneReferenceScanner(t *testing.T) {
	long := strings.Repeat("${A}x", 20_000)
	tests := []struct {
		name    string
		in      string
		pieces  []piece
		expand  string // with A=va, B=vb; "" with wantErr
		wantErr string
		literal string
	}{
		{name: "lone open", in: "${", pieces: []piece{{pieceOpen, "${"}}, wantErr: "unterminated", literal: "${"},
		{name: "escaped reference", in: "$${x}", pieces: []piece{{pieceText, "${x}"}}, expand: "${x}", literal: "${x}"},
		{name: "escape then reference", in: "$$${A}", pieces: []piece{{pieceText, "$"}, {pieceRef, "A"}}, expand: "$va", literal: "$"},
		{name: "nested", in: "${A${B}}", pieces: []piece{{pieceRef, "A${B"}, {pieceText, "}"}}, wantErr: "invalid variable name", literal: "}"},
		{name: "default holding a reference", in: "${X:-${B}}", pieces: []piece{{pieceRef, "X:-${B"}, {pieceText, "}"}}, expand: "${B}", literal: "}"},
		{name: "unterminated after text", in: "a${A}b${B", pieces: []piece{{pieceText, "a"}, {pieceRef, "A"}, {pieceText, "b"}, {pieceOpen, "${B"}}, wantErr: "unterminated", literal: "ab${B"},
		{name: "unterminated keeps its escapes as written", in: "${A$$", pieces: []piece{{pieceOpen, "${A$$"}}, wantErr: "unterminated", literal: "${A$$"},
		{name: "empty reference", in: "${}", pieces: []piece{{pieceRef, ""}}, wantErr: "invalid variable name", literal: ""},
		{name: "trailing dollar", in: "a$", pieces: []piece{{pieceText, "a$"}}, expand: "a$", literal: "a$"},
		{name: "three dollars", in: "$$$", pieces: []piece{{pieceText, "$$"}}, expand: "$$", literal: "$$"},
		{name: "dollar before a letter", in: "$A ${A}", pieces: []piece{{pieceText, "$A "}, {pieceRef, "A"}}, expand: "$A va", literal: "$A "},
		{name: "adjacent", in: "${A}${B}", pieces: []piece{{pieceRef, "A"}, {pieceRef, "B"}}, expand: "vavb", literal: ""},
		{name: "file reference", in: "k=${file:/run/s}", pieces: []piece{{pieceText, "k="}, {pieceRef, "file:/run/s"}}, wantErr: "not read here", literal: "k="},
		{name: "very long", in: long, expand: strings.Repeat("vax", 20_000), literal: strings.Repeat("x", 20_000)},
		{name: "very long unterminated", in: "${" + strings.Repeat("A", 1<<20), pieces: []piece{{pieceOpen, "${" + strings.Repeat("A", 1<<20)}},
			wantErr: "unterminated", literal: "${" + strings.Repeat("A", 1<<20)},
		{name: "many dollars", in: strings.Repeat("$", 100_001), pieces: []piece{{pieceText, strings.Repeat("$", 50_001)}},
			expand: strings.Repeat("$", 50_001), literal: strings.Repeat("$", 50_001)},
	}
	lookup := env(map[string]string{"A": "va", "B": "vb"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pieces := scanRefs(tc.in)
			if tc.pieces != nil {
				if diff := cmp.Diff(tc.pieces, pieces, cmp.AllowUnexported(piece{})); diff != "" {
					t.Errorf("scanRefs (-want +got):\n%s", diff)
				}
			}
			got, _, err := expand(tc.in, lookup)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("expand = %.40q, %v; want an error saying %q", got, err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || got != tc.expand):
				t.Errorf("expand = %.40q, %v; want %.40q", got, err, tc.expand)
			}
			if lit := literalPart(tc.in); lit != tc.literal {
				t.Errorf("literalPart = %.40q, want %.40q", lit, tc.literal)
			}
			// The two paths agree: every reference to "" is the literal part.
			if err == nil && !strings.Contains(tc.in, ":-") {
				empty, _, err := resolver{env: func(string, bool) (string, bool) { return "", true }}.expand(tc.in)
				if err != nil || empty != literalPart(tc.in) {
					t.Errorf("expand with every reference empty = %.40q, %v; literalPart = %.40q", empty, err, literalPart(tc.in))
				}
			}
		})
	}
}
