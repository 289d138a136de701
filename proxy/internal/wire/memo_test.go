package wire

import (
	"strings"
	"testing"
)

// TestMemo: the same bytes again are not read again; other bytes are, and
// so are bytes too long to keep.
func TestMemo(t *testing.T) {
	var m Memo[string]
	reads := 0
	read := func(b []byte) string { reads++; return strings.ToUpper(string(b)) }
	for _, tt := range []struct {
		key       string
		want      string
		wantReads int
	}{
		{"abc", "ABC", 1},
		{"abc", "ABC", 1},
		{"abd", "ABD", 2},
		{"abc", "ABC", 3},
		{strings.Repeat("x", maxMemoKey+1), strings.Repeat("X", maxMemoKey+1), 4},
		{strings.Repeat("x", maxMemoKey+1), strings.Repeat("X", maxMemoKey+1), 5},
		{"abc", "ABC", 5},
	} {
		if got := m.Get([]byte(tt.key), read); got != tt.want || reads != tt.wantReads {
			t.Errorf("Get(%.10q) = %.10q after %d reads, want %.10q after %d", tt.key, got, reads, tt.want, tt.wantReads)
		}
	}
}
