package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remote is a server reached over streamable HTTP or SSE.
//
// life is the Connect ctx (the SSE transport keeps it for its stream); it
// ends with the Upstream. Every HTTP request also goes through http, which
// can abort the requests in flight without failing later ones, so that Close
// can unblock a stuck session and still say goodbye (DELETE). One goroutine,
// watch, waits for the session to end and closes u.done.
type remote struct {
	u         *Upstream
	cancel    context.CancelCauseFunc // cancels life
	http      *boundTransport
	transport *http.Transport
	closing   atomic.Bool
}

var errStartupTimeout = errors.New("startup timeout")

// dial connects to opts.URL and completes initialize.
func (u *Upstream) dial(ctx context.Context, opts Options) error {
	life, cancel := context.WithCancelCause(context.Background())
	base := http.DefaultTransport.(*http.Transport).Clone()
	header := make(http.Header, len(opts.Headers))
	for k, v := range opts.Headers {
		header.Set(k, v)
	}
	bt := newBoundTransport(base, header)
	if opts.Transport != "sse" {
		bt.repair = func(method string, resp *http.Response) { u.repairBody(method, resp, opts.MaxMessageBytes) }
	}
	hc := &http.Client{Transport: bt}

	var t mcp.Transport
	var oauth auth.OAuthHandler
	if opts.Exchange != nil && opts.OAuth == nil {
		if opts.Transport == "sse" {
			cancel(nil)
			return fmt.Errorf("upstream %q: token exchange needs the streamable transport; remove transport = \"sse\"", u.name)
		}
		oauth = newExchangeHandler(u.name, opts.URL, *opts.Exchange, http.DefaultTransport.(*http.Transport).Clone())
	}
	if opts.OAuth != nil {
		if opts.Transport == "sse" {
			cancel(nil)
			return fmt.Errorf("upstream %q: OAuth needs the streamable transport; remove transport = \"sse\"", u.name)
		}
		// The authorization server gets a transport of its own: the
		// server's headers are not for it.
		h, err := newOAuthHandler(u.name, *opts.OAuth, http.DefaultTransport.(*http.Transport).Clone())
		if err != nil {
			cancel(nil)
			return err
		}
		oauth = h
	}
	switch opts.Transport {
	case "", "streamable":
		st := &mcp.StreamableClientTransport{Endpoint: opts.URL, HTTPClient: hc, MaxEventSize: opts.MaxMessageBytes}
		if oauth != nil {
			st.OAuthHandler = oauth
		}
		t = st
	case "sse":
		// Responses arrive on the event stream, not on the POST: repaired
		// per connection (its conn has no client-connection hooks to lose).
		t = repairTransport{&mcp.SSEClientTransport{Endpoint: opts.URL, HTTPClient: hc, MaxEventSize: opts.MaxMessageBytes}, u}
	default:
		cancel(nil)
		return fmt.Errorf("upstream %q: unknown transport %q; use \"streamable\" or \"sse\"", u.name, opts.Transport)
	}

	// The SSE transport keeps the Connect ctx for its stream, so Connect gets
	// life and startup is bounded by cancelling life.
	timer := time.AfterFunc(opts.StartupTimeout, func() { cancel(errStartupTimeout) })
	stopCtx := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	version, key := u.remoteEra(opts)
	bt.probeTimeout = opts.ProbeTimeout
	if bt.probeTimeout <= 0 {
		bt.probeTimeout = DefaultProbeTimeout
	}
	if u.era.Source == SourceCache || opts.Protocol == ProtocolModern {
		bt.probeTimeout = 0 // believed modern: discover is its handshake
	}
	began := time.Now()
	cs, err := u.newClient(opts).Connect(life, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	timerStopped, ctxStopped := timer.Stop(), stopCtx()
	if err == nil && (!timerStopped || !ctxStopped) { // too late after all
		bt.close()
		_ = cs.Close()
		err = context.Cause(life)
	}
	if err != nil {
		cause := context.Cause(life)
		cancel(err)
		bt.close()
		base.CloseIdleConnections()
		switch {
		case errors.Is(cause, errStartupTimeout):
			return fmt.Errorf("upstream %q: did not complete initialize within %v: %w", u.name, opts.StartupTimeout, err)
		case cause != nil:
			return fmt.Errorf("upstream %q: startup cancelled: %w", u.name, err)
		}
		return fmt.Errorf("upstream %q: connecting over %s: %w", u.name, transportName(opts.Transport), err)
	}
	if version == ModernVersion {
		negotiated := cs.InitializeResult().ProtocolVersion
		if opts.Protocol == ProtocolModern && negotiated < ModernVersion {
			_ = cs.Close()
			cancel(ErrClosed)
			bt.close()
			base.CloseIdleConnections()
			return fmt.Errorf("upstream %q: protocol = %q is pinned, but the server at %s answered server/discover so that the session fell back to %s: it does not speak %s; set protocol = %q (or %q)",
				u.name, ModernVersion, opts.URL, negotiated, ModernVersion, ProtocolAuto, ProtocolLegacy)
		}
		if u.era.Source == SourceProbe {
			u.era.ProbeCost = time.Since(began)
			u.era.Probe = "discover result"
			if negotiated < ModernVersion {
				u.era.Probe = "no 2026-07-28 discover result; initialized instead"
			}
		}
		opts.Eras.put(key, negotiated >= ModernVersion)
	}
	u.session = cs
	u.remote = &remote{u: u, cancel: cancel, http: bt, transport: base}
	go u.remote.watch()
	return nil
}

// remoteEra returns the version to connect to opts.URL at, and the cache
// key of its origin; it sets u.era.Source.
func (u *Upstream) remoteEra(opts Options) (version, key string) {
	key = remoteEraKey(opts.URL)
	switch {
	case opts.Transport == "sse", opts.Protocol == ProtocolLegacy:
		u.era.Source = SourcePin // the SSE transport is of the initialize era
		return protocolVersion, key
	case opts.Protocol == ProtocolModern:
		u.era.Source = SourcePin
		return ModernVersion, key
	}
	if modern, ok := opts.Eras.get(key); ok {
		u.era.Source = SourceCache
		if !modern {
			return protocolVersion, key
		}
		return ModernVersion, key
	}
	u.era.Source = SourceProbe
	return ModernVersion, key
}

func transportName(t string) string {
	if t == "" {
		return "streamable"
	}
	return t
}

// watch closes u.done when the session ends.
func (r *remote) watch() {
	err := r.u.session.Wait()
	switch {
	case r.closing.Load():
		r.u.err = fmt.Errorf("upstream %q: %w", r.u.name, ErrClosed)
	case err != nil:
		r.u.err = fmt.Errorf("upstream %q: connection lost: %v: %w", r.u.name, err, ErrClosed)
		r.u.log.Warn("connection lost", "err", err)
	default:
		r.u.err = fmt.Errorf("upstream %q: connection ended by the server: %w", r.u.name, ErrClosed)
		r.u.log.Warn("connection ended by the server")
	}
	close(r.u.done)
}

// stop closes the session gracefully; after StopGrace it aborts the requests
// in flight, and after another StopGrace every request (such as the DELETE
// that ends the session). It waits until the session has ended.
func (r *remote) stop() {
	r.closing.Store(true)
	closed := make(chan struct{})
	go func() {
		_ = r.u.session.Close()
		close(closed)
	}()
	t := time.NewTimer(r.u.grace)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		r.u.log.Info("session still closing; aborting its requests")
		r.http.abort()
		t.Reset(r.u.grace)
		select {
		case <-closed:
		case <-t.C:
			r.u.log.Info("session still closing; aborting every request")
			r.http.close()
			<-closed
		}
	}
	r.cancel(ErrClosed)
	<-r.u.done
	r.http.close()
	r.transport.CloseIdleConnections()
}

