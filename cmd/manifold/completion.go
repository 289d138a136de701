package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// flagSink, while set, receives every flag set newFlags makes: how
// completion reads the commands' own flags.
var flagSink atomic.Pointer[func(*flag.FlagSet)]

// completionMu serialises the readings of the commands' flag sets.
var completionMu sync.Mutex

// commandFlags are the commands, in run's order, each with its flags as
// its own flag set defines them ("--name", "-n" for one letter): each
// command is run with --help, which defines its flags and runs nothing,
// so that completion cannot fall behind a command's flags.
func commandFlags() []struct {
	name  string
	flags []string
} {
	completionMu.Lock()
	defer completionMu.Unlock()
	var out []struct {
		name  string
		flags []string
	}
	for _, c := range commands() {
		var sets []*flag.FlagSet
		switch c.name {
		case "completion", "help", "version": // no flags; their arguments are completed below
		default:
			sink := func(fs *flag.FlagSet) { sets = append(sets, fs) }
			flagSink.Store(&sink)
			_ = c.run(context.Background(), []string{"--help"}, strings.NewReader(""), io.Discard, io.Discard)
			flagSink.Store(nil)
		}
		var flags []string
		for _, fs := range sets {
			fs.VisitAll(func(f *flag.Flag) {
				if len(f.Name) == 1 {
					flags = append(flags, "-"+f.Name)
				} else {
					flags = append(flags, "--"+f.Name)
				}
			})
		}
		out = append(out, struct {
			name  string
			flags []string
		}{c.name, flags})
	}
	return out
}

// cmdCompletion prints the completion script of a shell.
func cmdCompletion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(stderr, "Usage: manifold completion bash|zsh|fish\n\n  bash: source <(manifold completion bash)\n  zsh:  manifold completion zsh > \"${fpath[1]}/_manifold\"\n  fish: manifold completion fish > ~/.config/fish/completions/manifold.fish\n")
		if len(args) == 1 {
			return nil
		}
		return usageError("")
	}
	commandFlags := commandFlags()
	var cmds []string
	for _, c := range commandFlags {
		cmds = append(cmds, c.name)
	}
	clients := strings.ReplaceAll(clientList(), ",", "")
	switch args[0] {
	case "bash":
		var cases strings.Builder
		for _, c := range commandFlags {
			words := strings.Join(c.flags, " ")
			switch c.name {
			case "import", "connect":
				words += " " + clients
			case "help":
				words = strings.Join(cmds, " ") + " config values"
			case "completion":
				words = "bash zsh fish"
			}
			fmt.Fprintf(&cases, "    %s) words=%q ;;\n", c.name, words)
		}
		fmt.Fprintf(stdout, `# bash completion for manifold: source <(manifold completion bash)
_manifold() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} words
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur")); return
  fi
  case "$prev" in
    --config|--as) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  case "${COMP_WORDS[1]}" in
%s    *) words="" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _manifold manifold
`, strings.Join(cmds, " "), cases.String())
	case "zsh":
		var cases strings.Builder
		for _, c := range commandFlags {
			words := strings.Join(c.flags, " ")
			switch c.name {
			case "import", "connect":
				words += " " + clients
			case "help":
				words = strings.Join(cmds, " ") + " config values"
			case "completion":
				words = "bash zsh fish"
			}
			fmt.Fprintf(&cases, "    %s) compadd -- %s; _files ;;\n", c.name, words)
		}
		fmt.Fprintf(stdout, `#compdef manifold
# zsh completion for manifold: manifold completion zsh > "${fpath[1]}/_manifold"
_manifold() {
  if (( CURRENT == 2 )); then
    compadd -- %s
    return
  fi
  case "${words[2]}" in
%s  esac
}
_manifold "$@"
`, strings.Join(cmds, " "), cases.String())
	case "fish":
		fmt.Fprintln(stdout, "# fish completion for manifold: manifold completion fish > ~/.config/fish/completions/manifold.fish")
		fmt.Fprintf(stdout, "complete -c manifold -f -n __fish_use_subcommand -a %q\n", strings.Join(cmds, " "))
		for _, c := range commandFlags {
			for _, f := range c.flags {
				opt := "-l " + strings.TrimPrefix(f, "--")
				if !strings.HasPrefix(f, "--") {
					opt = "-s " + strings.TrimPrefix(f, "-")
				}
				fmt.Fprintf(stdout, "complete -c manifold -n '__fish_seen_subcommand_from %s' %s\n", c.name, opt)
			}
			switch c.name {
			case "import", "connect":
				fmt.Fprintf(stdout, "complete -c manifold -n '__fish_seen_subcommand_from %s' -a %q\n", c.name, clients)
			case "help":
				fmt.Fprintf(stdout, "complete -c manifold -f -n '__fish_seen_subcommand_from help' -a %q\n", strings.Join(cmds, " ")+" config values")
			case "completion":
				fmt.Fprintln(stdout, "complete -c manifold -f -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'")
			}
		}
	default:
		return usageError("completion: %q is not a shell this knows; use bash, zsh or fish", args[0])
	}
	return nil
}
