package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goTestLines returns the `go test` commands of text that run the test
// suite (those with -race), one per line that holds one: the part from
// "go test" up to a shell comment or the line's end.
func goTestLines(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		i := strings.Index(line, "go test -race")
		if i < 0 {
			continue
		}
		cmd, _, _ := strings.Cut(line[i:], "#")
		out = append(out, strings.Join(strings.Fields(cmd), " "))
	}
	return out
}

// TestReadmeTestCommand: every `go test -race` command the README and the
// pages of docs/ show is the one .ci/run runs, timeout included, so that a newcomer who types the
// README's command runs what CI runs and is not stopped by go's default
// 10-minute timeout (the e2e package alone used to need more).
func TestReadmeTestCommand(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(moduleRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ci := goTestLines(read(filepath.Join(".ci", "run")))
	if len(ci) != 1 {
		t.Fatalf(".ci/run has %d `go test -race` lines, want 1: %q", len(ci), ci)
	}
	if !strings.Contains(ci[0], " -timeout ") {
		t.Errorf(".ci/run's %q has no -timeout: go's default (10m) is less than a loaded machine may need", ci[0])
	}
	// The quick start's command is in README.md, the development page's
	// in docs/development.md; any other page that shows one must agree too.
	pages, err := filepath.Glob(filepath.Join(moduleRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"README.md": true, filepath.Join("docs", "development.md"): true}
	for _, p := range pages {
		rel, err := filepath.Rel(moduleRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := want[rel]; !ok {
			want[rel] = false // may show none
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		cmds := goTestLines(read(name))
		if want[name] && len(cmds) == 0 {
			t.Errorf("%s shows no `go test -race` command, want the one .ci/run runs (%s)", name, ci[0])
		}
		for _, cmd := range cmds {
			if cmd != ci[0] {
				t.Errorf("%s shows\n\t%s\nbut .ci/run runs\n\t%s\nmake them the same", name, cmd, ci[0])
			}
		}
	}
}
