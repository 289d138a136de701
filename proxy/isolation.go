package proxy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// This file gives each downstream session a process of its own for servers
// with ServerConfig.PerSession (isolation = "session"): a server that keeps
// per-client state, or that asks the client for sampling, elicitation or roots
// while several HTTP clients share the proxy, then serves exactly one client.
// The shared process still runs: it provides the catalog (and subscriptions
// and completions).
//
// A 2026-07-28 client over HTTP has no session: each of its requests is one.
// For it a server with isolation = "session" that speaks the initialize era
// runs a process per call (callUpstream), so that the server's sampling,
// elicitation and roots requests during the call belong to that call alone
// and become its input_required rounds; the process stops when the call ends.

// ownConn is a process or connection of a server's own for one key: a
// client session (backend.perSession, this file) or an identity
// (backend.perIdentity, identityconn.go).
type ownConn struct {
	ready chan struct{} // closed when the start ended
	up    *upstream.Upstream
	err   error
	// subject is the caller's latest downstream token, for the token
	// exchange of an identity's connection (credentials = "exchange").
	subject atomic.Pointer[string]
}

// sessionUpstream returns ss's own process of b, starting it on first use
// (bounded by the startup timeout). It returns nil when b is shared or ss is
// the only kind of session there is (stdio). For a server with credentials
// = "identity" it returns the caller's own connection instead.
func (s *Server) sessionUpstream(ctx context.Context, b *backend, ss *mcp.ServerSession) (*upstream.Upstream, error) {
	if b.cfg.PerIdentity { // the caller's own credential (identityconn.go)
		return s.identityUpstream(ctx, b)
	}
	if !b.cfg.PerSession || ss == nil || ss.ID() == "" {
		return nil, nil
	}
	b.ownMu.Lock()
	if st, _, _ := b.Snapshot(); st == stateStopped {
		b.ownMu.Unlock()
		return nil, fmt.Errorf("upstream %q is stopped", b.name)
	}
	if b.perSession == nil {
		b.perSession = make(map[*mcp.ServerSession]*ownConn)
	}
	sp, ok := b.perSession[ss]
	if !ok {
		sp = &ownConn{ready: make(chan struct{})}
		b.perSession[ss] = sp
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runSessionProc(b, ss, sp)
		}()
	}
	b.ownMu.Unlock()
	select {
	case <-sp.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if sp.err != nil {
		return nil, sp.err
	}
	select {
	case <-sp.up.Done(): // it died: the next call starts a new one
		b.ownMu.Lock()
		if b.perSession[ss] == sp {
			delete(b.perSession, ss)
		}
		b.ownMu.Unlock()
		return nil, fmt.Errorf("upstream %q: this session's process exited (%v); retry to start a new one", b.name, sp.up.Err())
	default:
	}
	return sp.up, nil
}

// maxCallProcs bounds the processes of one server run for single calls of
// 2026-07-28 clients at once (callUpstream): each call of such a client costs
// a process, and a client must not be able to start them without end.
const maxCallProcs = 16

// perCall reports whether a call of a modern client on session ss to b
// (whose shared process is up) runs in a process of its own: over HTTP (the
// request has no session) for a server with isolation = "session" that
// speaks the initialize era, whose requests could otherwise not be tied to
// the call.
func (s *Server) perCall(b *backend, ss *mcp.ServerSession, up *upstream.Upstream) bool {
	return b.cfg.PerSession && ss != nil && ss.ID() == "" && !s.opts.WaitForClient && !up.Modern()
}

// callUpstream starts a process of b for one call of the modern client whose
// request is ss, bounded by maxCallProcs. The caller stops it (Close, off the
// goroutine that reads its output) when the call ends; it is also stopped
// with the proxy or the server.
func (s *Server) callUpstream(b *backend, ss *mcp.ServerSession) (*upstream.Upstream, error) {
	b.ownMu.Lock()
	if b.callProcs >= maxCallProcs {
		b.ownMu.Unlock()
		return nil, fmt.Errorf("%d calls of 2026-07-28 clients are running on it, each in a process of its own (isolation = \"session\"); retry when one has ended", maxCallProcs)
	}
	b.callProcs++
	b.ownMu.Unlock()
	release := func() {
		b.ownMu.Lock()
		b.callProcs--
		b.ownMu.Unlock()
	}
	up, err := upstream.Start(s.life, s.procOptions(b, ss, "call"))
	if err != nil {
		release()
		return nil, err
	}
	if ir := up.InitializeResult(); ir != nil {
		s.applyLogLevel(s.life, b, up, ir.Capabilities)
	}
	b.log.Info("started a process for one call of a 2026-07-28 client", "pid", up.PID())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer release()
		select {
		case <-up.Done():
		case <-s.closed:
		case <-b.Quit():
		}
		_ = up.Close()
	}()
	return up, nil
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
	opts.Progress = func(p *mcp.ProgressNotificationParams) { s.progress.forward(b, ss, p) }
	opts.Log = func(p *mcp.LoggingMessageParams) { s.forwardLog(s.life, b, ss, p) } //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
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

// runSessionProc starts ss's process of b and stops it when the session ends.
func (s *Server) runSessionProc(b *backend, ss *mcp.ServerSession, sp *ownConn) {
	opts := s.procOptions(b, ss, "session")
	sp.up, sp.err = upstream.Start(s.life, opts)
	if sp.err == nil {
		// Before the first call: it may log at the level the client set.
		if ir := sp.up.InitializeResult(); ir != nil {
			s.applyLogLevel(s.life, b, sp.up, ir.Capabilities)
		}
	}
	close(sp.ready)
	if sp.err != nil {
		b.ownMu.Lock()
		if b.perSession[ss] == sp {
			delete(b.perSession, ss)
		}
		b.ownMu.Unlock()
		return
	}
	b.log.Info("started a process for one client session", "session", ss.ID(), "pid", sp.up.PID())
	done := make(chan struct{})
	go func() { _ = ss.Wait(); close(done) }()
	select {
	case <-done:
	case <-sp.up.Done():
	case <-s.closed:
	case <-b.Quit():
	}
	_ = sp.up.Close()
	b.ownMu.Lock()
	if b.perSession[ss] == sp {
		delete(b.perSession, ss)
	}
	b.ownMu.Unlock()
}

// closeOwn closes every per-session process and per-identity connection of
// b whose start ended, in parallel, and waits for them.
func (b *backend) closeOwn() {
	b.ownMu.Lock()
	ups := append(started(b.perSession), started(b.perIdentity)...)
	b.ownMu.Unlock()
	var wg sync.WaitGroup
	for _, up := range ups {
		wg.Go(func() { _ = up.Close() })
	}
	wg.Wait()
}

// started returns the upstreams of conns whose start ended with one.
// Called with the backend's ownMu held.
func started[K comparable](conns map[K]*ownConn) []*upstream.Upstream {
	var ups []*upstream.Upstream
	for _, c := range conns {
		select {
		case <-c.ready:
			if c.up != nil {
				ups = append(ups, c.up)
			}
		default:
		}
	}
	return ups
}

// sessionProc returns ss's running process of b, or nil if it has none.
func (b *backend) sessionProc(ss *mcp.ServerSession) *upstream.Upstream {
	b.ownMu.Lock()
	sp := b.perSession[ss]
	b.ownMu.Unlock()
	if sp == nil {
		return nil
	}
	select {
	case <-sp.ready:
		return sp.up
	default:
		return nil
	}
}
