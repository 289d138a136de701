// Command manifold is one MCP server in front of many: it starts the upstream
// servers listed in proxy.toml, merges and namespaces what they offer, and
// serves the whole over stdio or streamable HTTP.
//
// This package only parses flags, loads the config, wires the packages together
// and handles signals; the work is done in proxy, upstream and internal/config.
//
// Where things are: main.go has main, run and the command table; signal.go
// the stop on SIGINT and SIGTERM; flags.go the flags every command shares
// and the argument helpers; wiring.go the config mapped onto proxy.Options
// and the proxy built from it. Each command has a file of its own: serve.go,
// check.go, tools.go, call.go, status.go, explain.go, pin.go (approve),
// approvecall.go, login.go (login, logout), import.go, connect.go, doctor.go,
// init.go, completion.go and help.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/manifold-mcp/manifold/proxy"

	// Its init starts `manifold serve`'s stdio servers while the rest of
	// the binary initialises; the proxy takes them (internal/spawn).
	_ "github.com/manifold-mcp/manifold/internal/earlystart"
)

// main is not reached when the binary runs as the reaper (first argument
// upstream.ReaperArg): package internal/reaper's init runs it and exits.
func main() {
	ctx, stopped := stopOnSignal(os.Stderr)
	if code := exitCode(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), stopped(), os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit status of run's err, whose message it writes to
// stderr. stopped says a signal stopped the program: then a cancelled
// context is not a failure.
func exitCode(err error, stopped bool, stderr io.Writer) int {
	if err != nil && stopped && errors.Is(err, context.Canceled) {
		err = nil // stopped as asked: not a failure
	}
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(stderr, "manifold: "+ee.msg)
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "manifold: "+err.Error())
		return 1
	}
	return 0
}

// exitError carries a specific exit status out of run.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

const usage = `manifold: one MCP server in front of many.

Usage:
  manifold serve [--config FILE] [--http [ADDR]]        serve MCP on stdio (default) or streamable HTTP
  manifold check [--config FILE | FILE]                 validate the config without starting anything
  manifold tools [--config FILE | FILE] [--json]        start the servers and print the merged catalog
                 [--client NAME [--entry NAME]]         ... or flag the names that client would refuse or mangle
  manifold call  [--config FILE] [--json] NAME [JSON]   call one tool through the full proxy path
  manifold status [--config FILE | FILE | --url URL]    each server's state, pid, uptime, restarts, health
  manifold explain [--config FILE] NAME|URI             the policy's decision for a tool, prompt or URI, and why
                 [--as IDENTITY [--group NAME]...]      ... as one HTTP identity sees it (user:SUB, key:NAME)
  manifold approve [--config FILE] [SERVER[/NAME]]      review changed upstream definitions and accept them into manifold.lock
  manifold approve-call [--yes] ID                      approve one call that waits for a person (confirm = true)
  manifold login SERVER [--as IDENTITY]                 authorize Manifold at a server with auth = "oauth" (browser link)
  manifold logout SERVER [--as IDENTITY]                forget a stored credential
  manifold import [CLIENT... | FILE...] [--write]       the servers your clients have, as proxy.toml tables
  manifold connect CLIENT [--replace] [--http URL]      add Manifold as one entry of a client (preview, backup, --undo)
  manifold doctor [--config FILE] [--json]              clients, their Manifold entries, duplicates, config and start problems
  manifold init [--import]                              write a commented starter proxy.toml
  manifold completion bash|zsh|fish                     shell completion script
  manifold help [config | KEY | COMMAND]                the config keys, or a command's flags
  manifold version                                      print the version

Flags may come before or after the arguments.
The config is --config, else $MANIFOLD_CONFIG, else ./proxy.toml, else
$XDG_CONFIG_HOME/manifold/proxy.toml. Run "manifold COMMAND --help" for a
command's flags.
`

// run is the whole program; tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError("")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "--version", "-v":
		cmd = "version"
	case "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	for _, c := range commands() {
		if c.name == cmd {
			return c.run(ctx, rest, stdin, stdout, stderr)
		}
	}
	fmt.Fprint(stderr, usage)
	return usageError("unknown command %q", cmd)
}

// command is one subcommand: its name and what runs it.
type command struct {
	name string
	run  runFunc
}

// runFunc runs one subcommand with the arguments after its name.
type runFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// commands are the subcommands, in the order help and completion show
// them; run dispatches through them and completion reads their flag sets.
func commands() []command {
	return []command{
		{"serve", cmdServe},
		{"check", cmdCheck},
		{"tools", cmdTools},
		{"call", cmdCall},
		{"status", cmdStatus},
		{"explain", cmdExplain},
		{"approve", cmdApprove},
		{"approve-call", cmdApproveCall},
		{"login", cmdLogin},
		{"logout", cmdLogout},
		{"import", cmdImport},
		{"connect", cmdConnect},
		{"doctor", cmdDoctor},
		{"init", cmdInit},
		{"completion", cmdCompletion},
		{"help", cmdHelp},
		{"version", cmdVersion},
	}
}

// cmdVersion prints the version.
func cmdVersion(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) error {
	fmt.Fprintf(stdout, "manifold %s\n", version())
	return nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return proxy.Version
}
