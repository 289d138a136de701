// Package earlystart starts the stdio servers of `manifold serve` (on
// stdio) from its init, while the rest of the binary initialises
// (spawn.Early); the proxy then takes them. A binary links it with a blank
// import.
//
// Go initialises a package once the packages it imports are, each step the
// first ready one in the order of their import paths. This one imports the
// config's reader and the standard library only, so its init runs before
// the go-sdk's, gRPC's and the proxy's, among others: 4.7-6.0 ms into the
// process on the 2-core VM (GODEBUG=inittrace=1, 2026-12-06), where main
// started the first server at 11-13.6 ms.
package earlystart

import (
	"errors"
	"flag"
	"io"
	"os"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/spawn"
)

func init() {
	path, ok := serveConfig(os.Args[1:])
	if !ok {
		return
	}
	spawn.Early(func() []spawn.Spec { return specsAt(config.Path(path)) })
}

// specsAt reads the config file at path, if it is a regular file, and
// returns its specs. A config that comes through a pipe (--config <(…)) can
// be read once only, and that is the proxy's; the files the config names
// are not read (its policy files and API keys say nothing of what starts,
// and could be pipes too; a ${file:} secret is read only from a regular
// file). Any failure means no early start: the proxy reports it.
func specsAt(path string) []spawn.Spec {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	cfg, err := config.Parse(path, data)
	if err != nil {
		return nil
	}
	return specs(cfg)
}

// specs are the processes of cfg's servers that the proxy starts at once,
// as it starts them: stdio servers, not lazy ones, nor those started per
// client session or per identity.
func specs(cfg *config.Config) []spawn.Spec {
	var out []spawn.Spec
	for _, s := range cfg.Servers {
		if s.Command != "" && !s.Lazy && !s.PerSession && !s.PerIdentity {
			out = append(out, spawn.Spec{Command: s.Command, Args: s.Args, Env: s.EnvList(), Dir: s.Cwd})
		}
	}
	return out
}

// serveConfig reads a command line (without the program's name) as that of
// `manifold serve` on stdio and returns its config flag or argument ("" for
// the default). ok is false for any other command line: serve --http (a
// service, started once, whose start is not a client's wait), and one serve
// would refuse (a flag it does not know, a flag or an argument twice). A
// flag added to serve and not here only means no early start.
func serveConfig(args []string) (path string, ok bool) {
	if len(args) == 0 || args[0] != "serve" {
		return "", false
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	seen := map[string]bool{}
	str := func(name string) {
		fs.Func(name, "", func(v string) error {
			if seen[name] {
				return errTwice
			}
			seen[name] = true
			if name == "config" {
				path = v
			}
			return nil
		})
	}
	str("config")
	str("log-level")
	str("http")
	fs.Duration("watch-interval", 0, "")
	fs.Bool("allow-remote", false, "")
	fs.Bool("insecure-no-auth", false, "")
	// Flags and arguments in any order, "--" ending the flags, as serve
	// reads them.
	var pos []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return "", false
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			pos = append(pos, left...)
			break
		}
		pos = append(pos, left[0])
		rest = left[1:]
	}
	switch {
	case seen["http"], len(pos) > 1, len(pos) == 1 && path != "":
		return "", false
	case len(pos) == 1:
		path = pos[0]
	}
	return path, true
}

var errTwice = errors.New("given twice")