// boundTransport sets the configured headers on every request and ties each
// request to the generation it started in as well as to its own context.
type boundTransport struct {
	base   http.RoundTripper
	header http.Header
	// repair, if set, repairs the response to a posted list request
	// (listrepair.go). Set before the first request.
	repair func(method string, resp *http.Response)
	// probeTimeout, if not zero, bounds a server/discover request, so that a
	// server that never answers it falls back to initialize in time. Set
	// before the first request.
	probeTimeout time.Duration

	mu        sync.Mutex
	gen       context.Context    // guarded by mu
	cancelGen context.CancelFunc // guarded by mu
}

func newBoundTransport(base http.RoundTripper, header http.Header) *boundTransport {
	t := &boundTransport{base: base, header: header}
	t.gen, t.cancelGen = context.WithCancel(context.Background())
	return t
}

// abort cancels the requests in flight; later requests are not affected.
func (t *boundTransport) abort() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelGen()
	t.gen, t.cancelGen = context.WithCancel(context.Background())
}

// close cancels the requests in flight and every later one.
func (t *boundTransport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelGen()
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	gen := t.gen
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(req.Context())
	if t.probeTimeout > 0 && req.Header.Get("Mcp-Method") == "server/discover" {
		ctx, cancel = context.WithTimeout(req.Context(), t.probeTimeout)
	}
	stop := context.AfterFunc(gen, cancel)
	release := func() {
		stop()
		cancel()
	}
	r := req.Clone(ctx)
	if tc, ok := req.Context().Value(traceKey{}).(traceContext); ok {
		r.Header.Set("traceparent", tc.parent)
		if tc.state != "" {
			r.Header.Set("tracestate", tc.state)
		}
	}
	for k, v := range t.header {
		r.Header[k] = v
	}
	method := ""
	if t.repair != nil && req.ContentLength < 1<<20 {
		method = listMethodOf(req)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	if method != "" && resp.StatusCode == http.StatusOK {
		t.repair(method, resp)
	}
	return resp, nil
}

// releaseBody releases the request's context when its body is closed.
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// traceKey is the context key of the W3C trace context of a request to a
// remote server (WithTraceContext).
type traceKey struct{}

type traceContext struct{ parent, state string }

// WithTraceContext returns ctx with a W3C trace context (the traceparent
// and tracestate header values) that a request to a remote server made
// with ctx carries in its HTTP headers. The configured headers are set
// after it, so a configured traceparent wins. A child process gets the
// trace context in params._meta only, which the caller sets.
func WithTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, traceContext{traceparent, tracestate})
}
