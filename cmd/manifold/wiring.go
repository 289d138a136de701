package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/manifold-mcp/manifold/internal/cluster"
	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/internal/tokenstore"
	"github.com/manifold-mcp/manifold/plugins"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/proxy/pin"
	"github.com/manifold-mcp/manifold/upstream"
)

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

func healthCheck(h *config.Health) *proxy.HealthCheck {
	if h == nil {
		return nil
	}
	return &proxy.HealthCheck{Tool: h.Tool, Arguments: h.Arguments, Resource: h.Resource, Expect: h.Expect,
		Interval: h.Interval, Timeout: h.Timeout, Failures: h.Failures}
}

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

// clusterStore returns the shared store of the config's [cluster] table,
// nil without one.
func clusterStore(cfg *config.Config, log *slog.Logger) (*cluster.Store, error) {
	cl := cfg.Cluster
	if cl.Redis == "" {
		return nil, nil
	}
	st, err := cluster.New(cluster.Options{URL: cl.Redis, KeyPrefix: cl.KeyPrefix, FailOpen: cl.FailOpen, Timeout: cl.Timeout, Logger: log,
		Key: []byte(cl.Key), MaxAnswerBytes: int(cfg.HTTP.MaxBodyBytes)})
	if err != nil {
		return nil, fmt.Errorf("%s: [cluster]: %w", cfg.Path, err)
	}
	return st, nil
}

// clusterOptions shares the rate limits, spend caps and approve-call's
// approvals on the config's [cluster] Redis, if it has one. The store lives
// as long as the process; [cluster] is read at start only (a reload keeps
// it, and says that a restart is needed: restartNeeded). A Redis that does not answer at start is logged, not fatal: the
// fail mode (on_error) applies until it does.
func clusterOptions(opts *proxy.Options, cfg *config.Config, log *slog.Logger) error {
	st, err := clusterStore(cfg, log)
	if err != nil || st == nil {
		return err
	}
	_ = st.Ping(context.Background()) // logs an outage itself
	opts.RateStore, opts.SpendLedger, opts.Approvals, opts.Sessions = st, st, st, st
	if cfg.Cluster.Key != "" {
		opts.Answers = st // answers.go: a legacy client's answer reaches the replica that asked
		opts.Retries = st // retries.go: a 2026-07-28 retry reaches the replica that holds the call
	}
	return nil
}

// stateKey is the key that seals requestState: [cluster] key, which every
// replica shares, or [protocol] state_key_file; nil (a random key of this
// process) without either.
func stateKey(cfg *config.Config) []byte {
	if cfg.Cluster.Key != "" {
		return []byte(cfg.Cluster.Key)
	}
	return cfg.Protocol.StateKey
}

// pluginServers maps the config's plugins onto upstreams that the proxy
// dials in-process: each plugin's tools reach the proxy through the same path
// as a server's. A plugin runs in the config's folder. log may be nil.
func pluginServers(cfg *config.Config, log *slog.Logger) []proxy.ServerConfig {
	out := make([]proxy.ServerConfig, 0, len(cfg.Plugins))
	for _, p := range cfg.Plugins {
		env := make([]string, 0, len(p.Env))
		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			env = append(env, k+"="+p.Env[k])
		}
		host := plugins.NewHost(plugins.Options{
			Name:    p.Name,
			Command: p.Command,
			Args:    p.Args,
			Env:     env,
			Dir:     cfg.Dir,
			SHA256:  p.SHA256,
			Logger:  log,
		})
		out = append(out, proxy.ServerConfig{
			Upstream: upstream.Options{
				Name:           p.Name,
				Dial:           host.Dial,
				StartupTimeout: p.StartupTimeout,
			},
			Prefix:      p.Prefix,
			Required:    p.Required,
			CallTimeout: p.CallTimeout,
			// A reload keeps a plugin whose config did not change running.
			Fingerprint: fmt.Sprintf("plugin %+v", p),
		})
	}
	return out
}

// pinOptions sets the proxy's pin options from cfg (each server's mode is
// set by proxyOptions; plugins are not pinned): the lock, and (when record) the recording of definitions trusted on first
// use in the lock file.
func pinOptions(opts *proxy.Options, cfg *config.Config, log *slog.Logger, record bool) error {
	lock, err := readLock(cfg.LockFile)
	if err != nil {
		return err
	}
	opts.Lock = lock
	if record && cfg.LockFile == "" && pinning(cfg) {
		log.Warn("pinned definitions: the config came through a pipe, which has no lock file of its own; definitions trusted on first use are trusted by this process only. Set lock_file in the config to keep them", "config", cfg.Path)
		record = false
	}
	if record {
		path := cfg.LockFile
		opts.OnTrust = func(entries []pin.Entry) {
			if err := writeLock(path, entries); err != nil {
				log.Error("pinned definitions: cannot record the definitions trusted on first use; they are trusted by this process only", "file", path, "err", err)
			}
		}
	}
	return nil
}

func pinMode(m string) proxy.PinMode {
	switch m {
	case config.PinQuarantine:
		return proxy.PinQuarantine
	case config.PinWarn:
		return proxy.PinWarn
	}
	return proxy.PinOff
}

// stepUpTimeout bounds the browser step of a step-up in manifold call or
// tools.
const stepUpTimeout = 5 * time.Minute

// stepUpOptions lets each OAuth server of opts run a new login, on stderr,
// when it answers 403 insufficient_scope (see upstream.OAuth.StepUp).
func stepUpOptions(opts *proxy.Options, cfg *config.Config, stderr io.Writer) {
	byName := make(map[string]config.Server, len(cfg.Servers))
	for _, s := range cfg.Servers {
		byName[s.Name] = s
	}
	for i := range opts.Servers {
		o := opts.Servers[i].Upstream.OAuth
		s, ok := byName[opts.Servers[i].Upstream.Name]
		if o == nil || !ok || s.OAuth == nil || o.Store == nil {
			continue
		}
		oc := *o
		oc.StepUp = func(ctx context.Context, identity string, scopes []string) error {
			fmt.Fprintf(stderr, "%q asks for more scope (%s); logging in again.\n", s.Name, strings.Join(scopes, " "))
			return upstream.Login(ctx, loginOptions(s, identity, oc.Store, stepUpTimeout, scopes, stderr))
		}
		opts.Servers[i].Upstream.OAuth = &oc
	}
}

// serversFor keeps, of the servers, those that can own name, the tool,
// prompt or resource URI a one-shot command is about: the ones whose prefix
// it starts with (PREFIX__ for a name, the URI prefix and "+" for a URI), and
// the unprefixed ones. When no server's prefix matches, all are kept, so
// that an unknown name is reported against the whole catalog.
func serversFor(name string, servers []proxy.ServerConfig) []proxy.ServerConfig {
	var keep []proxy.ServerConfig
	matched := false
	for _, s := range servers {
		switch {
		case s.Prefix == "":
			keep = append(keep, s)
		case strings.HasPrefix(name, s.Prefix+"__") || strings.HasPrefix(name, config.URIPrefix(s.Prefix)+"+"):
			keep = append(keep, s)
			matched = true
		}
	}
	if !matched {
		return servers
	}
	return keep
}

// oneShotStdinGrace is how long a one-shot command, whose answer is
// printed, gives a server to exit after its stdin closes before SIGTERM
// (then the usual grace before SIGKILL). Servers that exit when their input
// ends do so within it; those that ignore it (server-everything) made every
// one-shot command wait the full grace.
const oneShotStdinGrace = 300 * time.Millisecond
