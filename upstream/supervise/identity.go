package supervise

import (
	"context"
	"fmt"

	"github.com/manifold-mcp/manifold/upstream"
)

// This file keeps each caller's own connection of a server whose calls
// carry the caller's credential (credentials = "identity", or isolation =
// "identity" for a stdio server): one per identity, connected on first
// use (Hooks.IdentityOptions says how), closed when it ends, when its
// credential is no good (ForgetIdentity), or with the server or the proxy.

// maxIdentityConns bounds the identity connections of one server.
const maxIdentityConns = 256

// IdentityUpstream returns the connection of b that carries the credential
// of who, connecting on first use. subject is the caller's latest
// downstream token ("" for none), for the exchange of the connection's next
// upstream token (credentials = "exchange").
func (b *Backend) IdentityUpstream(ctx context.Context, who, subject string) (*upstream.Upstream, error) {
	b.mu.Lock()
	if b.state == StateStopped {
		b.mu.Unlock()
		return nil, fmt.Errorf("upstream %q is stopped", b.name)
	}
	if b.perIdentity == nil {
		b.perIdentity = make(map[string]*ownConn)
	}
	ic, ok := b.perIdentity[who]
	if !ok {
		if len(b.perIdentity) >= maxIdentityConns {
			b.mu.Unlock()
			return nil, fmt.Errorf("upstream %q has connections for %d identities, the most it keeps; retry later", b.name, maxIdentityConns)
		}
		ic = &ownConn{ready: make(chan struct{})}
		b.perIdentity[who] = ic
		ic.setSubject(subject)
		b.rt.WG.Add(1)
		go func() {
			defer b.rt.WG.Done()
			b.runIdentityConn(who, ic)
		}()
	}
	b.mu.Unlock()
	ic.setSubject(subject)
	select {
	case <-ic.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ic.err != nil {
		return nil, ic.err
	}
	select {
	case <-ic.up.Done(): // it ended: the next call connects again
		b.dropIdentity(who, ic)
		return nil, fmt.Errorf("upstream %q: the connection for %s ended (%v); retry to connect again", b.name, who, ic.up.Err())
	default:
	}
	return ic.up, nil
}

// setSubject keeps the caller's downstream token tok ("" for none) for the
// exchange of the connection's next upstream token.
func (ic *ownConn) setSubject(tok string) {
	if tok != "" {
		ic.subject.Store(&tok)
	}
}

func (ic *ownConn) currentSubject() string {
	if p := ic.subject.Load(); p != nil {
		return *p
	}
	return ""
}

// ForgetIdentity drops who's connection, when an error said its credential
// is no good: the next call reads the store again (a new login).
func (b *Backend) ForgetIdentity(who string) {
	b.mu.Lock()
	ic := b.perIdentity[who]
	b.mu.Unlock()
	if ic == nil {
		return
	}
	b.dropIdentity(who, ic)
	select {
	case <-ic.ready:
		if ic.up != nil {
			go func() { _ = ic.up.Close() }()
		}
	default:
	}
}

func (b *Backend) dropIdentity(who string, ic *ownConn) {
	b.mu.Lock()
	if b.perIdentity[who] == ic {
		delete(b.perIdentity, who)
	}
	b.mu.Unlock()
}

// runIdentityConn connects who's connection to b and closes it when b or
// the proxy stops, or when it ends.
func (b *Backend) runIdentityConn(who string, ic *ownConn) {
	opts := b.cfg.Upstream
	if b.hooks.IdentityOptions != nil {
		opts = b.hooks.IdentityOptions(who, ic.currentSubject)
	}
	ic.up, ic.err = upstream.Start(b.rt.Life, opts)
	close(ic.ready)
	if ic.err != nil {
		b.dropIdentity(who, ic)
		return
	}
	b.log.Info("connected with the credential of one identity", "identity", who)
	select {
	case <-ic.up.Done():
	case <-b.rt.Closed:
	case <-b.quit:
	}
	_ = ic.up.Close()
	b.dropIdentity(who, ic)
}
