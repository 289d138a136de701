package main

import (
	"fmt"
	"io"
	"strings"
)

// commandFlags are the commands and their flags, for shell completion.
var commandFlags = []struct {
	name  string
	flags []string
}{
	{"serve", []string{"--config", "--http", "--allow-remote", "--insecure-no-auth", "--log-level"}},
	{"check", []string{"--config", "--log-level"}},
	{"tools", []string{"--config", "--json", "--client", "--entry", "--log-level"}},
	{"call", []string{"--config", "--json", "--log-level"}},
	{"status", []string{"--config", "--url", "--fresh", "--json", "--log-level"}},
	{"explain", []string{"--config", "--log-level", "--as", "--group"}},
	{"approve", []string{"--config", "--url", "--all", "-n", "--dry-run", "--fresh", "--log-level"}},
	{"approve-call", []string{"--yes", "--log-level"}},
	{"import", []string{"--config", "--write", "--as", "--log-level"}},
	{"connect", []string{"--config", "--scope", "--replace", "--http", "--undo", "--yes", "--name", "--always-load", "--modern", "--log-level"}},
	{"doctor", []string{"--config", "--json", "--log-level"}},
	{"init", []string{"--config", "--import", "--force", "--log-level"}},
	{"completion", nil},
	{"help", nil},
	{"version", nil},
}

// cmdCompletion prints the completion script of a shell.
func cmdCompletion(args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(stderr, "Usage: manifold completion bash|zsh|fish\n\n  bash: source <(manifold completion bash)\n  zsh:  manifold completion zsh > \"${fpath[1]}/_manifold\"\n  fish: manifold completion fish > ~/.config/fish/completions/manifold.fish\n")
		if len(args) == 1 {
			return nil
		}
		return usageError("")
	}
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
				fmt.Fprintf(stdout, "complete -c manifold -n '__fish_seen_subcommand_from %s' -l %s\n", c.name, strings.TrimPrefix(f, "--"))
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
