// Command manifold is one MCP server in front of many: it starts the upstream
// servers listed in proxy.toml, merges and namespaces what they offer, and
// serves the whole over stdio or streamable HTTP.
//
// This package only parses flags, loads the config, wires the packages together
// and handles signals; the work is done in proxy, upstream and internal/config.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	// Its init starts `manifold serve`'s stdio servers while the rest of
	// the binary initialises; the proxy takes them (internal/spawn).
	_ "github.com/manifold-mcp/manifold/internal/earlystart"
)

// main is not reached when the binary runs as the reaper (first argument
// upstream.ReaperArg): package internal/reaper's init runs it and exits.
func main() {
	ctx, stopped := stopOnSignal(os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil && stopped() && errors.Is(err, context.Canceled) {
		err = nil // stopped as asked: not a failure
	}
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(os.Stderr, "manifold: "+ee.msg)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "manifold: "+err.Error())
		os.Exit(1)
	}
}

// forceAfter is how long after the first SIGINT a second one means "stop
// now" rather than a client's or a terminal's double signal.
const forceAfter = time.Second

// stopOnSignal returns a context cancelled by the first SIGINT or SIGTERM,
// and whether that happened. Cancelling starts the graceful stop: every
// server gets its grace. Later signals do not cut it short (Claude Code, for
// one, sends SIGINT and SIGTERM 100 ms apart), except a deliberate repeat:
// SIGINT again more than forceAfter after the first, or SIGQUIT. Those make
// the process exit at once, and its servers die with it.
func stopOnSignal(stderr io.Writer) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(context.Background())
	var got atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		first := <-sigs
		at := time.Now()
		got.Store(true)
		cancel()
		signal.Notify(sigs, syscall.SIGQUIT) // now, "force": before, Go's goroutine dump
		for sig := range sigs {
			if sig == syscall.SIGQUIT || (sig == os.Interrupt && time.Since(at) > forceAfter) {
				fmt.Fprintf(stderr, "manifold: %v: stopping now, without waiting for the servers\n", sig)
				os.Exit(130)
			}
			fmt.Fprintf(stderr, "manifold: %v while stopping after %v: the servers keep their grace; press Ctrl-C again after a second, or send SIGQUIT, to stop at once\n", sig, first)
		}
	}()
	return ctx, got.Load
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
	run  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands are the subcommands, in the order help and completion show
// them; run dispatches through them and completion reads their flag sets.
func commands() []command {
	return []command{
		{"serve", cmdServe},
		{"check", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdCheck(args, stdout, stderr)
		}},
		{"tools", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdTools(ctx, args, stdout, stderr)
		}},
		{"call", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdCall(ctx, args, stdout, stderr)
		}},
		{"status", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdStatus(ctx, args, stdout, stderr)
		}},
		{"explain", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdExplain(ctx, args, stdout, stderr)
		}},
		{"approve", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdApprove(ctx, args, stdout, stderr)
		}},
		{"approve-call", func(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			return cmdApproveCall(args, stdin, stdout, stderr)
		}},
		{"login", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdLogin(ctx, args, stdout, stderr)
		}},
		{"logout", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdLogout(ctx, args, stdout, stderr)
		}},
		{"import", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdImport(args, stdout, stderr)
		}},
		{"connect", func(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			return cmdConnect(args, stdin, stdout, stderr)
		}},
		{"doctor", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdDoctor(args, stdout, stderr)
		}},
		{"init", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdInit(args, stdout, stderr)
		}},
		{"completion", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdCompletion(args, stdout, stderr)
		}},
		{"help", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return cmdHelp(ctx, args, stdout, stderr)
		}},
		{"version", func(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) error {
			fmt.Fprintf(stdout, "manifold %s\n", version())
			return nil
		}},
	}
}
