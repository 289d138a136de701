package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/spawn"
	"github.com/manifold-mcp/manifold/proxy"
)

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
