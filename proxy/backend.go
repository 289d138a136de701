package proxy

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// A backend's lifecycle states (supervise.State).
const (
	stateStarting   = supervise.StateStarting
	stateUp         = supervise.StateUp
	stateRestarting = supervise.StateRestarting
	stateIdle       = supervise.StateIdle
	stateStopped    = supervise.StateStopped
)

// listKind names one of the four lists an upstream serves (supervise.ListKind).
type listKind = supervise.ListKind

const (
	kindTools     = supervise.KindTools
	kindPrompts   = supervise.KindPrompts
	kindResources = supervise.KindResources
	kindTemplates = supervise.KindTemplates
)

// lists is an upstream's last successful listing.
type lists struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// listsOf is l as the catalog reads it.
func listsOf(l supervise.Lists) lists {
	return lists{tools: l.Tools, prompts: l.Prompts, resources: l.Resources, templates: l.Templates}
}

// supervised is l as supervise keeps it.
func (l lists) supervised() supervise.Lists {
	return supervise.Lists{Tools: l.tools, Prompts: l.prompts, Resources: l.resources, Templates: l.templates}
}

// RestartPolicy says how a server that exits is restarted
// (supervise.RestartPolicy).
type RestartPolicy = supervise.RestartPolicy

// backend is one configured upstream: its supervision (the embedded
// supervise.Backend: state, connection, lists) and what the proxy keeps of
// it besides.
type backend struct {
	*supervise.Backend
	cfg  ServerConfig
	name string
	log  *slog.Logger

	capsJSON era.CapsMemo // the capabilities declared to it for a call (era.UpstreamCaps)
}

// newBackend returns the backend of the server sc (CallTimeout already
// defaulted), supervised with the proxy's hooks.
func (s *Server) newBackend(name string, sc ServerConfig) *backend {
	b := &backend{cfg: sc, name: name, log: s.log.With("upstream", name)}
	cfg := supervise.Config{Upstream: sc.Upstream, Required: sc.Required, CallTimeout: sc.CallTimeout,
		Restart: sc.Restart, Health: sc.Health, PerSession: sc.PerSession, PerIdentity: sc.PerIdentity,
		Lazy: sc.Lazy, IdleTimeout: sc.IdleTimeout}
	if s.opts.CacheDir != "" {
		cfg.CacheKey = fingerprint(sc)
	}
	rt := supervise.Runtime{Life: s.run.life, Closed: s.run.closed, WG: &s.run.wg, CacheDir: s.opts.CacheDir}
	b.Backend = supervise.New(name, cfg, b.log, rt, supervise.Hooks{
		Options: func(opts *upstream.Options) { s.sharedOptions(b, opts) },
		ProcOptions: func(ss *mcp.ServerSession, kind string) upstream.Options {
			return s.procOptions(b, ss, kind)
		},
		IdentityOptions: func(who string, subject func() string) upstream.Options {
			return s.identityOptions(b, who, subject)
		},
		Connected: func(ctx context.Context, up *upstream.Upstream, caps *mcp.ServerCapabilities) {
			s.relay.ApplyLogLevel(ctx, b, up, caps)
		},
		Up: func(ctx context.Context, up *upstream.Upstream, changed bool) {
			if changed { // else the catalog in force was built from what it listed
				s.rebuild()
			}
			s.relay.Resubscribe(ctx, b, up.Session())
		},
		Adopted: s.rebuild,
		ListChanged: func(kinds listKind) {
			s.rebuild()
			s.relayListChanged(b, kinds)
		},
	})
	return b
}

// eraCacheMaxAge is how long a server's cached era is trusted across runs:
// a server upgraded in place (npx pkg@latest) that became modern is probed
// again within a day. (One that is no longer modern falls back at once.)
const eraCacheMaxAge = 24 * time.Hour

// newEraCache keeps the servers' eras in dir/eras.json, or only in memory
// when dir is empty.
func newEraCache(dir string, log *slog.Logger) *upstream.EraCache {
	if dir == "" {
		return upstream.NewEraCache()
	}
	return upstream.NewEraCacheFile(filepath.Join(dir, "eras.json"), eraCacheMaxAge, log)
}

// sharedOptions completes the options of a start of b's shared connection.
func (s *Server) sharedOptions(b *backend, opts *upstream.Options) {
	opts.Logger = s.log
	opts.ClientInfo = &mcp.Implementation{Name: "manifold", Version: Version}
	opts.Client, opts.Middleware = s.clientOptions(b, nil)
	opts.Progress = func(p *mcp.ProgressNotificationParams) { s.relay.ForwardProgress(b, nil, p) }
	opts.Log = func(p *mcp.LoggingMessageParams) { s.relay.ForwardLog(s.run.life, b, nil, p) } //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	if opts.Reaper == nil {
		opts.Reaper = s.opts.Reaper
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = s.opts.MaxMessageBytes
	}
	if opts.Eras == nil {
		opts.Eras = s.eras
	}
	// A server that speaks both eras is spoken to in the era of the one
	// stdio client. Over HTTP the shared process serves everyone in the
	// initialize era, in which such a server's requests reach its one
	// caller (relay.go callerFor) whether it sends them itself or returns
	// input_required (the SDK sends those for it), and a 2026-07-28
	// client's calls are bridged (proxy/bridge); the shared process of a server
	// whose calls run elsewhere (isolation = "session", credentials =
	// "identity") speaks 2026-07-28, whose input requests are tied to the
	// call that asks.
	if s.opts.WaitForClient {
		opts.PreferLegacy = !s.client.clientModern.Load()
	} else {
		opts.PreferLegacy = !b.PerSession() && !b.PerIdentity()
	}
}

func (s *Server) isClosed() bool {
	select {
	case <-s.run.closed:
		return true
	default:
		return false
	}
}

// clientOptions builds the MCP client handlers for one upstream: they close over
// the backend so every notification is attributed to its server.
func (s *Server) clientOptions(b *backend, fixed *mcp.ServerSession) (*mcp.ClientOptions, []mcp.Middleware) {
	if fixed != nil { // a session's own process: lists come from the shared one
		opts := &mcp.ClientOptions{
			KeepAlive:                 30 * time.Second,
			KeepAliveFailureThreshold: 3,
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				s.relay.ForwardProgress(b, fixed, r.Params)
			},
		}
		s.relay.Logs(opts, b, fixed)
		return opts, s.relay.Offer(opts, b, fixed)
	}
	opts := &mcp.ClientOptions{
		// A server that stops answering pings is closed, and so restarted.
		KeepAlive:                 30 * time.Second,
		KeepAliveFailureThreshold: 3,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			b.RequestRefresh(kindTools)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			b.RequestRefresh(kindPrompts)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			b.RequestRefresh(kindResources | kindTemplates)
		},
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			s.resourceUpdated(ctx, b, r.Params.URI)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.relay.ForwardProgress(b, nil, r.Params)
		},
	}
	s.relay.Logs(opts, b, nil)
	mw := s.relay.Offer(opts, b, nil)
	return opts, mw
}
