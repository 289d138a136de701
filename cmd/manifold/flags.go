package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// common holds the flags every command shares.
type common struct {
	config   string
	logLevel string

	// Not flags: set by the command.
	oneShot bool   // the answer is printed, then the servers stop (quickly: oneShotStdinGrace)
	only    string // the name or URI a command is about: start only the servers that can own it
	// interactive lets an OAuth server's 403 insufficient_scope run a new
	// login (a browser link on stderr) and retry: manifold call and tools.
	interactive bool
}

// Log levels a command uses when neither --log-level nor (for serve) the
// config says otherwise.
const (
	levelFromConfig = ""     // serve: the config's log_level
	levelOneShot    = "warn" // tools, call, explain, status: only what went wrong
)

// newFlags returns the flag set of a command, with the flags every command
// shares. defaultLevel is the command's log level when --log-level is not
// given (levelFromConfig: the config's log_level); the help says which.
func newFlags(name, synopsis, defaultLevel string, stderr io.Writer, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.config, "config", "", "path of the proxy config (default: $MANIFOLD_CONFIG, ./proxy.toml, or $XDG_CONFIG_HOME/manifold/proxy.toml)")
	levelDefault := "the config's log_level"
	switch {
	case name == "check":
		levelDefault = "warn; check starts nothing and logs nothing"
	case defaultLevel != levelFromConfig:
		levelDefault = defaultLevel + ", whatever the config's log_level"
	}
	fs.StringVar(&c.logLevel, "log-level", "", "log level on stderr: debug, info, warn or error (default: "+levelDefault+")")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: manifold %s\n\nFlags may come before or after the arguments; \"--\" ends them.\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	if sink := flagSink.Load(); sink != nil {
		(*sink)(fs) // completion.go
	}
	return fs
}

// parse parses args, flags and arguments in any order ("--" ends the flags),
// and returns the arguments. ok is false when the command must not run:
// after --help (err nil) or a bad flag (the flag package said why).
func parse(fs *flag.FlagSet, args []string) (pos []string, ok bool, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, false, nil
			}
			return nil, false, exitError{code: 2}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, true, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), true, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// argError is a usage error that says what is wrong with the arguments of
// cmd and where to read how to call it.
func argError(cmd, format string, args ...any) error {
	return usageError("%s: %s (see manifold %s --help)", cmd, fmt.Sprintf(format, args...), cmd)
}

// configArg takes the arguments of a command whose only argument is the
// config file (`manifold check other.toml`): it sets c.config, or refuses
// with a reason.
func configArg(cmd string, c *common, pos []string) error {
	switch {
	case len(pos) == 0:
		return nil
	case len(pos) > 1:
		return argError(cmd, "too many arguments %q; the only argument is the config file (or give it as --config FILE)", pos)
	case c.config != "" && c.config != pos[0]:
		return argError(cmd, "two config files, --config %q and %q; give one", c.config, pos[0])
	}
	if st, err := os.Stat(pos[0]); err != nil || st.IsDir() {
		return argError(cmd, "%q is not a file; the argument is the config file to use (like --config FILE)", pos[0])
	}
	c.config = pos[0]
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
