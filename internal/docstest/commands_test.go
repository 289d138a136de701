package docstest

import (
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cli is what the built binary says of its commands and their flags.
type cli struct {
	flags map[string][]string // command -> flags without dashes
}

var (
	usageCmdRE = regexp.MustCompile(`(?m)^\s+manifold ([a-z][a-z-]*)`)
	flagRE     = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
)

// readCLI runs `manifold -h` for the commands and `manifold CMD -h` for the
// flags of each.
func readCLI(t *testing.T, bin string) *cli {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	c := &cli{flags: map[string][]string{}}
	for _, m := range usageCmdRE.FindAllStringSubmatch(string(out), -1) {
		c.flags[m[1]] = nil
	}
	if len(c.flags) == 0 {
		t.Fatalf("manifold -h names no command:\n%s", out)
	}
	for cmd := range c.flags {
		out, err := exec.Command(bin, cmd, "-h").CombinedOutput()
		if err != nil {
			continue // help and the like: no flag set
		}
		for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
			c.flags[cmd] = append(c.flags[cmd], m[1])
		}
	}
	return c
}

var (
	// a shell word that runs manifold (bin/manifold, /home/me/bin/manifold),
	// then a command word
	invokeRE   = regexp.MustCompile(`(?:^|[\s(\[$])(?:[^\s()\[\]"'$]*/)?manifold\s+([a-z][a-z-]*)(?:\s|$)`)
	longRE     = regexp.MustCompile(`(?:^|[\s\[(|])--([a-z][a-z0-9-]*)`)
	shellEndRE = regexp.MustCompile(`&&|\|\||;| \| | #|\$\(|\)$`)
)

// commandSnippets returns the code a page shows: its code spans and the
// lines of its code blocks (of a block of a terminal's text, the lines
// typed after a "$ " prompt).
func commandSnippets(d *doc) []line {
	var out []line
	for _, l := range d.prose {
		for _, s := range spans(l.text) {
			out = append(out, line{l.n, s})
		}
	}
	for _, b := range d.blocks {
		output := b.info == "" || b.info == "text" || b.info == "console"
		for i, s := range b.lines {
			if output { // a terminal's text: only what follows a prompt was typed
				var typed bool
				if s, typed = strings.CutPrefix(s, "$ "); !typed {
					continue
				}
			}
			out = append(out, line{b.start + 1 + i, s})
		}
	}
	return out
}

// checkCommands: every `manifold CMD --flag` a page shows names a command
// of the binary and a flag of that command.
func checkCommands(c *cli, docs []*doc) (problems []string, commands, flags int) {
	for _, d := range docs {
		for _, s := range commandSnippets(d) {
			ms := invokeRE.FindAllStringSubmatchIndex(s.text, -1)
			for i, m := range ms {
				cmd := s.text[m[2]:m[3]]
				commands++
				known, ok := c.flags[cmd]
				if !ok {
					problems = append(problems, fmt.Sprintf("%s:%d: `%s`: manifold has no command %q", d.rel, s.n, s.text, cmd))
					continue
				}
				rest := s.text[m[1]:]
				if i+1 < len(ms) {
					rest = s.text[m[1]:ms[i+1][0]]
				}
				if loc := shellEndRE.FindStringIndex(rest); loc != nil {
					rest = rest[:loc[0]]
				}
				if before, _, found := strings.Cut(rest, " -- "); found {
					rest = before // "--" ends the flags
				}
				for _, f := range longRE.FindAllStringSubmatch(rest, -1) {
					flags++
					if f[1] == "help" || slices.Contains(known, f[1]) {
						continue
					}
					problems = append(problems, fmt.Sprintf("%s:%d: `%s`: manifold %s has no flag --%s", d.rel, s.n, s.text, cmd, f[1]))
				}
			}
		}
	}
	return problems, commands, flags
}

// checkShown: every command of the binary is shown on some page.
func checkShown(c *cli, docs []*doc) []string {
	shown := map[string]bool{}
	for _, d := range docs {
		for _, s := range commandSnippets(d) {
			for _, m := range invokeRE.FindAllStringSubmatch(s.text, -1) {
				shown[m[1]] = true
			}
		}
	}
	var problems []string
	for _, cmd := range slices.Sorted(maps.Keys(c.flags)) {
		if !shown[cmd] {
			problems = append(problems, fmt.Sprintf("manifold %s is shown on no page", cmd))
		}
	}
	return problems
}
