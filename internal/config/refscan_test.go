package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/internal/envref"
)

// TestOneReferenceScanner: what the loader expands (expand) and what check
// reads as written out (literalPart) are the same tokenizer's pieces
// (envref.ScanRefs), over hostile inputs: a lone "${", "$${x}", nesting,
// unterminated references, trailing and repeated "$", and very long
// strings. Where expand succeeds and no reference has a default, expanding
// every reference to "" gives exactly literalPart: the two agree on where
// each reference starts and ends.
func TestOneReferenceScanner(t *testing.T) {
	long := strings.Repeat("${A}x", 20_000)
	tests := []struct {
		name    string
		in      string
		pieces  []envref.Piece
		expand  string // with A=va, B=vb; "" with wantErr
		wantErr string
		literal string
	}{
		{name: "lone open", in: "${", pieces: []envref.Piece{{Kind: envref.PieceOpen, Text: "${"}}, wantErr: "unterminated", literal: "${"},
		{name: "escaped reference", in: "$${x}", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "${x}"}}, expand: "${x}", literal: "${x}"},
		{name: "escape then reference", in: "$$${A}", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "$"}, {Kind: envref.PieceRef, Text: "A"}}, expand: "$va", literal: "$"},
		{name: "nested", in: "${A${B}}", pieces: []envref.Piece{{Kind: envref.PieceRef, Text: "A${B"}, {Kind: envref.PieceText, Text: "}"}}, wantErr: "invalid variable name", literal: "}"},
		{name: "default holding a reference", in: "${X:-${B}}", pieces: []envref.Piece{{Kind: envref.PieceRef, Text: "X:-${B"}, {Kind: envref.PieceText, Text: "}"}}, expand: "${B}", literal: "}"},
		{name: "unterminated after text", in: "a${A}b${B", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "a"}, {Kind: envref.PieceRef, Text: "A"}, {Kind: envref.PieceText, Text: "b"}, {Kind: envref.PieceOpen, Text: "${B"}}, wantErr: "unterminated", literal: "ab${B"},
		{name: "unterminated keeps its escapes as written", in: "${A$$", pieces: []envref.Piece{{Kind: envref.PieceOpen, Text: "${A$$"}}, wantErr: "unterminated", literal: "${A$$"},
		{name: "empty reference", in: "${}", pieces: []envref.Piece{{Kind: envref.PieceRef, Text: ""}}, wantErr: "invalid variable name", literal: ""},
		{name: "trailing dollar", in: "a$", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "a$"}}, expand: "a$", literal: "a$"},
		{name: "three dollars", in: "$$$", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "$$"}}, expand: "$$", literal: "$$"},
		{name: "dollar before a letter", in: "$A ${A}", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "$A "}, {Kind: envref.PieceRef, Text: "A"}}, expand: "$A va", literal: "$A "},
		{name: "adjacent", in: "${A}${B}", pieces: []envref.Piece{{Kind: envref.PieceRef, Text: "A"}, {Kind: envref.PieceRef, Text: "B"}}, expand: "vavb", literal: ""},
		{name: "file reference", in: "k=${file:/run/s}", pieces: []envref.Piece{{Kind: envref.PieceText, Text: "k="}, {Kind: envref.PieceRef, Text: "file:/run/s"}}, wantErr: "not read here", literal: "k="},
		{name: "very long", in: long, expand: strings.Repeat("vax", 20_000), literal: strings.Repeat("x", 20_000)},
		{name: "very long unterminated", in: "${" + strings.Repeat("A", 1<<20), pieces: []envref.Piece{{Kind: envref.PieceOpen, Text: "${" + strings.Repeat("A", 1<<20)}},
			wantErr: "unterminated", literal: "${" + strings.Repeat("A", 1<<20)},
		{name: "many dollars", in: strings.Repeat("$", 100_001), pieces: []envref.Piece{{Kind: envref.PieceText, Text: strings.Repeat("$", 50_001)}},
			expand: strings.Repeat("$", 50_001), literal: strings.Repeat("$", 50_001)},
	}
	lookup := env(map[string]string{"A": "va", "B": "vb"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pieces := envref.ScanRefs(tc.in)
			if tc.pieces != nil {
				if diff := cmp.Diff(tc.pieces, pieces); diff != "" {
					t.Errorf("envref.ScanRefs (-want +got):\n%s", diff)
				}
			}
			got, _, err := envref.Expand(tc.in, lookup)
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
				empty, _, err := envref.Resolver{Env: func(string, bool) (string, bool) { return "", true }}.Expand(tc.in)
				if err != nil || empty != literalPart(tc.in) {
					t.Errorf("expand with every reference empty = %.40q, %v; literalPart = %.40q", empty, err, literalPart(tc.in))
				}
			}
		})
	}
}
