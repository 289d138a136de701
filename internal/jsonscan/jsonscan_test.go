package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestSkipValue(t *testing.T) {
	tests := []struct {
		in   string
		want int // SkipValue(in, 0)
	}{
		{`"abc" ,`, 5},
		{`"a\"b"x`, 6},
		{`"a\\"x`, 5},
		{`"a\\\"b"x`, 8},
		{`{"k":"}"}, 1`, 9},
		{`[1,[2,{"a":"]"}]] `, 17},
		{`123,`, 3},
		{`true}`, 4},
		{`null `, 4},
		{`"open`, 5},
		{`{"open":`, 8},
		{``, 0},
	}
	for _, tt := range tests {
		if got := SkipValue([]byte(tt.in), 0); got != tt.want {
			t.Errorf("SkipValue(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	if got := SkipSpace([]byte(" \t\r\nx"), 0); got != 4 {
		t.Errorf("SkipSpace = %d, want 4", got)
	}
}

// FuzzSkipValue: on any input the index stays within bounds, and on a valid
// JSON value it is just past the value.
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\"y",{"b":null}]}`, `"\\\\"`, `[`, `"`, `12e3`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		got := SkipValue(b, 0)
		if got < 0 || got > len(b) {
			t.Fatalf("SkipValue(%q) = %d, out of [0,%d]", s, got, len(b))
		}
		v := bytes.TrimRight(b, " \t\r\n")
		if len(b) > 0 && json.Valid(b) && (b[0] == '{' || b[0] == '[' || b[0] == '"') && got != len(v) {
			t.Fatalf("SkipValue(%q) = %d, want %d (just past a valid value)", s, got, len(v))
		}
	})
}
