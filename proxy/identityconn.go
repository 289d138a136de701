package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/session"
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

// credentialOf names id the way `manifold login --as` and the who-rules
// do: "key:NAME" for an API key, "user:SUBJECT" for a token's subject; ""
// for no identity.
func credentialOf(id session.Identity) string {
	switch {
	case id.User == "" || id.Subject == "":
		return ""
	case id.Method == session.MethodAPIKey:
		return "key:" + id.Subject
	}
	return "user:" + id.Subject
}

// identityUpstream returns the connection of b that carries the credential
// of the caller on ctx, connecting on first use. The error is an
// *upstream.AuthError (errors.Is upstream.ErrUnauthorized) when the caller
// has no identity or no usable credential: it says how to authorize.
func (s *Server) identityUpstream(ctx context.Context, b *backend) (*upstream.Upstream, error) {
	who := credentialOf(session.IdentityFrom(ctx))
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
	return b.IdentityUpstream(ctx, who, session.SubjectToken(ctx))
}

// forgetIdentity drops who's connection after err, when err says its
// credential is no good: the next call reads the store again (a new login).
func (b *backend) forgetIdentity(ctx context.Context, err error) {
	if !b.PerIdentity() || !errors.Is(err, upstream.ErrUnauthorized) {
		return
	}
	b.ForgetIdentity(credentialOf(session.IdentityFrom(ctx)))
}

// identityOptions are the options of who's connection to b; subject
// returns the caller's latest downstream token.
func (s *Server) identityOptions(b *backend, who string, subject func() string) upstream.Options {
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
		x.Subject = subject
		opts.Exchange, opts.OAuth = &x, nil
	} else if opts.OAuth != nil {
		o := *opts.OAuth
		o.Identity = who
		o.Login = ""
		opts.OAuth = &o
	} else { // a process of this identity's own, with its environment
		opts.Env = append(slices.Clone(opts.Env), b.cfg.IdentityEnv[who]...)
		opts.Progress = func(p *mcp.ProgressNotificationParams) { s.relay.ForwardProgress(b, nil, p) }
		opts.Log = func(p *mcp.LoggingMessageParams) { s.relay.ForwardLog(s.run.life, b, nil, p) } //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
		if opts.Reaper == nil {
			opts.Reaper = s.opts.Reaper
		}
	}
	return opts
}
