//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol (ARCHITECTURE §3 "Protocol versions").

package proxy

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// This file holds the MCP logging relay: downstream logging/setLevel goes to
// every upstream, upstream notifications/message come back to the clients with
// the server named in the logger field.

// serverCapabilities are the capabilities the proxy declares downstream,
// explicitly, because the catalog changes while the proxy runs: tools,
// resources with subscribe, prompts (all with listChanged), completions and
// logging.
func serverCapabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Completions: &mcp.CompletionCapabilities{},
		Logging:     &mcp.LoggingCapabilities{},
	}
}

// relayLogs installs the handler that forwards b's log messages downstream
// (see forwardLog).
func (s *Server) relayLogs(opts *mcp.ClientOptions, b *backend, fixed *mcp.ServerSession) {
	opts.LoggingMessageHandler = func(ctx context.Context, r *mcp.LoggingMessageRequest) {
		s.forwardLog(ctx, b, fixed, r.Params)
	}
}

// forwardLog relays an upstream's log message, naming the server in the
// logger field, to exactly one downstream session: fixed, for a session's own
// process (isolation = "session"); the one client, over stdio or while only
// one session is connected; else the one session with calls in flight on b.
// With several sessions and not exactly one of them busy on b the message
// cannot be attributed, so it goes to the proxy's log only: one client never
// sees what the server said during another's call.
func (s *Server) forwardLog(ctx context.Context, b *backend, fixed *mcp.ServerSession, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	fwd := *p
	fwd.Logger = b.name
	if p.Logger != "" {
		fwd.Logger = b.name + "/" + p.Logger
	}
	ss := fixed
	if ss == nil {
		ss = s.logTarget(b)
	}
	if ss == nil {
		b.log.Debug("log message not relayed: it cannot be attributed to one client session", "level", p.Level, "logger", fwd.Logger)
		return
	}
	lctx, done := relayContext(ctx, b.CallOf(ss))
	defer done()
	_ = ss.Log(lctx, &fwd)
}

// logTarget is the session a shared process's log message goes to, or nil.
func (s *Server) logTarget(b *backend) *mcp.ServerSession {
	var all []*mcp.ServerSession
	for ss := range s.server.Sessions() {
		if ss.InitializeParams() != nil {
			all = append(all, ss)
		}
	}
	busy := b.BusySessions()
	if len(all) == 1 && (len(busy) == 0 || len(busy) == 1 && busy[0] == all[0]) {
		return all[0]
	}
	if len(busy) == 1 && busy[0] != nil { // nil: a call without a session
		return busy[0]
	}
	return nil
}

// setUpstreamLogLevel applies a downstream logging/setLevel to every running
// shared upstream that declared logging, and to the calling session's own
// processes (isolation = "session").
func (s *Server) setUpstreamLogLevel(ctx context.Context, req mcp.Request) {
	p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
	if !ok || p == nil {
		return
	}
	// Servers that start (or restart) later get the level too.
	lvl := string(p.Level)
	s.logLevel.Store(&lvl)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	var wg sync.WaitGroup
	for _, b := range s.gen.Load().backends {
		// A process still in its start (listing, its catalog advertised
		// from the cache meanwhile) gets it too: its start read the level
		// before this stored it, or this sees its process (b.up is set
		// before the start reads the level: applyLogLevel).
		st, up, caps := b.Conn()
		if caps == nil || caps.Logging == nil {
			continue
		}
		ups := []*upstream.Upstream{}
		if up != nil && (st == stateUp || st == stateStarting || st == stateRestarting) {
			ups = append(ups, up)
		}
		if own := b.SessionProc(ss); ss != nil && own != nil {
			ups = append(ups, own)
		}
		for _, up := range ups {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
				defer cancel()
				// A modern server has no logging/setLevel: the level goes in
				// the _meta of its later requests instead.
				if err := up.SetLogLevel(cctx, p.Level); err != nil {
					b.log.Warn("logging/setLevel failed", "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// applyLogLevel gives a server that just came up the level the client set.
func (s *Server) applyLogLevel(ctx context.Context, b *backend, up *upstream.Upstream, caps *mcp.ServerCapabilities) {
	lvl := s.logLevel.Load()
	if lvl == nil || caps == nil || caps.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	if err := up.SetLogLevel(ctx, mcp.LoggingLevel(*lvl)); err != nil {
		b.log.Warn("logging/setLevel failed", "err", err)
	}
}
