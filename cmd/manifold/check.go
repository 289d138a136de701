package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/upstream"
)

func cmdCheck(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("check", "check [--config FILE | FILE]", levelOneShot, stderr, &c)
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if err := configArg("check", &c, pos); err != nil {
		return err
	}
	cfg, err := config.Check(config.Path(c.config), exec.LookPath)
	if err != nil {
		return exitError{code: 1, msg: problems(err)}
	}
	red := redact.New(cfg.Secrets...)
	if _, err := readLock(cfg.LockFile); err != nil {
		return exitError{code: 1, msg: red.String(problems(err))}
	}
	if _, err := proxy.New(proxyOptions(cfg, nil)); err != nil {
		return exitError{code: 1, msg: red.String(problems(fmt.Errorf("%s: %w", cfg.Path, err)))}
	}
	stdout = red.Writer(stdout)
	fmt.Fprintf(stdout, "%s: ok, %s, %s\n", cfg.Path, count(len(cfg.Servers), "server"), count(len(cfg.Plugins), "plugin"))
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(red.Writer(stderr), "manifold: warning: %s\n", w)
	}
	for _, l := range cfg.LeftOut {
		fmt.Fprintf(red.Writer(stderr), "manifold: warning: server %s will be left out (the others serve): %s\n", l.Name, l.Err)
	}
	for _, s := range cfg.Servers {
		what := s.Command + " " + strings.Join(s.Args, " ")
		if s.URL != "" {
			what = redact.URL(s.URL) + " (" + s.Transport + ")"
		}
		prefix := s.Prefix + "__"
		if s.Prefix == "" {
			prefix = "(none)"
		}
		fmt.Fprintf(stdout, "  %-16s prefix %-14s %s  (protocol %s)\n", s.Name, prefix, strings.TrimSpace(what), protocolOf(s))
	}
	for _, pl := range cfg.Plugins {
		prefix := pl.Prefix + "__"
		if pl.Prefix == "" {
			prefix = "(none)"
		}
		fmt.Fprintf(stdout, "  %-16s prefix %-14s plugin %s\n", pl.Name, prefix, strings.TrimSpace(pl.Command+" "+strings.Join(pl.Args, " ")))
	}
	return nil
}

// protocolOf says which era a server is pinned to, for check.
func protocolOf(s config.Server) string {
	switch {
	case s.Transport == config.TransportSSE:
		return "legacy: the sse transport"
	case s.Protocol == "" || s.Protocol == config.ProtocolAuto:
		t := s.ProbeTimeout
		if t == 0 {
			t = upstream.DefaultProbeTimeout
		}
		what := "probe of server/discover, " + t.String()
		if s.URL != "" {
			what = "discover, once per origin"
		}
		return "auto: " + what
	case s.Protocol == config.ProtocolLegacy:
		return "legacy (pinned; no probe)"
	}
	return s.Protocol + " (pinned)"
}

// problems says how many problems err holds (each error joined into it,
// however deep, is one, and is one line of its message) and lists them.
func problems(err error) string {
	return count(countErrors(err), "problem") + ":\n" + err.Error()
}

func countErrors(err error) int {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		n := 0
		for _, e := range e.Unwrap() {
			n += countErrors(e)
		}
		return n
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			return countErrors(inner)
		}
	}
	return 1
}
