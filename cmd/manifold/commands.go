package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/spawn"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/internal/tokenstore"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/upstream"
)

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return proxy.Version
}

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

func loadConfig(c common) (*config.Config, error) {
	cfg, err := config.Load(config.Path(c.config))
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// newLogger returns the log on w: text, or one JSON object a line when
// jsonLines (log_format = "json").
func newLogger(w io.Writer, level string, jsonLines bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError("log level %q: want debug, info, warn or error", level)
	}
	if jsonLines {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// proxyOptions maps the config onto the proxy's typed options.
func proxyOptions(cfg *config.Config, log *slog.Logger) proxy.Options {
	opts := proxy.Options{
		CacheDir:         cacheDir(),
		Policy:           cfg.Policy,
		CallTimeout:      cfg.CallTimeout,
		FirstListWait:    cfg.FirstListWait,
		MaxNameLength:    cfg.MaxNameLength,
		FirstListTimeout: cfg.FirstListTimeout,
		MaxMessageBytes:  cfg.MaxMessageBytes,
		Logger:           log,
		StateKey:         stateKey(cfg),
		StateTTL:         cfg.Protocol.StateTTL,
		MaxInputRounds:   cfg.Protocol.MaxInputRounds,
		ConfirmTTL:       cfg.ConfirmTTL,
		ApprovalDir:      approvalDir(),
		Catalog:          catalogOptions(cfg.Catalog),
	}
	var store *tokenstore.Store // nil: OAuth servers say how to configure [tokens]
	if cfg.Tokens.Key != "" {
		store, _ = tokenStore(cfg) // the key's length is checked by the config
	}
	for _, s := range cfg.Servers {
		opts.Servers = append(opts.Servers, proxy.ServerConfig{
			Upstream: upstream.Options{
				Name:            s.Name,
				Command:         s.Command,
				Args:            s.Args,
				Env:             s.EnvList(),
				Dir:             s.Cwd,
				URL:             s.URL,
				Headers:         s.Headers,
				Transport:       s.Transport,
				StartupTimeout:  s.StartupTimeout,
				MaxMessageBytes: s.MaxMessageBytes,
				Protocol:        s.Protocol,
				ProbeTimeout:    s.ProbeTimeout,
				OAuth:           oauthOptions(s, store),
				Exchange:        exchangeOptions(s),
			},
			PerIdentity:  s.PerIdentity,
			IdentityEnv:  identityEnv(s.Identities),
			Prefix:       s.Prefix,
			Required:     s.Required,
			CallTimeout:  s.CallTimeout,
			Description:  s.Description,
			Instructions: s.Instructions,
			Pin:          pinMode(s.Pin),
			Restart: proxy.RestartPolicy{
				Disabled:    s.Restart.Disabled,
				Initial:     s.Restart.InitialDelay,
				Max:         s.Restart.MaxDelay,
				Crashes:     s.Restart.MaxFailures,
				Window:      s.Restart.FailureWindow,
				FailedRetry: s.Restart.FailedRetry,
			},
			Health:      healthCheck(s.Health),
			Lazy:        s.Lazy,
			PerSession:  s.PerSession,
			IdleTimeout: s.IdleTimeout,
			AllowUnsolicited: proxy.Unsolicited{
				Sampling:    s.AllowUnsolicitedSampling,
				Elicitation: s.AllowUnsolicitedElicitation,
			},
		})
	}
	opts.Servers = append(opts.Servers, pluginServers(cfg, log)...)
	opts.LeftOut = leftOut(cfg)
	return opts
}

// leftOut are the servers the config leaves out (an unset variable in
// their env, headers or args), for the proxy's status.
func leftOut(cfg *config.Config) []proxy.LeftOut {
	var out []proxy.LeftOut
	for _, l := range cfg.LeftOut {
		out = append(out, proxy.LeftOut{Name: l.Name, Err: l.Err})
	}
	return out
}

// logLeftOut logs each server the config leaves out: one server's missing
// secret is that server's problem, and the others serve.
func logLeftOut(log *slog.Logger, cfg *config.Config) {
	for _, l := range cfg.LeftOut {
		log.Error("server left out: its config cannot be used until this is fixed; the other servers serve", "upstream", l.Name, "err", l.Err)
	}
}

// oauthOptions are the upstream's OAuth options of s: the service
// credential (the proxy sets the identity of per-identity connections).
func oauthOptions(s config.Server, store *tokenstore.Store) *upstream.OAuth {
	if s.OAuth == nil {
		return nil
	}
	return &upstream.OAuth{Store: store}
}

// exchangeOptions are the token exchange options of s (credentials =
// "exchange"), or nil; the proxy fills in each identity's subject token.
func exchangeOptions(s config.Server) *upstream.Exchange {
	if s.OAuth == nil || !s.OAuth.Exchange {
		return nil
	}
	return &upstream.Exchange{TokenURL: s.OAuth.TokenURL, Audience: s.OAuth.Audience, Resource: s.OAuth.Resource,
		Scopes: s.OAuth.Scopes, ClientID: s.OAuth.ClientID, ClientSecret: s.OAuth.ClientSecret}
}

// identityEnv maps the identities' env tables to KEY=VALUE lists.
func identityEnv(ids map[string]map[string]string) map[string][]string {
	if ids == nil {
		return nil
	}
	out := make(map[string][]string, len(ids))
	for id, env := range ids {
		list := make([]string, 0, len(env))
		for _, k := range slices.Sorted(maps.Keys(env)) {
			list = append(list, k+"="+env[k])
		}
		out[id] = list
	}
	return out
}

// newProxy loads the config and builds the proxy; it starts nothing.
func newProxy(c common, defaultLevel string, waitForClient bool, stderr io.Writer) (*proxy.Server, *config.Config, error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, nil, err
	}
	level := c.logLevel
	if level == "" {
		level = defaultLevel
	}
	if level == "" {
		level = cfg.LogLevel
	}
	// Every secret of the config is hidden in the log, in status reports and
	// in the audit lines.
	red := redact.New(cfg.Secrets...)
	log, err := newLogger(red.Writer(stderr), level, cfg.Telemetry.JSONLogs)
	if err != nil {
		return nil, nil, err
	}
	var reaper *upstream.Reaper
	if exe, err := os.Executable(); err == nil {
		reaper = upstream.NewReaper(exe)
		if !c.oneShot && slices.ContainsFunc(cfg.Servers, func(s config.Server) bool { return s.Command != "" }) {
			// Started now, the reaper's own start (the binary's again)
			// overlaps the rest of the proxy's instead of the first
			// servers', which would start it. A failure is logged at the
			// first server's start.
			go func() { _ = reaper.Start() }()
		}
	}
	opts := proxyOptions(cfg, log)
	opts.Reaper = reaper
	opts.Redactor = red
	opts.WaitForClient = waitForClient
	if err := pinOptions(&opts, cfg, log, !c.oneShot); err != nil {
		return nil, nil, err
	}
	opts.Metrics = cfg.Telemetry.Metrics
	if err := clusterOptions(&opts, cfg, log); err != nil {
		return nil, nil, err
	}
	if cfg.Telemetry.Traces && !c.oneShot {
		tr, err := telemetry.NewTracer(telemetry.TraceOptions{
			Endpoint: cfg.Telemetry.TracesEndpoint, Ratio: cfg.Telemetry.TracesRatio,
			Version: proxy.Version, Log: log,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: telemetry.traces: %w", cfg.Path, err)
		}
		opts.Tracer = tr
	}
	if c.only != "" {
		opts.Servers = serversFor(c.only, opts.Servers)
	}
	if c.oneShot {
		for i := range opts.Servers {
			opts.Servers[i].Upstream.StdinGrace = oneShotStdinGrace
		}
	}
	if c.interactive {
		stepUpOptions(&opts, cfg, stderr)
	}
	if cfg.Audit.Enabled {
		opts.Audit, opts.AuditArguments = stderr, cfg.Audit.Arguments
		if cfg.Audit.File != "" {
			f, err := os.OpenFile(cfg.Audit.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: audit log: %w", cfg.Path, err)
			}
			opts.Audit = f // closed when the process exits
		}
	}
	p, err := proxy.New(opts)
	if err != nil {
		return nil, nil, red.Error(fmt.Errorf("%s: %w", cfg.Path, err))
	}
	// The status file asks for the catalog's size (statusfile.go): made
	// before the settle's release, not just after it.
	_ = relaxGCUntil(p.Ready(), p.Called(), startupSettle, func() { p.CatalogSize() }) // gc.go
	return p, cfg, nil
}

// startProxy builds the proxy and starts the upstreams.
func startProxy(ctx context.Context, c common, defaultLevel string, stderr io.Writer) (*proxy.Server, *config.Config, error) {
	p, cfg, err := newProxy(c, defaultLevel, false, stderr)
	if err != nil {
		return nil, nil, err
	}
	if err := p.Start(ctx); err != nil {
		_ = p.Close()
		return nil, nil, p.Redactor().Error(err)
	}
	return p, cfg, nil
}

// startReady starts the proxy for a one-shot command (quiet logs) and waits
// for every server's first start attempt.
func startReady(ctx context.Context, c common, stderr io.Writer) (*proxy.Server, error) {
	p, _, err := startProxy(ctx, c, levelOneShot, stderr)
	if err != nil {
		return nil, err
	}
	if err := awaitReady(ctx, p, stderr); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// discardEarly stops, once p's servers have first started, the servers
// started early (internal/earlystart) that p did not take.
func discardEarly(ctx context.Context, p *proxy.Server) {
	go func() {
		select {
		case <-p.Ready():
			spawn.Discard()
		case <-ctx.Done():
		}
	}()
}

func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("serve", "serve [--config FILE | FILE] [--http [ADDR]] [--allow-remote [--insecure-no-auth]]", levelFromConfig, stderr, &c)
	httpAddr := fs.String("http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:7777) at /mcp instead of stdio; --http without ADDR listens on the config's [http] listen (default "+config.DefaultListen+")")
	reloadEvery := fs.Duration("watch-interval", time.Second, "how often the config file is checked for changes (it is reloaded on change and on SIGHUP)")
	allowRemote := fs.Bool("allow-remote", false, "allow --http to listen on a non-loopback address; needs [auth] in the config, or --insecure-no-auth")
	insecureNoAuth := fs.Bool("insecure-no-auth", false, "with --allow-remote, serve without authentication (only behind a network you trust)")
	pos, ok, err := parse(fs, bareHTTP(args))
	if !ok {
		return err
	}
	if err := configArg("serve", &c, pos); err != nil {
		return err
	}
	// The servers this process started while it initialised (package
	// internal/earlystart) that the proxy does not take are stopped once
	// its servers have first started, or when it ends: a config it
	// refuses included.
	defer spawn.Discard()
	if *httpAddr != "" {
		p, cfg, err := startProxy(ctx, c, "", stderr)
		if err != nil {
			return err
		}
		defer p.Close()
		if *httpAddr == listenFromConfig {
			*httpAddr = cfg.HTTP.Listen
		}
		warnExposed(p, cfg)
		notes := &notices{}
		defer startPublishing(ctx, p, cfg.Path, "http "+*httpAddr, notes)()
		defer startTrimming(ctx)()
		stopMetrics, err := serveMetrics(ctx, p, cfg, *allowRemote)
		if err != nil {
			return err
		}
		defer stopMetrics()
		return serveHTTP(ctx, p, cfg, *httpAddr, *allowRemote, *insecureNoAuth, *reloadEvery, notes, stderr)
	}
	// stdio: one client. The upstreams are initialized when it initializes,
	// so that they are offered exactly the capabilities it declared (their
	// processes may have started already: internal/earlystart).
	p, cfg, err := newProxy(c, "", true, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	discardEarly(ctx, p)
	warnExposed(p, cfg)
	notes := &notices{}
	go watchConfig(ctx, p, cfg, *reloadEvery, p.Logger(), nil, notes)
	defer startPublishing(ctx, p, cfg.Path, "stdio", notes)()
	defer startTrimming(ctx)()
	if cfg.Telemetry.Metrics && cfg.Telemetry.MetricsListen == "" {
		p.Logger().Warn(`metrics = true serves /metrics on the HTTP listener, and stdio mode has none: nothing serves the metrics. Set metrics = "127.0.0.1:9464" in [telemetry] for a listener of their own`)
	}
	stopMetrics, err := serveMetrics(ctx, p, cfg, false)
	if err != nil {
		return err
	}
	defer stopMetrics()
	served := make(chan error, 1)
	// stdin stays as the client gave it: a blocking read(2), whose thread
	// the kernel wakes when the client writes, answered sooner than the
	// poller's wake-up (BenchmarkFloor/stdio, eight runs of 5 rounds
	// alternated with stdin through the poller: p50 1.29-1.37x against
	// 1.35-1.42x, lower in each pair), and the client's open file
	// description is never changed. stdout goes through the poller
	// (pollable), unless it is the file stdin is (one socket both ways),
	// whose mode it would change under stdin's reads.
	if f, ok := stdout.(*os.File); ok && !sameFile(stdin, f) {
		out, restore := pollable(f)
		defer restore()
		stdout = out
	}
	go func() { served <- p.ServeStdio(ctx, yieldBeforeRead(stdin), stdout) }()
	started := make(chan error, 1)
	go func() { started <- p.Start(ctx) }()
	select {
	case err := <-served:
		return p.Redactor().Error(err)
	case err := <-started:
		if err != nil {
			return p.Redactor().Error(err)
		}
	}
	return p.Redactor().Error(<-served)
}

// listenFromConfig is the value of serve's --http given without an
// address: the config's [http] listen.
const listenFromConfig = "\x00[http] listen"

// bareHTTP returns serve's args with a --http that has no address (the
// last argument, or followed by a flag or by what is not host:port, such
// as the config file) given as --http=listenFromConfig.
func bareHTTP(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if a != "--http" && a != "-http" {
			continue
		}
		if i+1 < len(out) && isAddr(out[i+1]) {
			continue
		}
		out[i] = "--http=" + listenFromConfig
	}
	return out
}

// isAddr reports whether s is a host:port with a numeric port (":7777",
// "127.0.0.1:7777", "[::1]:7777").
func isAddr(s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil || port == "" {
		return false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// warnExposed logs what `manifold check` warns about: credentials written
// out in a config file, and secret files, that other users can read; and a
// config with nothing to serve (an empty file, every server disabled).
func warnExposed(p *proxy.Server, cfg *config.Config) {
	for _, w := range cfg.Warnings() {
		p.Logger().Warn(w)
	}
	logLeftOut(p.Logger(), cfg)
	if len(cfg.Servers) == 0 && len(cfg.Plugins) == 0 {
		p.Logger().Warn(cfg.Path + " lists no server and no plugin that is enabled, so there is nothing to serve; add a [servers.NAME] table (manifold init writes a starter config; manifold import prints your clients' servers as tables)")
	}
}

func serveHTTP(ctx context.Context, p *proxy.Server, cfg *config.Config, addr string, allowRemote, insecureNoAuth bool, reloadEvery time.Duration, notes *notices, stderr io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("--http %q: want HOST:PORT, e.g. 127.0.0.1:7777", addr)
	}
	if ip := net.ParseIP(host); !allowRemote && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError("--http %q is not a loopback address; Manifold listens on loopback only unless --allow-remote is given (with [auth] in the config, or --insecure-no-auth)", addr)
	}
	if err := checkRemote(cfg, allowRemote, insecureNoAuth, host); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	base := ""
	if ip := ln.Addr().(*net.TCPAddr).IP; ip.IsLoopback() {
		base = "http://" + ln.Addr().String() // URL-mode approvals: pages for this machine only
	}
	authn, err := httpAuthenticator(cfg, ln.Addr().String(), p.Logger())
	if err != nil {
		_ = ln.Close()
		return err
	}
	var authOpts proxy.HTTPOptions
	onReload := func(*config.Config) {}
	if authn != nil {
		authOpts.Authenticate, authOpts.Public = authn.Middleware, authn.MetadataHandlers()
		onReload = func(cfg *config.Config) { authn.SetKeys(authKeys(cfg.Auth.APIKeys)) }
	}
	go watchConfig(ctx, p, cfg, reloadEvery, p.Logger(), onReload, notes)
	srv := p.HTTPServer(proxy.HTTPOptions{
		ApprovalBase:    base,
		Authenticate:    authOpts.Authenticate,
		Public:          authOpts.Public,
		AllowedHosts:    cfg.HTTP.AllowedHosts,
		AllowedOrigins:  cfg.HTTP.AllowedOrigins,
		SessionTimeout:  cfg.HTTP.SessionIdleTimeout,
		MaxSessions:     cfg.HTTP.MaxSessions,
		MaxRequestBytes: cfg.HTTP.MaxBodyBytes,
		MaxEventBytes:   int(cfg.HTTP.MaxEventBytes),
		HeaderTimeout:   cfg.HTTP.HeaderTimeout,
		BodyTimeout:     cfg.HTTP.BodyTimeout,
	})
	if cfg.Telemetry.JSONLogs {
		p.Logger().Info(fmt.Sprintf("manifold: serving MCP on http://%s/mcp", ln.Addr()))
	} else {
		fmt.Fprintf(stderr, "manifold: serving MCP on http://%s/mcp\n", ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain(p, srv, cfg.HTTP.DrainGrace)
	return nil
}

// drain stops serving HTTP after SIGTERM (README "Probes and draining"):
// /readyz turns 503 and new work is refused while the listener stays open,
// the requests in flight get up to grace to finish, then the listener and
// the connections close; the caller then stops the upstreams (Close).
func drain(p *proxy.Server, srv *http.Server, grace time.Duration) {
	p.Drain()
	log := p.Logger()
	log.Info("manifold: draining: /readyz answers 503 and new sessions and requests are refused; waiting for the requests in flight",
		"in_flight", p.InFlight(), "parked", p.Parked(), "drain_grace", grace)
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	if err := p.WaitIdle(gctx); err != nil {
		log.Warn("manifold: drain_grace is over with requests still in flight or calls parked; they are cancelled as the servers stop", "in_flight", p.InFlight(), "parked", p.Parked(), "drain_grace", grace)
	}
	cancel()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx) // the listener, and the connections that are idle
	_ = srv.Close()        // the streams still open
	log.Info("manifold: drained; stopping the servers")
}

// serveMetrics serves GET /metrics on [telemetry] metrics = "ADDR", a
// listener of their own (loopback only unless allowRemote), until ctx ends
// or stop is called. With no address it does nothing.
func serveMetrics(ctx context.Context, p *proxy.Server, cfg *config.Config, allowRemote bool) (stop func(), err error) {
	addr := cfg.Telemetry.MetricsListen
	srv := p.MetricsServer(proxy.HTTPOptions{AllowedHosts: cfg.HTTP.AllowedHosts, AllowedOrigins: cfg.HTTP.AllowedOrigins})
	if addr == "" || srv == nil {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: telemetry.metrics %q: want HOST:PORT, e.g. 127.0.0.1:9464", cfg.Path, addr)
	}
	if ip := net.ParseIP(host); !allowRemote && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s: telemetry.metrics %q is not a loopback address; the metrics listener has no authentication, so it listens on loopback only unless serve --http ... --allow-remote is given", cfg.Path, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: telemetry.metrics: listen on %s: %w", cfg.Path, addr, err)
	}
	p.Logger().Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	go func() { _ = srv.Serve(ln) }()
	mctx, cancel := context.WithCancel(ctx)
	go func() {
		<-mctx.Done()
		_ = srv.Close()
	}()
	return cancel, nil
}

func cmdCheck(args []string, stdout, stderr io.Writer) error {
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

// count writes n and the noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func cmdCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("call", "call [--config FILE] [--json] NAME [JSON-ARGUMENTS]", levelOneShot, stderr, &c)
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	switch {
	case len(pos) == 0:
		return argError("call", "no tool name; write manifold call NAME '{\"key\":\"value\"}' (run manifold tools for the names)")
	case len(pos) > 2:
		return argError("call", "%d arguments %q; want the tool name and at most one JSON object of arguments (quote it: '{\"a\":1}')", len(pos), pos)
	}
	name := pos[0]
	var arguments json.RawMessage
	if len(pos) == 2 {
		arguments = json.RawMessage(pos[1])
		var obj map[string]any
		if err := json.Unmarshal(arguments, &obj); err != nil {
			return usageError("call: arguments must be a JSON object, e.g. '{\"path\":\"README.md\"}': %v", err)
		}
	}
	c.oneShot, c.only, c.interactive = true, name, true
	p, err := startReady(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer p.Close()

	// The call travels the same path a client's does: an MCP client talks to
	// the proxy's stdio server over a pair of pipes.
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	serveDone := make(chan error, 1)
	go func() {
		serveDone <- p.ServeStdio(ctx, pr, pw)
		pw.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "manifold-call", Version: version()}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect to the proxy: %w", err)
	}
	params := &mcp.CallToolParams{Name: name}
	if arguments != nil {
		params.Arguments = arguments
	}
	res, err := cs.CallTool(ctx, params)
	if err == nil { // printed at once, before anything stops
		if *asJSON {
			b, merr := json.MarshalIndent(res, "", "  ")
			if merr != nil {
				return merr
			}
			fmt.Fprintln(stdout, string(b))
		} else {
			printResult(stdout, res)
		}
	}
	_ = cs.Close()
	<-serveDone
	if err != nil {
		for _, st := range p.Status() {
			if st.State == proxy.StateMisconfigured && strings.HasPrefix(name, st.Name+"__") {
				err = fmt.Errorf("%w (server %s is left out: %s)", err, st.Name, st.Err)
			}
		}
		return p.Redactor().Error(fmt.Errorf("call %q: %w", name, err))
	}
	if res.IsError {
		return exitError{code: 1, msg: fmt.Sprintf("tool %q returned an error", name)}
	}
	return nil
}

func printResult(w io.Writer, res *mcp.CallToolResult) {
	for _, ct := range res.Content {
		switch ct := ct.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, ct.Text)
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link] %s %s\n", ct.URI, ct.Name)
		case *mcp.EmbeddedResource:
			if ct.Resource != nil {
				fmt.Fprintf(w, "[resource] %s\n%s\n", ct.Resource.URI, ct.Resource.Text)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", ct.MIMEType, len(ct.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", ct.MIMEType, len(ct.Data))
		default:
			b, _ := json.Marshal(ct)
			fmt.Fprintln(w, string(b))
		}
	}
	if res.StructuredContent != nil && len(res.Content) == 0 {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(b))
	}
}

