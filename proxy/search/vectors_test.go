package search

import "testing"

// TestDecodeVectors: the embedded table decodes whole, and a damaged one is
// an error, not a panic or a short table.
func TestDecodeVectors(t *testing.T) {
	vt, err := decodeVectors(vectorsBin)
	if err != nil {
		t.Fatal(err)
	}
	if vt.dims != 100 || len(vt.scales) != 30000 || len(vt.data) != 30000*100 {
		t.Errorf("decoded %d words of %d dimensions (%d bytes), want 30000 × 100", len(vt.scales), vt.dims, len(vt.data))
	}
	for _, w := range []string{"the", "file", "delete", "browser"} {
		if vt.vector(stem(w)) == nil {
			t.Errorf("%q has no vector", w)
		}
	}
	for name, b := range map[string]string{
		"empty":       "",
		"not a table": "GIF89a........",
		"truncated":   vectorsBin[:len(vectorsBin)-1],
		"one more":    vectorsBin + "x",
		"words only":  vectorsBin[:len(vectorsMagic)+8+1000],
	} {
		if _, err := decodeVectors(b); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}
