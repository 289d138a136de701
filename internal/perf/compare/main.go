// Command compare is the comparison anyone can rerun (issue 42): the
// outside client of package outside calls the echo tool of the test
// fixture directly, through Manifold, and through any other proxy binary
// named with -other, over stdio and streamable HTTP, in rounds that
// alternate them in one run, and prints the table of ratios to the direct
// connection at the same transport (medians of the rounds, their range)
// with each one's CPU time and context switches per call. Run it from the
// repository:
//
//	nice -n 10 go run ./internal/perf/compare -rounds 5
//	go run ./internal/perf/compare -other ~/go/bin/mcp-proxy \
//	    -other-args '--config {config}' -other-config internal/perf/compare/mcp-proxy.json \
//	    -other-url 'http://127.0.0.1:{port}/echo/mcp'
//
// In -other-args, -other-config's text and -other-url, {port} is a free
// port of 127.0.0.1, {server} the echo server's path (it serves stdio with
// no arguments) and {config} the path of -other-config's text, written with
// those replaced. It builds ./cmd/manifold and ./testdata/fixture unless
// -manifold and -server name binaries. It is a measuring tool: nothing
// imports it and it is never part of manifold.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/manifold-mcp/manifold/internal/perf/outside"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

type config struct {
	rounds     int
	o          outside.Options
	transports []string
	manifold   string
	server     string
	tool       string
	other      struct{ path, name, transport, args, config, url, tool string }
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.IntVar(&c.rounds, "rounds", 5, "rounds; each measures every target once, in turn, the order reversed every other round")
	fs.IntVar(&c.o.Warmup, "warmup", outside.Outside.Warmup, "warm-up calls per session")
	fs.IntVar(&c.o.Calls, "calls", outside.Outside.Calls, "sequential calls per session (p50)")
	fs.IntVar(&c.o.Workers, "workers", outside.Outside.Workers, "workers sharing the session after the sequential calls (throughput)")
	fs.DurationVar(&c.o.For, "for", outside.Outside.For, "how long the workers call, per session")
	fs.StringVar(&c.o.Version, "version", outside.Outside.Version, "protocol version the client offers (2025-11-25 or 2026-07-28)")
	fs.BoolVar(&c.o.Roots, "roots", false, "the client declares roots, as the go-sdk's does by default (BenchmarkFloor's client); the outside client declares no capability")
	transports := fs.String("transports", "stdio,http", "transports to measure, comma-separated")
	fs.StringVar(&c.manifold, "manifold", "", "manifold `binary` (default: built from ./cmd/manifold)")
	fs.StringVar(&c.server, "server", "", "the echo server: a build of ./testdata/fixture (default: built)")
	fs.StringVar(&c.tool, "tool", "echo", "the fixture's tool to call (whoami: a tool without schemas to validate, cheaper than echo)")
	fs.StringVar(&c.other.path, "other", "", "another proxy `binary` to compare, in front of the same echo server")
	fs.StringVar(&c.other.name, "other-name", "", "its name in the table (default: the binary's base name)")
	fs.StringVar(&c.other.transport, "other-transport", outside.HTTP, "the transport it serves: http or stdio")
	fs.StringVar(&c.other.args, "other-args", "", "its arguments, split at spaces, with {port}, {server} and {config} replaced")
	fs.StringVar(&c.other.config, "other-config", "", "a config `file` template for it, written with {port} and {server} replaced to the file {config} names")
	fs.StringVar(&c.other.url, "other-url", "http://127.0.0.1:{port}/mcp", "its endpoint over HTTP, with {port} replaced")
	fs.StringVar(&c.other.tool, "other-tool", "", "the tool's name through it (default: -tool's)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.transports = strings.Split(*transports, ",")
	for _, t := range c.transports {
		if t != outside.Stdio && t != outside.HTTP {
			return c, fmt.Errorf("-transports: unknown transport %q", t)
		}
	}
	if c.other.transport != outside.Stdio && c.other.transport != outside.HTTP {
		return c, fmt.Errorf("-other-transport: unknown transport %q", c.other.transport)
	}
	if c.other.tool == "" {
		c.other.tool = c.tool
	}
	if c.other.name == "" && c.other.path != "" {
		c.other.name = filepath.Base(c.other.path)
	}
	if c.rounds < 1 {
		return c, fmt.Errorf("-rounds must be at least 1")
	}
	return c, nil
}

func run(ctx context.Context, args []string) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "manifold-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.manifold == "" {
		if c.manifold, err = build(dir, "manifold", "./cmd/manifold"); err != nil {
			return err
		}
	}
	if c.server == "" {
		if c.server, err = build(dir, "fixture", "./testdata/fixture"); err != nil {
			return err
		}
	}
	// Manifold's caches (catalogs, protocol eras) under the run's folder,
	// not the user's.
	if err := os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "manifold.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "log_level = \"error\"\n[servers.s0]\ncommand = %q\n", c.server), 0o644); err != nil {
		return err
	}
	targets, stopAll, err := c.targets(dir, cfg)
	defer stopAll()
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	logf("%d rounds of %d targets: %d warm-up calls, %d sequential, %d workers for %s, protocol %s; load average %s",
		c.rounds, len(targets), c.o.Warmup, c.o.Calls, c.o.Workers, c.o.For, c.o.Version, loadavg())
	res, err := outside.Rounds(ctx, targets, c.o, c.rounds, logf)
	if err != nil {
		return err
	}
	rows, err := outside.Summarize(targets, res)
	if err != nil {
		return err
	}
	fmt.Printf("protocol %s, %d rounds; load average at the end %s\n\n", c.o.Version, c.rounds, loadavg())
	outside.Print(os.Stdout, rows)
	return nil
}

