package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletionFollowsFlagSets: every shell's script offers every command
// that run knows and, after "manifold CMD -", every flag of that command's
// own flag set, read here from the flag set newFlags makes (not from the
// completion's list); the commands and flags it once lacked among them.
func TestCompletionFollowsFlagSets(t *testing.T) {
	flagsOf := func(name string) []string {
		var sets []*flag.FlagSet
		sink := func(fs *flag.FlagSet) { sets = append(sets, fs) }
		completionMu.Lock()
		flagSink.Store(&sink)
		_, _, _ = runCmd(t, name, "--help")
		flagSink.Store(nil)
		completionMu.Unlock()
		var out []string
		for _, fs := range sets {
			fs.VisitAll(func(f *flag.Flag) {
				if len(f.Name) == 1 {
					out = append(out, "-"+f.Name)
				} else {
					out = append(out, "--"+f.Name)
				}
			})
		}
		return out
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	for _, want := range []string{"login", "logout", "approve-call"} {
		if !slices.Contains(names, want) {
			t.Errorf("run knows no command %q", want)
		}
	}
	for _, c := range []struct{ cmd, flag string }{{"tools", "--tokens"}, {"serve", "--watch-interval"}, {"login", "--timeout"}, {"approve", "--dry-run"}} {
		if !slices.Contains(flagsOf(c.cmd), c.flag) {
			t.Errorf("%s's flag set has no %s", c.cmd, c.flag)
		}
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		bin, err := exec.LookPath(sh)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Errorf("%s is not installed; .ci/run installs it", sh)
			}
			continue
		}
		script, _, err := runCmd(t, "completion", sh)
		if err != nil {
			t.Fatalf("completion %s: %v", sh, err)
		}
		f := filepath.Join(t.TempDir(), "c."+sh)
		if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		offered := func(line string) []string {
			out, err := exec.Command(bin, completers[sh](f, line)...).CombinedOutput()
			if err != nil {
				t.Errorf("%s completing %q: %v\n%s", sh, line, err, out)
			}
			var got []string
			for _, l := range strings.Split(string(out), "\n") {
				if w := strings.Fields(l); len(w) > 0 {
					got = append(got, w[0]) // fish adds a description after a tab
				}
			}
			return got
		}
		cmds := offered("manifold ")
		for _, name := range names {
			if !slices.Contains(cmds, name) {
				t.Errorf("%s: manifold <TAB> lacks %s: %q", sh, name, cmds)
			}
			flags := flagsOf(name)
			if len(flags) == 0 {
				continue
			}
			got := offered("manifold " + name + " -")
			for _, fl := range flags {
				if !slices.Contains(got, fl) {
					t.Errorf("%s: manifold %s -<TAB> lacks %s: %q", sh, name, fl, got)
				}
			}
		}
	}
}
