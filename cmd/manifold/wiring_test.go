package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/proxy"
)

func TestServersFor(t *testing.T) {
	servers := []proxy.ServerConfig{{Prefix: "files"}, {Prefix: "memory"}, {Prefix: ""}, {Prefix: "my_fs"}}
	tests := []struct {
		name string
		want []string // prefixes kept
	}{
		{name: "files__read", want: []string{"files", ""}},
		{name: "memory__create_entities", want: []string{"memory", ""}},
		{name: "my_fs__list", want: []string{"", "my_fs"}},
		{name: "my-fs+file:///x", want: []string{"", "my_fs"}},
		{name: "files+file:///README.md", want: []string{"files", ""}},
		{name: "unknown__tool", want: []string{"files", "memory", "", "my_fs"}},
		{name: "echo", want: []string{"files", "memory", "", "my_fs"}},
	}
	for _, tt := range tests {
		var got []string
		for _, s := range serversFor(tt.name, servers) {
			got = append(got, s.Prefix)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("serversFor(%q) prefixes (-want +got):\n%s", tt.name, diff)
		}
	}
}
