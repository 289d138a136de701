package main

import (
	"errors"
	"fmt"
	"testing"
)

func TestProblems(t *testing.T) {
	one := errors.New("a.toml:1:1: x: bad")
	tests := []struct {
		err  error
		want string
	}{
		{err: one, want: "1 problem:\na.toml:1:1: x: bad"},
		{err: errors.Join(one, errors.Join(errors.New("p.toml:1:1: a"), errors.New("p.toml:2:1: b"))), want: "3 problems:\na.toml:1:1: x: bad\np.toml:1:1: a\np.toml:2:1: b"},
		{err: fmt.Errorf("a.toml: %w", errors.Join(errors.New("one"), errors.New("two"))), want: "2 problems:\na.toml: one\ntwo"},
	}
	for _, tt := range tests {
		if got := problems(tt.err); got != tt.want {
			t.Errorf("problems(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
