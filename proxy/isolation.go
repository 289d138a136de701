package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// This file decides which downstream sessions and calls get a process of
// their own of a server with ServerConfig.PerSession (isolation =
// "session"), and says how to start one; upstream/supervise keeps the
// processes (its isolation.go).

// sessionUpstream returns ss's own process of b, starting it on first use
// (bounded by the startup timeout). It returns nil when b is shared or ss is
// the only kind of session there is (stdio). For a server with credentials
// = "identity" it returns the caller's own connection instead.
func (s *Server) sessionUpstream(ctx context.Context, b *backend, ss *mcp.ServerSession) (*upstream.Upstream, error) {
	if b.PerIdentity() { // the caller's own credential (identityconn.go)
		return s.identityUpstream(ctx, b)
	}
	if !b.PerSession() || ss == nil || ss.ID() == "" {
		return nil, nil
	}
	return b.SessionUpstream(ctx, ss)
}

// procOptions are the options of b's own process for ss: a session's
// (kind "session") or a single call's ("call").
func (s *Server) procOptions(b *backend, ss *mcp.ServerSession, kind string) upstream.Options {
	opts := b.cfg.Upstream
	if kind == "session" {
		opts.Logger = s.log.With("session", ss.ID())
	} else {
		opts.Logger = s.log.With("process", "one call")
	}
	opts.ClientInfo = &mcp.Implementation{Name: "manifold", Version: Version}
	opts.Client, opts.Middleware = s.clientOptions(b, ss)
	opts.Progress = func(p *mcp.ProgressNotificationParams) { s.relay.ForwardProgress(b, ss, p) }
	opts.Log = func(p *mcp.LoggingMessageParams) { s.relay.ForwardLog(s.run.life, b, ss, p) } //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	if opts.Reaper == nil {
		opts.Reaper = s.opts.Reaper
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = s.opts.MaxMessageBytes
	}
	if opts.Eras == nil {
		opts.Eras = s.eras
	}
	// The session's own era, from a server that speaks both (a process of
	// its own exists only for initialize-era sessions, and for the calls of
	// modern clients to initialize-era servers).
	opts.PreferLegacy = kind == "call" || !modernSession(ss)
	return opts
}
