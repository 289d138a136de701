package config

import "testing"

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