// targets starts the HTTP servers and returns what to measure, by
// transport: direct, Manifold, the other proxy.
func (c config) targets(dir, cfg string) ([]outside.Target, func(), error) {
	var servers []*outside.Server
	stopAll := func() {
		for _, s := range servers {
			s.Stop()
		}
	}
	serve := func(url string, command ...string) (outside.Target, error) {
		s, err := outside.Serve(command, url)
		if err != nil {
			return outside.Target{}, err
		}
		servers = append(servers, s)
		return outside.Target{Transport: outside.HTTP, URL: s.URL, PID: s.PID()}, nil
	}
	var targets []outside.Target
	for _, tr := range c.transports {
		var direct, manifold outside.Target
		if tr == outside.Stdio {
			direct = outside.Target{Transport: tr, Command: []string{c.server}}
			manifold = outside.Target{Transport: tr, Command: []string{c.manifold, "serve", "--config", cfg}}
		} else {
			var err error
			if direct, err = serve("http://127.0.0.1:{port}/mcp", c.server, "-http", "127.0.0.1:{port}"); err != nil {
				return nil, stopAll, fmt.Errorf("the echo server over HTTP: %w", err)
			}
			if manifold, err = serve("http://127.0.0.1:{port}/mcp", c.manifold, "serve", "--config", cfg, "--http", "127.0.0.1:{port}"); err != nil {
				return nil, stopAll, fmt.Errorf("manifold over HTTP: %w", err)
			}
		}
		direct.Name, direct.Tool = outside.Direct, c.tool
		manifold.Name, manifold.Tool = "manifold", "s0__"+c.tool
		targets = append(targets, direct, manifold)
		if c.other.path == "" || c.other.transport != tr {
			continue
		}
		other, err := c.otherTarget(dir, serve)
		if err != nil {
			return nil, stopAll, fmt.Errorf("%s: %w", c.other.name, err)
		}
		targets = append(targets, other)
	}
	return targets, stopAll, nil
}

// otherTarget is the -other proxy: over HTTP started now, on a port of its
// own; over stdio started by each session.
func (c config) otherTarget(dir string, serve func(string, ...string) (outside.Target, error)) (outside.Target, error) {
	port, err := outside.FreePort()
	if err != nil {
		return outside.Target{}, err
	}
	conf := filepath.Join(dir, "other.conf")
	subst := strings.NewReplacer("{port}", port, "{server}", c.server, "{config}", conf)
	if c.other.config != "" {
		text, err := os.ReadFile(c.other.config)
		if err != nil {
			return outside.Target{}, err
		}
		if err := os.WriteFile(conf, []byte(subst.Replace(string(text))), 0o644); err != nil {
			return outside.Target{}, err
		}
	}
	command := append([]string{c.other.path}, strings.Fields(subst.Replace(c.other.args))...)
	t := outside.Target{Transport: outside.Stdio, Command: command}
	if c.other.transport == outside.HTTP {
		if t, err = serve(subst.Replace(c.other.url), command...); err != nil {
			return t, err
		}
	}
	t.Name, t.Tool = c.other.name, c.other.tool
	return t, nil
}

func build(dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s (run compare from the repository's root): %v\n%s", pkg, err, b)
	}
	return out, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
