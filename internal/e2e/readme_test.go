package e2e

import (
	"os"
	"path/filepath"
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

// TestReadmeTestCommand: every `go test -race` command the README shows is
// the one .ci/run runs, timeout included, so that a newcomer who types the
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
	readme := goTestLines(read("README.md"))
	if len(readme) < 2 { // the quick start's and the development section's
		t.Fatalf("README.md shows %d `go test -race` commands, want the quick start's and the development section's: %q", len(readme), readme)
	}
	for _, cmd := range readme {
		if cmd != ci[0] {
			t.Errorf("README.md shows\n\t%s\nbut .ci/run runs\n\t%s\nmake them the same", cmd, ci[0])
		}
	}
}