func healthCheck(h *config.Health) *proxy.HealthCheck {
	if h == nil {
		return nil
	}
	return &proxy.HealthCheck{Tool: h.Tool, Arguments: h.Arguments, Resource: h.Resource, Expect: h.Expect,
		Interval: h.Interval, Timeout: h.Timeout, Failures: h.Failures}
}

func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("explain", "explain [--config FILE] [--as IDENTITY [--group NAME]...] NAME|URI...", levelOneShot, stderr, &c)
	as := fs.String("as", "", `decide for this identity, as its HTTP requests are: "user:SUBJECT" (a token's sub), "key:NAME" (an API key of auth.api_keys_file, with its groups) or "group:NAME"`)
	var groups stringList
	fs.Var(&groups, "group", "with --as, a group (or role) the identity is in; repeat for more")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if len(pos) == 0 {
		return argError("explain", "%d arguments %q; want one exposed tool or prompt name, or one resource URI", len(pos), pos)
	}
	if *as == "" && len(groups) > 0 {
		return argError("explain", "--group needs --as: the identity whose groups they are")
	}
	c.oneShot = true
	if len(pos) == 1 {
		c.only = pos[0]
	}
	p, cfg, err := startProxy(ctx, c, levelOneShot, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := awaitReady(ctx, p, stderr); err != nil {
		return err
	}
	var who *policy.Identity
	if *as != "" {
		id, err := explainIdentity(*as, groups, cfg)
		if err != nil {
			return err
		}
		who = &id
	}
	for _, name := range pos {
		var text string
		if who != nil {
			text, err = p.ExplainAs(name, *who)
		} else {
			text, err = p.Explain(name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, text)
	}
	return nil
}

// explainIdentity is the identity of explain --as and --group: a subject, an
// API key of the config's keys file with its groups, or a group, and the
// groups given.
func explainIdentity(as string, groups []string, cfg *config.Config) (policy.Identity, error) {
	p, err := policy.ParsePrincipal(as)
	if err != nil {
		return policy.Identity{}, argError("explain", "--as %v", err)
	}
	var id policy.Identity
	switch p.Kind {
	case policy.PrincipalUser:
		id.User = p.Name
	case policy.PrincipalKey:
		id.Key = p.Name
		found := false
		for _, k := range cfg.Auth.APIKeys {
			if k.Name == p.Name {
				id.Groups, found = slices.Clone(k.Groups), true
			}
		}
		if !found {
			return policy.Identity{}, argError("explain", "--as %s: no API key of that name in auth.api_keys_file (%s); use a key's name from that file", as, cmp.Or(cfg.Auth.APIKeysFile, "not set"))
		}
	case policy.PrincipalGroup:
		id.Groups = []string{p.Name}
	}
	for _, g := range groups {
		gp, err := policy.ParsePrincipal("group:" + g)
		if err != nil {
			return policy.Identity{}, argError("explain", "--group %v", err)
		}
		if !slices.Contains(id.Groups, gp.Name) {
			id.Groups = append(id.Groups, gp.Name)
		}
	}
	return id, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// cacheDir is where servers' catalogs are cached for lazy start:
// $XDG_CACHE_HOME/manifold (~/.cache/manifold); empty if there is no such
// folder, which disables the cache.
func cacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "manifold")
}

// catalogOptions maps the [catalog] table onto the proxy's options.
func catalogOptions(c config.Catalog) proxy.CatalogOptions {
	o := proxy.CatalogOptions{Mode: c.Mode, SearchAbove: c.SearchAbove, Always: c.Always, AlwaysAt: c.AlwaysAt, Encoder: c.Encoder}
	if dir := cacheDir(); dir != "" && c.Encoder {
		o.EncoderCache = filepath.Join(dir, "embed")
	}
	if o.SearchAbove == 0 {
		o.SearchAbove = -1 // search_above = 0: search at any size (the proxy's zero is its default)
	}
	for _, cl := range c.Clients {
		o.Clients = append(o.Clients, proxy.ClientMode{Name: cl.Name, Mode: cl.Mode})
	}
	for _, id := range c.Identities {
		o.Identities = append(o.Identities, proxy.IdentityMode{Who: id.Who, Mode: id.Mode})
	}
	return o
}
