package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := parse([]string{"-rounds", "3", "-other", "/opt/bin/mcp-proxy", "-other-args", "--config {config}"})
	if err != nil {
		t.Fatal(err)
	}
	if c.rounds != 3 || c.other.name != "mcp-proxy" || c.other.tool != "echo" || c.other.transport != "http" || len(c.transports) != 2 {
		t.Errorf("parsed %+v", c)
	}
	if c.o.Warmup != 20 || c.o.Calls != 500 || c.o.Workers != 8 || c.o.Version != "2025-11-25" {
		t.Errorf("options %+v, want the outside measurement's", c.o)
	}
	for _, bad := range [][]string{
		{"-transports", "sse"},
		{"-other-transport", "ws"},
		{"-rounds", "0"},
		{"extra"},
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%s): no error", strings.Join(bad, " "))
		}
	}
}
