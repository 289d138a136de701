package upstream

import (
	"context"
	"fmt"
	"sync/atomic"
)

// local is a server reached over a transport that Options.Dial supplies, such
// as an in-memory connection to a plugin's MCP server. The transport's owner
// runs the server; closing the session is all the stop there is.
type local struct {
	u       *Upstream
	pid     int // the process behind the transport, if it says (a plugin does); else 0
	closing atomic.Bool
}

// dialLocal connects over opts.Dial's transport and completes initialize.
func (u *Upstream) dialLocal(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithTimeout(ctx, opts.StartupTimeout)
	defer cancel()
	t, err := opts.Dial(ctx)
	if err != nil {
		return fmt.Errorf("upstream %q: %w", u.name, err)
	}
	u.era.Source = SourcePin // plugins speak the initialize era
	cs, err := u.newClient(opts).Connect(ctx, repairTransport{t, u}, sessionOptions())
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("upstream %q: did not complete initialize within %v: %w", u.name, opts.StartupTimeout, err)
		}
		return fmt.Errorf("upstream %q: connecting: %w", u.name, err)
	}
	u.session = cs
	u.local = &local{u: u}
	if p, ok := t.(interface{ PID() int }); ok {
		u.local.pid = p.PID()
	}
	go u.local.watch()
	return nil
}

// watch closes u.done when the session ends.
func (l *local) watch() {
	err := l.u.session.Wait()
	switch {
	case l.closing.Load():
		l.u.err = fmt.Errorf("upstream %q: %w", l.u.name, ErrClosed)
	case err != nil:
		l.u.err = fmt.Errorf("upstream %q: connection lost: %v: %w", l.u.name, err, ErrClosed)
		l.u.log.Warn("connection lost", "err", err)
	default:
		l.u.err = fmt.Errorf("upstream %q: connection ended by the server: %w", l.u.name, ErrClosed)
		l.u.log.Warn("connection ended by the server")
	}
	close(l.u.done)
}

func (l *local) stop() {
	l.closing.Store(true)
	_ = l.u.session.Close()
}
