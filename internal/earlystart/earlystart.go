// Package earlystart starts the stdio servers of `manifold serve` (on
// stdio) from its init, while the rest of the binary initialises
// (prestart.Start); the proxy then takes them. A binary links it with a
// blank import.
//
// Go initialises a package once the packages it imports are, each step the
// first ready one in the order of their import paths. This one imports the
// standard library's early packages, the TOML decoder and prestart only (a
// test holds it to that: no os/exec, path/filepath, regexp or net, whose
// initialisation comes after gRPC's, protobuf's and the go-sdk's), so its
// init runs before theirs: about 2 ms into the process on the 2-core VM
// (GODEBUG=inittrace=1, 2026-12-07), where it ran at 4.4-8 ms when it
// read the config with internal/config (which needs all of them), and main
// started the first server at 11-13.6 ms before that.
package earlystart

import (
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/configpath"
	"github.com/manifold-mcp/manifold/internal/envref"
	"github.com/manifold-mcp/manifold/internal/spawn/prestart"
	"github.com/manifold-mcp/manifold/internal/tomldepth"
)

func init() {
	p, ok := serveConfig(os.Args[1:])
	if !ok {
		return
	}
	prestart.Start(func() []prestart.Spec { return specsAt(configpath.Find(p)) })
}

// specsAt reads the config file at p, if it is a regular file, and returns
// the specs of its servers that start early. A config that comes through a
// pipe (--config <(…)) can be read once only, and that is the proxy's; the
// files the config names are not read (its policy files and API keys say
// nothing of what starts, and could be pipes too). Any failure means no
// early start: the proxy reports it. What is not a regular file is not
// opened (a FIFO's writer waits for a reader's open, and would write to
// none once this one closed); a file replaced by a FIFO after that check
// is opened without waiting for a writer, and not read.
func specsAt(p string) []prestart.Spec {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, ok := readRegular(p)
	if !ok {
		return nil
	}
	return specs(p, data)
}

// readRegular reads the file at p if what it opens is a regular file; it
// does not wait for a FIFO's writer.
func readRegular(p string) ([]byte, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := io.ReadAll(f)
	return data, err == nil
}

// specs reads data, the config file at p, as internal/config does for what
// decides a server's process, and returns the specs of the servers the
// proxy starts at once (stdio servers, not lazy ones, nor those started per
// client session or per identity, nor disabled ones), as the proxy gives
// them to spawn (the command, resolved against the config's folder if it
// is a path; the arguments; the env table as KEY=VALUE sorted by key; the
// folder, cwd resolved against the config's, or the config's). It reads the
// servers' tables only, and leaves to the proxy what it cannot tell
// exactly as internal/config would: a file it cannot read as TOML, or of
// another version, a config whose folder is not its file's (a name of a
// file descriptor); a server whose keys for its process have a type or a
// value config refuses, or a reference config reads from a file (spec). A
// config that errs elsewhere still starts its servers here: the proxy
// refuses it, and they are stopped as serve returns (spawn.Discard), or by
// the reaper if the proxy is killed.
func specs(p string, data []byte) []prestart.Spec {
	dir, ok := configDir(p)
	if !ok {
		return nil
	}
	src := strings.TrimPrefix(string(data), "\uFEFF")
	if tomldepth.Check(src) != nil {
		return nil
	}
	var top map[string]any
	if _, err := toml.Decode(src, &top); err != nil {
		return nil
	}
	if v, ok := top["version"]; ok && v != int64(1) {
		return nil
	}
	servers, _ := top["servers"].(map[string]any)
	var out []prestart.Spec
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if t, ok := servers[name].(map[string]any); ok {
			if s, ok := spec(t, dir); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// spec is the spec of the server whose table is t, in a config whose
// folder is dir, if the proxy starts it at once and config reads it
// exactly so: its strings expanded as config expands them (envref), from
// the environment; a ${file:} reference (a file config reads) or a
// variable that is unset and has no default (config refuses it) leaves the
// server to the proxy.
func spec(t map[string]any, dir string) (prestart.Spec, bool) {
	var s prestart.Spec
	if v, ok := t["disabled"]; ok && v != false {
		return s, false // disabled, or not a boolean
	}
	for k, want := range map[string]string{"start": "eager", "isolation": "shared"} {
		if v, ok := t[k]; ok && v != want {
			return s, false // lazy, per session or identity, or invalid
		}
	}
	if _, ok := t["url"]; ok {
		return s, false
	}
	cmd, ok := str(t["command"])
	if !ok || cmd == "" {
		return s, false
	}
	s.Command = cmd
	if strings.Contains(cmd, "/") {
		s.Command = resolve(dir, cmd)
	}
	if v, ok := t["args"]; ok {
		list, ok := v.([]any)
		if !ok {
			return s, false
		}
		for _, a := range list {
			a, ok := str(a)
			if !ok {
				return s, false
			}
			s.Args = append(s.Args, a)
		}
	}
	if v, ok := t["env"]; ok {
		env, ok := v.(map[string]any)
		if !ok {
			return s, false
		}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			v, ok := str(env[k])
			if !ok {
				return s, false
			}
			s.Env = append(s.Env, k+"="+v)
		}
	}
	s.Dir = dir
	if v, ok := t["cwd"]; ok {
		cwd, ok := str(v)
		if !ok {
			return s, false
		}
		s.Dir = resolve(dir, cwd)
	}
	return s, true
}

// str is v, a string, expanded as config expands it; false if v is not a
// string, or config would read a file or refuse it.
func str(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	out, missing, err := expander.Expand(s)
	return out, err == nil && len(missing) == 0
}

// expander expands ${VAR} and ${env:VAR} from the environment, and
// refuses ${file:}.
var expander = envref.Resolver{Env: func(name string, _ bool) (string, bool) { return os.LookupEnv(name) }}

// configDir is the folder of the config file at p, absolute, as config's
// (filepath.Abs, then its folder); false for a name of a file descriptor,
// whose relative paths config resolves against the working directory.
func configDir(p string) (string, bool) {
	if !path.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", false
		}
		p = path.Join(wd, p)
	}
	abs := path.Clean(p)
	if strings.HasPrefix(abs, "/dev/") || strings.HasPrefix(abs, "/proc/") {
		return "", false
	}
	return path.Dir(abs), true
}

// resolve makes a relative path absolute against dir, as config does.
func resolve(dir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
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
