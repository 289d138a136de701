package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBareHTTP(t *testing.T) {
	const cfg = "--http=" + listenFromConfig
	for _, tt := range []struct{ in, want []string }{
		{[]string{"--http"}, []string{cfg}},
		{[]string{"--http", "--config", "p.toml"}, []string{cfg, "--config", "p.toml"}},
		{[]string{"-http", "p.toml"}, []string{cfg, "p.toml"}},
		{[]string{"--http", "127.0.0.1:7777"}, []string{"--http", "127.0.0.1:7777"}},
		{[]string{"--http", ":7777"}, []string{"--http", ":7777"}},
		{[]string{"--http", "[::1]:7777", "p.toml"}, []string{"--http", "[::1]:7777", "p.toml"}},
		{[]string{"--http=127.0.0.1:1"}, []string{"--http=127.0.0.1:1"}},
		{[]string{"--", "--http"}, []string{"--", "--http"}},
	} {
		if diff := cmp.Diff(tt.want, bareHTTP(tt.in)); diff != "" {
			t.Errorf("bareHTTP(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
