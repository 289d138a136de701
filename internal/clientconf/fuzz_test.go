package clientconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manifold-mcp/manifold/internal/config"
)

// FuzzImport feeds arbitrary bytes to the reader of each client: import
// never panics, and what it produces always loads as manifold check loads
// it (with every variable its notes name set).
func FuzzImport(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(goldenDir, "import", "*.txtar"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		a := parseArchive(string(data))
		for _, af := range a.files {
			if fields := strings.Fields(af.name); len(fields) == 3 {
				c, _ := ParseClient(fields[0])
				for i, cl := range Clients {
					if cl == c {
						f.Add(uint8(i), []byte(af.data))
					}
				}
			}
		}
	}
	f.Add(uint8(0), []byte(`{"mcpServers":{"x":{"command":"\u0000","args":["\ud800"],"env":{"":"$"}}}}`))
	f.Add(uint8(5), []byte("[mcp_servers.\"\"]\ncommand = \"\"\nstartup_timeout_sec = 1e300\n"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		c := Clients[int(which)%len(Clients)]
		for _, scope := range []Scope{ScopeUser, ScopeProject} {
			im := NewImporter(testEnv)
			if err := im.Add(Location{Client: c, Scope: scope, Path: "/home/me/project/.x/f"}, data); err != nil {
				continue
			}
			// Twice: the second import of the same file adds duplicates.
			_ = im.Add(Location{Client: c, Scope: scope, Path: "/home/me/project/.x/g"}, data)
			m, err := Merge(nil, im.Entries())
			if err != nil {
				t.Fatalf("%s: merge: %v", c, err)
			}
			if _, err := config.ParseEnv("proxy.toml", m.Text, anyVar); err != nil {
				t.Fatalf("%s: the result does not load: %v\n%s", c, err, m.Text)
			}
			again, err := Merge(m.Text, im.Entries())
			if err != nil || len(again.Added) != 0 {
				t.Fatalf("%s: merging the same entries again: %v, added %d", c, err, len(again.Added))
			}
		}
	})
}

// FuzzConnect edits arbitrary client files: Connect never panics, and when
// it succeeds, the result parses, imports back, and connecting it again
// changes nothing.
func FuzzConnect(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(goldenDir, "*", "*.txtar"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, af := range parseArchive(string(data)).files {
			name := strings.Fields(af.name + " x")[0]
			for i, cl := range Clients {
				if string(cl) == name {
					f.Add(uint8(i), []byte(af.data), false)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte, remote bool) {
		c := Clients[int(which)%len(Clients)]
		s := connectServer
		if remote {
			s = Server{URL: "http://127.0.0.1:7777/mcp"}
		}
		out, err := Connect(c, data, s, []string{"a", "memory"})
		if err != nil {
			return
		}
		again, err := Connect(c, out, s, []string{"a", "memory"})
		if err != nil || string(again) != string(out) {
			t.Fatalf("%s: connecting again: %v\n%s\n---\n%s", c, err, out, again)
		}
		if err := NewImporter(testEnv).Add(Location{Client: c, Scope: ScopeUser, Path: "/f"}, out); err != nil {
			t.Fatalf("%s: the result does not import: %v\n%s", c, err, out)
		}
	})
}
