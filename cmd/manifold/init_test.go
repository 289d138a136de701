package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/manifold-mcp/manifold/internal/config"
)

// TestInit writes the starter config, which loads as is; a second init
// refuses to replace it, and --force replaces it after a backup. With
// --import it holds the clients' servers.
func TestInit(t *testing.T) {
	home, _ := clientHome(t)
	path := filepath.Join(home, ".config", "manifold", "proxy.toml")
	if _, stderr, err := runCmd(t, "init"); err != nil {
		t.Fatalf("init: %v\n%s", err, stderr)
	}
	if _, err := config.Load(path); err != nil {
		t.Fatalf("the starter config does not load: %v", err)
	}
	if _, _, err := runCmd(t, "init"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second init: %v, want a refusal", err)
	}
	claude := `{"mcpServers":{"memory":{"command":"npx","args":["-y","@modelcontextprotocol/server-memory"]}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(claude), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runCmd(t, "init", "--import", "--force"); err != nil {
		t.Fatalf("init --import --force: %v\n%s", err, stderr)
	}
	cfg, err := config.Load(path)
	if err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Name != "memory" {
		t.Fatalf("init --import: %v %+v", err, cfg)
	}
	if bs, _ := backups(path); len(bs) != 1 {
		t.Errorf("--force made no backup: %v", bs)
	}
}

// TestHelpAndCompletion: help lists the config keys and finds one; each
// completion script is valid for its shell (where the shell is installed).
func TestHelpAndCompletion(t *testing.T) {
	out, _, err := runCmd(t, "help", "config")
	if err != nil || !strings.Contains(out, "tools.deny") || !strings.Contains(out, "startup_timeout") {
		t.Errorf("help config: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, "help", "call_timeout")
	if err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("help call_timeout: %v\n%s", err, out)
	}
	if _, _, err := runCmd(t, "help", "no_such_key"); err == nil {
		t.Error("help of an unknown topic succeeded")
	}
	out, _, err = runCmd(t, "help", "connect")
	if err != nil || !strings.Contains(out, "-undo") {
		t.Errorf("help connect: %v\n%s", err, out)
	}
	// Each shell completes a subcommand, a flag of connect and a client
	// name with the script sourced.
	complete := completers
	for _, sh := range []string{"bash", "zsh", "fish"} {
		script, _, err := runCmd(t, "completion", sh)
		if err != nil || !strings.Contains(script, "connect") {
			t.Fatalf("completion %s: %v", sh, err)
		}
		bin, err := exec.LookPath(sh)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Errorf("%s is not installed; .ci/run installs it", sh)
			}
			continue // not installed on this developer's machine
		}
		f := filepath.Join(t.TempDir(), "c."+sh)
		if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, out)
		}
		for line, want := range map[string]string{"manifold conn": "connect", "manifold connect --mo": "--modern", "manifold connect co": "codex"} {
			out, err := exec.Command(bin, complete[sh](f, line)...).CombinedOutput()
			var got []string
			for _, l := range strings.Split(string(out), "\n") {
				got = append(got, strings.Fields(l+" ")...)
			}
			if err != nil || !slices.Contains(got, want) {
				t.Errorf("%s completes %q with %q (err %v), want %q among them", sh, line, out, err, want)
			}
		}
	}
}

// completers give the command line that makes each shell print what its
// completion script f offers for line (zsh's compadd and _files are
// stubbed to print what they would offer: the completion system itself is
// zsh's).
var completers = map[string]func(f, line string) []string{
	"bash": func(f, line string) []string {
		q := quotedWords(line)
		return []string{"-c", fmt.Sprintf(`source %q; COMP_WORDS=(%s); COMP_CWORD=%d; _manifold; printf '%%s\n' "${COMPREPLY[@]}"`, f, strings.Join(q, " "), len(q)-1)}
	},
	"zsh": func(f, line string) []string {
		q := quotedWords(line)
		return []string{"-fc", fmt.Sprintf(`compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }; _files() { }; words=(%s); CURRENT=%d; source %q`, strings.Join(q, " "), len(q), f)}
	},
	"fish": func(f, line string) []string {
		return []string{"--no-config", "-c", fmt.Sprintf("source %q; complete -C %q", f, line)}
	},
}

// quotedWords splits a command line as a shell's completion sees it (a
// trailing space starts an empty word), each word quoted for the shell.
func quotedWords(line string) []string {
	words := strings.Fields(line)
	if strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return q
}

// TestHelpKeysAreKeys: every key manifold help documents is one the config
// knows (a wrong type is reported, never "unknown key").
func TestHelpKeysAreKeys(t *testing.T) {
	for _, k := range configKeys {
		var docs []string
		switch {
		case strings.Contains(k.key, "NAME") || strings.Contains(k.key, "TOOL") || k.key == "health" || k.key == "restart":
			continue
		case strings.HasPrefix(k.key, "http.") || strings.HasPrefix(k.key, "audit."):
			sect, key, _ := strings.Cut(k.key, ".")
			docs = append(docs, "["+sect+"]\n"+key+" = {}\n")
		default:
			if strings.Contains(k.where, "top level") {
				docs = append(docs, k.key+" = {}\n")
			}
			if strings.Contains(k.where, "server") {
				docs = append(docs, "[servers.s]\ncommand = \"x\"\n"+k.key+" = {}\n")
			}
		}
		for _, doc := range docs {
			_, err := config.ParseEnv("p.toml", []byte(doc), func(string) (string, bool) { return "", false })
			if err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("help documents %s (%s), which the config does not know: %v", k.key, k.where, err)
			}
		}
	}
}
