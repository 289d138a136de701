package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// This file gives each caller of a server with ServerConfig.PerIdentity a
// connection of its own: for a remote server (credentials = "identity") one
// that carries that caller's stored OAuth credential, so that one caller's
// calls never travel with another's token; for a stdio server (isolation =
// "identity") a process started with that caller's environment. The shared
// connection, with the service credential or none, still provides the
// catalog and answers the health checks: those never use a user's
// credential.

// maxIdentityConns bounds the identity connections of one server.
const maxIdentityConns = 256

// credentialOf names id the way `manifold login --as` and the who-rules
// do: "key:NAME" for an API key, "user:SUBJECT" for a token's subject; ""
// for no identity.
func credentialOf(id identity) string {
	switch {
	case id.user == "" || id.subject == "":
		return ""
	case id.method == methodAPIKey:
		return "key:" + id.subject
	}
	return "user:" + id.subject
}

// identityUpstream returns the connection of b that carries the credential
// of the caller on ctx, connecting on first use. The error is an
// *upstream.AuthError (errors.Is upstream.ErrUnauthorized) when the caller
// has no identity or no usable credential: it says how to authorize.
func (s *Server) identityUpstream(ctx context.Context, b *backend) (*upstream.Upstream, error) {
	who := credentialOf(identityFrom(ctx))
	if who == "" {
		return nil, &upstream.AuthError{Server: b.name, Identity: "this caller",
			Reason: `the server has credentials = "identity" and the request carries no identity (the HTTP endpoint authenticates no one, or this is stdio)`,
			Login:  "configure [auth] for the HTTP endpoint, then " + upstream.LoginCommand(b.name, "user:SUBJECT") + " (or --as key:NAME)"}
	}
	if b.cfg.Upstream.OAuth == nil && b.cfg.Upstream.Exchange == nil {
		if _, ok := b.cfg.IdentityEnv[who]; !ok {
			return nil, fmt.Errorf("upstream %q starts a process per identity (isolation = \"identity\") and %s has no environment there: add [servers.%s.identities.%q] env = { ... } to the config", b.name, who, b.name, who)
		}
	}
	b.ownMu.Lock()
	if st, _, _ := b.Snapshot(); st == stateStopped {
		b.ownMu.Unlock()
		return nil, fmt.Errorf("upstream %q is stopped", b.name)
	}
	if b.perIdentity == nil {
		b.perIdentity = make(map[string]*ownConn)
	}
	ic, ok := b.perIdentity[who]
	if !ok {
		if len(b.perIdentity) >= maxIdentityConns {
			b.ownMu.Unlock()
			return nil, fmt.Errorf("upstream %q has connections for %d identities, the most it keeps; retry later", b.name, maxIdentityConns)
		}
		ic = &ownConn{ready: make(chan struct{})}
		b.perIdentity[who] = ic
		ic.setSubject(ctx)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runIdentityConn(b, who, ic)
		}()
	}
	b.ownMu.Unlock()
	ic.setSubject(ctx)
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

// setSubject keeps the caller's downstream token of ctx for the exchange of
// the connection's next upstream token.
func (ic *ownConn) setSubject(ctx context.Context) {
	if tok := subjectTokenFrom(ctx); tok != "" {
		ic.subject.Store(&tok)
	}
}

func (ic *ownConn) currentSubject() string {
	if p := ic.subject.Load(); p != nil {
		return *p
	}
	return ""
}

// forgetIdentity drops who's connection after err, when err says its
// credential is no good: the next call reads the store again (a new login).
func (b *backend) forgetIdentity(ctx context.Context, err error) {
	if !b.cfg.PerIdentity || !errors.Is(err, upstream.ErrUnauthorized) {
		return
	}
	who := credentialOf(identityFrom(ctx))
	b.ownMu.Lock()
	ic := b.perIdentity[who]
	b.ownMu.Unlock()
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

func (b *backend) dropIdentity(who string, ic *ownConn) {
	b.ownMu.Lock()
	if b.perIdentity[who] == ic {
		delete(b.perIdentity, who)
	}
	b.ownMu.Unlock()
}

// runIdentityConn connects who's connection to b and closes it when b or
// the proxy stops, or when it ends.
func (s *Server) runIdentityConn(b *backend, who string, ic *ownConn) {
	opts := b.cfg.Upstream
	opts.Logger = s.log.With("identity", who)
	opts.ClientInfo = &mcp.Implementation{Name: "manifold", Version: Version}
	opts.Client, opts.Middleware = s.clientOptions(b, nil)
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = s.opts.MaxMessageBytes
	}
	if opts.Eras == nil {
		opts.Eras = s.eras
	}
	if opts.Exchange != nil { // the caller's token, exchanged (RFC 8693)
		x := *opts.Exchange
		x.Identity = who
		x.Subject = ic.currentSubject
		opts.Exchange, opts.OAuth = &x, nil
	} else if opts.OAuth != nil {
		o := *opts.OAuth
		o.Identity = who
		o.Login = ""
		opts.OAuth = &o
	} else { // a process of this identity's own, with its environment
		opts.Env = append(slices.Clone(opts.Env), b.cfg.IdentityEnv[who]...)
		opts.Progress = func(p *mcp.ProgressNotificationParams) { s.progress.forward(b, nil, p) }
		opts.Log = func(p *mcp.LoggingMessageParams) { s.forwardLog(s.life, b, nil, p) } //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
		if opts.Reaper == nil {
			opts.Reaper = s.opts.Reaper
		}
	}
	ic.up, ic.err = upstream.Start(s.life, opts)
	close(ic.ready)
	if ic.err != nil {
		b.dropIdentity(who, ic)
		return
	}
	b.log.Info("connected with the credential of one identity", "identity", who)
	select {
	case <-ic.up.Done():
	case <-s.closed:
	case <-b.Quit():
	}
	_ = ic.up.Close()
	b.dropIdentity(who, ic)
}
