//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol (ARCHITECTURE §3 "Protocol versions").

package proxy

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// relayLogs installs the handler that forwards b's log messages downstream:
// to fixed only, for a session's own process (isolation = "session"), else
// to every session.
func (s *Server) relayLogs(opts *mcp.ClientOptions, b *backend, fixed *mcp.ServerSession) {
	opts.LoggingMessageHandler = func(ctx context.Context, r *mcp.LoggingMessageRequest) {
		s.forwardLog(ctx, b, fixed, r.Params)
	}
}

// forwardLog relays an upstream's log message to the downstream sessions,
// naming the server in the logger field.
func (s *Server) forwardLog(ctx context.Context, b *backend, fixed *mcp.ServerSession, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	fwd := *p
	fwd.Logger = b.name
	if p.Logger != "" {
		fwd.Logger = b.name + "/" + p.Logger
	}
	if fixed != nil {
		_ = fixed.Log(ctx, &fwd)
		return
	}
	for ss := range s.server.Sessions() {
		_ = ss.Log(ctx, &fwd)
	}
}

// setUpstreamLogLevel applies a downstream logging/setLevel to every running
// upstream that declared logging.
func (s *Server) setUpstreamLogLevel(ctx context.Context, req mcp.Request) {
	p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
	if !ok || p == nil {
		return
	}
	// Servers that start (or restart) later get the level too.
	lvl := string(p.Level)
	s.logLevel.Store(&lvl)
	var wg sync.WaitGroup
	for _, b := range s.gen.Load().backends {
		st, up, _ := b.snapshot()
		if st != stateUp || up == nil || b.caps == nil || b.caps.Logging == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
			defer cancel()
			if err := up.Session().SetLoggingLevel(cctx, p); err != nil {
				b.log.Warn("logging/setLevel failed", "err", err)
			}
		}()
	}
	wg.Wait()
}

// applyLogLevel gives a server that just came up the level the client set.
func (s *Server) applyLogLevel(ctx context.Context, b *backend, cs *mcp.ClientSession, caps *mcp.ServerCapabilities) {
	lvl := s.logLevel.Load()
	if lvl == nil || caps == nil || caps.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(*lvl)}); err != nil {
		b.log.Warn("logging/setLevel failed", "err", err)
	}
}
