package envref

import (
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
			got, missing, err := Expand(tt.in, lookup)
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

// env is a lookup over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}
