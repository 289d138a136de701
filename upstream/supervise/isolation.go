package supervise

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
//
// Whether a call takes such a process is the proxy's to decide; this file
// keeps the processes: started on first use (Hooks.ProcOptions says how),
// one per session, stopped with the session, the server or the proxy.

// ownConn is a process or connection of a server's own for one key: a
// client session (Backend.perSession, this file) or an identity
// (Backend.perIdentity, identity.go).
type ownConn struct {
	ready chan struct{} // closed when the start ended
	up    *upstream.Upstream
	err   error
	// subject is the caller's latest downstream token, for the token
	// exchange of an identity's connection (credentials = "exchange").
	subject atomic.Pointer[string]
}

// SessionUpstream returns ss's own process of b, starting it on first use
// (bounded by the startup timeout).
func (b *Backend) SessionUpstream(ctx context.Context, ss *mcp.ServerSession) (*upstream.Upstream, error) {
	b.mu.Lock()
	if b.state == StateStopped {
		b.mu.Unlock()
		return nil, fmt.Errorf("upstream %q is stopped", b.name)
	}
	if b.perSession == nil {
		b.perSession = make(map[*mcp.ServerSession]*ownConn)
	}
	sp, ok := b.perSession[ss]
	if !ok {
		sp = &ownConn{ready: make(chan struct{})}
		b.perSession[ss] = sp
		b.rt.WG.Add(1)
		go func() {
			defer b.rt.WG.Done()
			b.runSessionProc(ss, sp)
		}()
	}
	b.mu.Unlock()
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
		b.mu.Lock()
		if b.perSession[ss] == sp {
			delete(b.perSession, ss)
		}
		b.mu.Unlock()
		return nil, fmt.Errorf("upstream %q: this session's process exited (%v); retry to start a new one", b.name, sp.up.Err())
	default:
	}
	return sp.up, nil
}

// maxCallProcs bounds the processes of one server run for single calls of
// 2026-07-28 clients at once (CallUpstream): each call of such a client costs
// a process, and a client must not be able to start them without end.
const maxCallProcs = 16

// CallUpstream starts a process of b for one call of the modern client whose
// request is ss, bounded by maxCallProcs. The caller stops it (Close, off the
// goroutine that reads its output) when the call ends; it is also stopped
// with the proxy or the server.
func (b *Backend) CallUpstream(ss *mcp.ServerSession) (*upstream.Upstream, error) {
	b.mu.Lock()
	if b.callProcs >= maxCallProcs {
		b.mu.Unlock()
		return nil, fmt.Errorf("%d calls of 2026-07-28 clients are running on it, each in a process of its own (isolation = \"session\"); retry when one has ended", maxCallProcs)
	}
	b.callProcs++
	b.mu.Unlock()
	release := func() {
		b.mu.Lock()
		b.callProcs--
		b.mu.Unlock()
	}
	up, err := upstream.Start(b.rt.Life, b.procOptions(ss, "call"))
	if err != nil {
		release()
		return nil, err
	}
	if ir := up.InitializeResult(); ir != nil {
		b.connected(up, ir.Capabilities)
	}
	b.log.Info("started a process for one call of a 2026-07-28 client", "pid", up.PID())
	b.rt.WG.Add(1)
	go func() {
		defer b.rt.WG.Done()
		defer release()
		select {
		case <-up.Done():
		case <-b.rt.Closed:
		case <-b.quit:
		}
		_ = up.Close()
	}()
	return up, nil
}

// procOptions are the options of b's own process for ss: a session's
// (kind "session") or a single call's ("call").
func (b *Backend) procOptions(ss *mcp.ServerSession, kind string) upstream.Options {
	if b.hooks.ProcOptions == nil {
		return b.cfg.Upstream
	}
	return b.hooks.ProcOptions(ss, kind)
}

// connected runs Hooks.Connected for a process of b's own.
func (b *Backend) connected(up *upstream.Upstream, caps *mcp.ServerCapabilities) {
	if b.hooks.Connected != nil {
		b.hooks.Connected(b.rt.Life, up, caps)
	}
}

// runSessionProc starts ss's process of b and stops it when the session ends.
func (b *Backend) runSessionProc(ss *mcp.ServerSession, sp *ownConn) {
	opts := b.procOptions(ss, "session")
	sp.up, sp.err = upstream.Start(b.rt.Life, opts)
	if sp.err == nil {
		// Before the first call: it may log at the level the client set.
		if ir := sp.up.InitializeResult(); ir != nil {
			b.connected(sp.up, ir.Capabilities)
		}
	}
	close(sp.ready)
	if sp.err != nil {
		b.mu.Lock()
		if b.perSession[ss] == sp {
			delete(b.perSession, ss)
		}
		b.mu.Unlock()
		return
	}
	b.log.Info("started a process for one client session", "session", ss.ID(), "pid", sp.up.PID())
	done := make(chan struct{})
	go func() { _ = ss.Wait(); close(done) }()
	select {
	case <-done:
	case <-sp.up.Done():
	case <-b.rt.Closed:
	case <-b.quit:
	}
	_ = sp.up.Close()
	b.mu.Lock()
	if b.perSession[ss] == sp {
		delete(b.perSession, ss)
	}
	b.mu.Unlock()
}

// closeOwn closes every per-session process and per-identity connection of
// b whose start ended, in parallel, and waits for them.
func (b *Backend) closeOwn() {
	b.mu.Lock()
	ups := append(started(b.perSession), started(b.perIdentity)...)
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, up := range ups {
		wg.Go(func() { _ = up.Close() })
	}
	wg.Wait()
}

// started returns the upstreams of conns whose start ended with one.
// Called with the backend's mu held.
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

// SessionProc returns ss's running process of b, or nil if it has none.
func (b *Backend) SessionProc(ss *mcp.ServerSession) *upstream.Upstream {
	b.mu.Lock()
	sp := b.perSession[ss]
	b.mu.Unlock()
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
