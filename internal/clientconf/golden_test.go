package clientconf

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/clients")

// goldenDir holds one archive per case: client files as the clients write
// them, and what import makes of them.
var goldenDir = filepath.Join("..", "..", "testdata", "clients")

// testEnv is the machine of the golden cases.
var testEnv = Env{OS: "linux", Home: "/home/me", Cwd: "/home/me/project"}

// archive is a txtar-like file: a comment, then files each introduced by a
// line "-- NAME --".
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct {
	name string
	data string
}

func parseArchive(data string) archive {
	var a archive
	cur := &a.comment
	for line := range strings.Lines(data) {
		t := strings.TrimRight(line, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			a.files = append(a.files, archiveFile{name: t[3 : len(t)-3]})
			cur = &a.files[len(a.files)-1].data
			continue
		}
		*cur += line
	}
	return a
}

func (a archive) format() string {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, f := range a.files {
		fmt.Fprintf(&b, "-- %s --\n%s", f.name, f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (a *archive) get(name string) (string, bool) {
	for _, f := range a.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}

func (a *archive) set(name, data string) {
	for i, f := range a.files {
		if f.name == name {
			a.files[i].data = data
			return
		}
	}
	a.files = append(a.files, archiveFile{name: name, data: data})
}

// TestImportGolden imports the client files of each archive in
// testdata/clients/import ("-- CLIENT SCOPE PATH --" sections, read in
// order, into an optional "-- existing.toml --") and compares the result
// with its "-- proxy.toml --" and "-- notes --" sections. Run with -update
// to rewrite them.
func TestImportGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(goldenDir, "import", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden archives in %s: %v", goldenDir, err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a := parseArchive(string(data))
			im := NewImporter(testEnv)
			var errs []string
			for _, f := range a.files {
				fields := strings.Fields(f.name)
				if len(fields) != 3 {
					continue
				}
				c, err := ParseClient(fields[0])
				if err != nil {
					t.Fatalf("section %q: %v", f.name, err)
				}
				if err := im.Add(Location{Client: c, Scope: Scope(fields[1]), Path: fields[2]}, []byte(f.data)); err != nil {
					errs = append(errs, err.Error())
				}
			}
			existing, _ := a.get("existing.toml")
			m, err := Merge([]byte(existing), im.Entries())
			if err != nil {
				errs = append(errs, err.Error())
			}
			var notes bytes.Buffer
			for _, n := range im.Notes {
				fmt.Fprintln(&notes, "note:", n)
			}
			for _, s := range m.Skipped {
				fmt.Fprintln(&notes, "skipped:", s)
			}
			for _, e := range errs {
				fmt.Fprintln(&notes, "error:", e)
			}
			if *update {
				a.set("proxy.toml", string(m.Text))
				a.set("notes", notes.String())
				if err := os.WriteFile(path, []byte(a.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, _ := a.get("proxy.toml")
			if diff := cmp.Diff(want, string(m.Text)); diff != "" {
				t.Errorf("proxy.toml (-want +got):\n%s", diff)
			}
			wantNotes, _ := a.get("notes")
			if diff := cmp.Diff(wantNotes, notes.String()); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

// connectServer is Manifold's entry in the golden cases of connect.
var connectServer = Server{
	Command: "/home/me/bin/manifold",
	Args:    []string{"serve", "--config", "/home/me/.config/manifold/proxy.toml"},
}

// TestConnectGolden edits the client file of each archive in
// testdata/clients/connect ("-- CLIENT --", absent for a new file; an
// optional "-- remove --" lists entries to remove, "-- url --" makes the
// entry remote, "-- modern --" sets Server.Modern) and compares the result with "-- connected --". Connecting
// the result again changes nothing.
func TestConnectGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(goldenDir, "connect", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden archives in %s/connect: %v", goldenDir, err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a := parseArchive(string(data))
			var c Client
			var before string
			for _, f := range a.files {
				if cl, err := ParseClient(f.name); err == nil {
					c, before = cl, f.data
				}
			}
			if c == "" {
				c, err = ParseClient(strings.Fields(a.comment)[0])
				if err != nil {
					t.Fatalf("no client section, and the comment does not start with a client: %v", err)
				}
			}
			s := connectServer
			if u, ok := a.get("url"); ok {
				s = Server{URL: strings.TrimSpace(u)}
			}
			_, s.Modern = a.get("modern")
			removeText, _ := a.get("remove")
			remove := strings.Fields(removeText)
			out, err := Connect(c, []byte(before), s, remove)
			got := string(out)
			if err != nil {
				got = "error: " + err.Error() + "\n"
			}
			if *update {
				a.set("connected", got)
				if err := os.WriteFile(path, []byte(a.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, _ := a.get("connected")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("connected file (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			again, err := Connect(c, out, s, remove)
			if err != nil || string(again) != string(out) {
				t.Errorf("connecting again changed the file (err %v):\n%s", err, cmp.Diff(string(out), string(again)))
			}
			// What connect wrote is what import reads back as Manifold.
			im := NewImporter(testEnv)
			if err := im.Add(Location{Client: c, Scope: ScopeUser, Path: "/home/me/f"}, out); err != nil {
				t.Errorf("the connected file does not import: %v", err)
			}
		})
	}
}
