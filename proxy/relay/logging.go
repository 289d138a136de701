//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol (ARCHITECTURE §3 "Protocol versions").

package relay

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// This file holds the MCP logging relay: downstream logging/setLevel goes to
// every upstream, upstream notifications/message come back to the clients with
// the server named in the logger field.

// Logs installs the handler that forwards b's log messages downstream
// (see ForwardLog).
func (s *Relay) Logs(opts *mcp.ClientOptions, b Backend, fixed *mcp.ServerSession) {
	opts.LoggingMessageHandler = func(ctx context.Context, r *mcp.LoggingMessageRequest) {
		s.ForwardLog(ctx, b, fixed, r.Params)
	}
}

// ForwardLog relays an upstream's log message, naming the server in the
// logger field, to exactly one downstream session: fixed, for a session's own
// process (isolation = "session"); the one client, over stdio or while only
// one session is connected; else the one session with calls in flight on b.
// With several sessions and not exactly one of them busy on b the message
// cannot be attributed, so it goes to the proxy's log only: one client never
// sees what the server said during another's call.
func (s *Relay) ForwardLog(ctx context.Context, b Backend, fixed *mcp.ServerSession, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	fwd := *p
	fwd.Logger = b.Name()
	if p.Logger != "" {
		fwd.Logger = b.Name() + "/" + p.Logger
	}
	ss := fixed
	if ss == nil {
		ss = s.logTarget(b)
	}
	if ss == nil {
		b.Log().Debug("log message not relayed: it cannot be attributed to one client session", "level", p.Level, "logger", fwd.Logger)
		return
	}
	lctx, done := relayContext(ctx, b.CallOf(ss))
	defer done()
	_ = ss.Log(lctx, &fwd)
}

// logTarget is the session a shared process's log message goes to, or nil.
func (s *Relay) logTarget(b Backend) *mcp.ServerSession {
	var all []*mcp.ServerSession
	for ss := range s.opts.Sessions() {
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

// SetLogLevel applies a downstream logging/setLevel to every running
// shared upstream that declared logging, and to the calling session's own
// processes (isolation = "session").
func (s *Relay) SetLogLevel(ctx context.Context, req mcp.Request) {
	p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
	if !ok || p == nil {
		return
	}
	// Servers that start (or restart) later get the level too.
	lvl := string(p.Level)
	s.logLevel.Store(&lvl)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	var wg sync.WaitGroup
	for b := range s.opts.Backends() {
		// A process still in its start (listing, its catalog advertised
		// from the cache meanwhile) gets it too: its start read the level
		// before this stored it, or this sees its process (b.up is set
		// before the start reads the level: ApplyLogLevel).
		st, up, caps := b.Conn()
		if caps == nil || caps.Logging == nil {
			continue
		}
		ups := []*upstream.Upstream{}
		if up != nil && (st == supervise.StateUp || st == supervise.StateStarting || st == supervise.StateRestarting) {
			ups = append(ups, up)
		}
		if own := b.SessionProc(ss); ss != nil && own != nil {
			ups = append(ups, own)
		}
		for _, up := range ups {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
				defer cancel()
				// A modern server has no logging/setLevel: the level goes in
				// the _meta of its later requests instead.
				if err := up.SetLogLevel(cctx, p.Level); err != nil {
					b.Log().Warn("logging/setLevel failed", "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// ApplyLogLevel gives a server that just came up the level the client set.
func (s *Relay) ApplyLogLevel(ctx context.Context, b Backend, up *upstream.Upstream, caps *mcp.ServerCapabilities) {
	lvl := s.logLevel.Load()
	if lvl == nil || caps == nil || caps.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
	defer cancel()
	if err := up.SetLogLevel(ctx, mcp.LoggingLevel(*lvl)); err != nil {
		b.Log().Warn("logging/setLevel failed", "err", err)
	}
}
