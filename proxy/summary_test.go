package proxy

import (
	"testing"

	"github.com/manifold-mcp/manifold/upstream"
)

// TestReloadDescriptionKeepsProcess: a reload that changes only a server's
// description keeps its backend (process and all) and the new generation
// carries the new text; a changed command still replaces the backend.
func TestReloadDescriptionKeepsProcess(t *testing.T) {
	cfg := func(desc, command string) []ServerConfig {
		return []ServerConfig{{Upstream: upstream.Options{Name: "files", Command: command}, Prefix: "files", Description: desc}}
	}
	s, err := New(Options{Servers: cfg("Old text.", "/bin/true")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	before := s.gen.Load()
	if got := before.description(before.byName["files"]); got != "Old text." {
		t.Fatalf("description before reload = %q, want %q", got, "Old text.")
	}
	if err := s.Reload(cfg("New text.", "/bin/true")); err != nil {
		t.Fatal(err)
	}
	after := s.gen.Load()
	if after.byName["files"] != before.byName["files"] {
		t.Error("a reload that changed only the description replaced the backend; want it kept")
	}
	if got := after.description(after.byName["files"]); got != "New text." {
		t.Errorf("description after reload = %q, want %q", got, "New text.")
	}
	if err := s.Reload(cfg("New text.", "/bin/false")); err != nil {
		t.Fatal(err)
	}
	if s.gen.Load().byName["files"] == after.byName["files"] {
		t.Error("a reload that changed the command kept the backend; want it replaced")
	}
}
