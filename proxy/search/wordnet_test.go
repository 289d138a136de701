package search

import (
	"slices"
	"testing"
)

// TestDecodeWordnet: the embedded table decodes whole into stems, and a
// damaged one is an error, not a panic or a short table.
func TestDecodeWordnet(t *testing.T) {
	tb, err := decodeWordnet(wordnetGz)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb) < 6000 {
		t.Errorf("decoded %d words, want the table's ~7,000 stems", len(tb))
	}
	for w, want := range map[string]string{"reviewers": "review", "replacement": "replace", "creation": "create", "installation": "install"} {
		if !slices.Contains(tb[stem(w)], stem(want)) {
			t.Errorf("%q: related %q, want %q among them", w, tb[stem(w)], want)
		}
	}
	for w, rs := range tb {
		if slices.Contains(rs, w) {
			t.Errorf("%q is related to itself", w)
		}
	}
	for name, b := range map[string][]byte{
		"empty":       nil,
		"not gzip":    []byte("GIF89a........"),
		"truncated":   wordnetGz[:len(wordnetGz)-9],
		"bit flipped": flipped(wordnetGz, len(wordnetGz)/2),
	} {
		if _, err := decodeWordnet(b); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

func flipped(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x10
	return c
}
