package proxy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// state is a backend's lifecycle state.
type state int

const (
	stateStarting state = iota
	stateUp
	stateRestarting // not serving; a restart is scheduled
	stateIdle       // not running until a call needs it (lazy start, idle stop)
	stateFailed     // failing repeatedly (or required and failed); retried rarely
	stateStopped
)

func (st state) String() string {
	switch st {
	case stateStarting:
		return "starting"
	case stateUp:
		return "up"
	case stateFailed:
		return "failed"
	case stateRestarting:
		return "restarting"
	case stateIdle:
		return "idle"
	case stateStopped:
		return "stopped"
	}
	return "unknown"
}

// listKind names one of the four lists an upstream serves.
type listKind uint8

const (
	kindTools listKind = 1 << iota
	kindPrompts
	kindResources
	kindTemplates
	kindAll = kindTools | kindPrompts | kindResources | kindTemplates
)

// lists is an upstream's last successful listing.
type lists struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// backend is one configured upstream and what the proxy knows of it.
type backend struct {
	cfg  ServerConfig
	name string
	log  *slog.Logger

	capsJSON atomic.Pointer[capsEncoding] // upstreamCapsJSON's last reading (mrtr.go)

	saveMu sync.Mutex // held while the catalog cache file is written (saveCatalog)

	mu          sync.Mutex
	state       state                   // guarded by mu
	up          *upstream.Upstream      // guarded by mu; nil unless started
	err         error                   // guarded by mu; why it failed or exited
	lists       lists                   // guarded by mu
	listed      bool                    // guarded by mu; lists holds a listing (of a start, a re-listing or the cache)
	fromCache   bool                    // guarded by mu; the cached catalog was adopted (adoptCache)
	caps        *mcp.ServerCapabilities // guarded by mu; see capabilities
	dirty       listKind                // guarded by mu; lists to re-fetch
	fetching    bool                    // guarded by mu; a refresh loop runs
	busy        map[*inflight]struct{}  // guarded by mu; calls in flight
	started     chan struct{}           // closed when the initial start attempt ended
	listable    chan struct{}           // closed once lists holds a listing (cached or live) or the initial start ended (markListable)
	listOnce    sync.Once
	since       time.Time                       // guarded by mu; when it last came up
	retryAt     time.Time                       // guarded by mu; next start attempt while down
	restarts    int                             // guarded by mu; times it exited and was restarted
	perSession  map[*mcp.ServerSession]*ownConn // guarded by mu; isolation = "session"
	callProcs   int                             // guarded by mu; processes running one modern call each (callUpstream)
	perIdentity map[string]*ownConn             // guarded by mu; credentials = "identity" (identityconn.go)
	wakeCh      chan struct{}                   // a call needs the server: start it (capacity 1)
	woken       atomic.Bool                     // a call woke it and waits for it
	lastUsed    atomic.Int64                    // unix nanos of the last call
	quit        chan struct{}                   // closed by close: the supervisor stops
	quitOnce    sync.Once
	checked     time.Time        // guarded by mu; last health check
	healthErr   error            // guarded by mu; its failure, nil if it passed
	probe       upstream.EraInfo // guarded by mu; the last start that probed its era
	about       serverAbout      // guarded by mu; what it said of itself when last up (summary.go)
}

// eraCacheMaxAge is how long a server's cached era is trusted across runs:
// a server upgraded in place (npx pkg@latest) that became modern is probed
// again within a day. (One that is no longer modern falls back at once.)
const eraCacheMaxAge = 24 * time.Hour

// newEraCache keeps the servers' eras in dir/eras.json, or only in memory
// when dir is empty.
func newEraCache(dir string, log *slog.Logger) *upstream.EraCache {
	if dir == "" {
		return upstream.NewEraCache()
	}
	return upstream.NewEraCacheFile(filepath.Join(dir, "eras.json"), eraCacheMaxAge, log)
}

// noteEra keeps the era info of a start that probed, so that status shows
// the probe's cost after later starts are served from the cache.
func (b *backend) noteEra(e upstream.EraInfo) {
	if e.Source != upstream.SourceProbe {
		return
	}
	b.mu.Lock()
	b.probe = e
	b.mu.Unlock()
}

// RestartPolicy says how a server that exits is restarted.
type RestartPolicy struct {
	// Disabled leaves a server that exits down.
	Disabled bool
	// Initial is the delay before the first restart; it doubles each time.
	// If zero, 500ms.
	Initial time.Duration
	// Max caps the delay. If zero, 30s.
	Max time.Duration
	// Crashes failures (exits or failed starts) within Window mark the server
	// failed. If zero, 5 within 1 minute. Staying up longer than Window
	// resets the count.
	Crashes int
	Window  time.Duration
	// FailedRetry is the delay between attempts once failed. If zero, 5m.
	FailedRetry time.Duration
}

func (p RestartPolicy) withDefaults() RestartPolicy {
	if p.Initial <= 0 {
		p.Initial = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Crashes <= 0 {
		p.Crashes = 5
	}
	if p.Window <= 0 {
		p.Window = time.Minute
	}
	if p.FailedRetry <= 0 {
		p.FailedRetry = 5 * time.Minute
	}
	return p
}

// inflight is one downstream call in flight on a backend: the session that
// made it (nil for a 2026-07-28 request served without one: the lean HTTP
// path) and the context of its handler. A server->client request or
// notification that belongs to the call is sent with a context derived from
// ctx, so that over streamable HTTP it travels on the call's own response
// stream (the SDK picks the stream from the incoming request in the context)
// instead of the standalone GET stream, which the client may not have opened
// yet or at all.
type inflight struct {
	ss  *mcp.ServerSession
	ctx context.Context
}

// enter records a call in flight from ss (nil: a request without a
// session) with the handler context ctx; the returned func ends it. A call
// without a session is recorded too: it is a caller of its own, so that
// what a shared server says during it is never taken for another caller's
// (busySessions, soleCaller).
func (b *backend) enter(ctx context.Context, ss *mcp.ServerSession) func() {
	c := &inflight{ss: ss, ctx: ctx}
	b.mu.Lock()
	if b.busy == nil {
		b.busy = make(map[*inflight]struct{})
	}
	b.busy[c] = struct{}{}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.busy, c)
		b.mu.Unlock()
	}
}

// busySessions returns the callers with calls in flight on b: each session
// once, and a nil for each call without a session (each is a caller of its
// own).
func (b *backend) busySessions() []*mcp.ServerSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*mcp.ServerSession, 0, len(b.busy))
	for c := range b.busy {
		if c.ss == nil || !slices.Contains(out, c.ss) {
			out = append(out, c.ss)
		}
	}
	return out
}

// soleCaller returns how many callers have calls in flight on b (as
// busySessions counts them) and, when there is exactly one, its session
// (nil for a call without one) and the context of one of its calls that is
// not done (nil if all are).
func (b *backend) soleCaller() (n int, ss *mcp.ServerSession, call context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := true
	for c := range b.busy {
		switch {
		case first:
			first, n, ss = false, 1, c.ss
		case c.ss == nil || c.ss != ss:
			return 2, nil, nil // two or more: which is not needed
		}
		if call == nil && c.ctx.Err() == nil {
			call = c.ctx
		}
	}
	return n, ss, call
}

// callOf returns the context of one of ss's calls in flight on b, or nil if
// there is none (or ss is nil).
func (b *backend) callOf(ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.busy {
		if c.ss == ss && c.ctx.Err() == nil {
			return c.ctx
		}
	}
	return nil
}

// capabilities returns what b's server declared at its last start (nil
// before it).
func (b *backend) capabilities() *mcp.ServerCapabilities {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.caps
}

// markListable closes b.listable, once: a list need not wait for b any
// more, since b's catalog (cached or live) is in it, or its initial start
// ended without one.
func (b *backend) markListable() { b.listOnce.Do(func() { close(b.listable) }) }

// snapshot returns the backend's state, connection and error.
func (b *backend) snapshot() (state, *upstream.Upstream, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.up, b.err
}

func (b *backend) close() error {
	b.quitOnce.Do(func() { close(b.quit) })
	b.closeOwn()
	b.mu.Lock()
	up := b.up
	b.state = stateStopped
	b.mu.Unlock()
	if up == nil {
		return nil
	}
	return up.Close()
}

// unavailable describes, for the model, why the backend cannot serve a call.
func (b *backend) unavailable() string {
	b.mu.Lock()
	st, err, retryAt := b.state, b.err, b.retryAt
	b.mu.Unlock()
	back := "it is retried later"
	if !retryAt.IsZero() {
		back = fmt.Sprintf("it is expected back in about %s; retry then", (max(time.Until(retryAt), 0) + time.Second).Round(time.Second))
	}
	switch st {
	case stateStarting, stateIdle:
		return fmt.Sprintf("upstream %q is still starting; nothing was executed; retry in a few seconds", b.name)
	case stateRestarting:
		return fmt.Sprintf("upstream %q is restarting after a failure (%v); nothing was executed; %s", b.name, err, back)
	case stateFailed:
		return fmt.Sprintf("upstream %q is failing (%v), so its tools are unavailable; nothing was executed; %s. Tell the user to check the server's command in the proxy config and its logs", b.name, err, back)
	case stateStopped:
		return fmt.Sprintf("upstream %q is stopped; nothing was executed", b.name)
	}
	return fmt.Sprintf("upstream %q is unavailable; nothing was executed", b.name)
}

// startUpstream starts b's upstream and lists its catalog. On success b is up
// and the catalog includes it.
func (s *Server) startUpstream(ctx context.Context, b *backend) (*upstream.Upstream, error) {
	opts := b.cfg.Upstream
	opts.Logger = s.log
	opts.ClientInfo = &mcp.Implementation{Name: "manifold", Version: Version}
	opts.Client, opts.Middleware = s.clientOptions(b, nil)
	opts.Progress = func(p *mcp.ProgressNotificationParams) { s.progress.forward(b, nil, p) }
	opts.Log = func(p *mcp.LoggingMessageParams) { s.forwardLog(s.life, b, nil, p) } //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	if opts.Reaper == nil {
		opts.Reaper = s.opts.Reaper
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = s.opts.MaxMessageBytes
	}
	if opts.Eras == nil {
		opts.Eras = s.eras
	}
	// A server that speaks both eras is spoken to in the era of the one
	// stdio client. Over HTTP the shared process serves everyone in the
	// initialize era, in which such a server's requests reach its one
	// caller (relay.go callerFor) whether it sends them itself or returns
	// input_required (the SDK sends those for it), and a 2026-07-28
	// client's calls are bridged (mrtr.go); the shared process of a server
	// whose calls run elsewhere (isolation = "session", credentials =
	// "identity") speaks 2026-07-28, whose input requests are tied to the
	// call that asks.
	if s.opts.WaitForClient {
		opts.PreferLegacy = !s.clientModern.Load()
	} else {
		opts.PreferLegacy = !b.cfg.PerSession && !b.cfg.PerIdentity
	}
	up, err := upstream.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	b.noteEra(up.Era())
	b.mu.Lock()
	if b.state == stateStopped { // Close raced with the start
		b.mu.Unlock()
		_ = up.Close()
		return nil, errStopped
	}
	b.up = up
	ir := up.InitializeResult()
	if ir != nil {
		b.caps = ir.Capabilities
	}
	caps := b.caps
	b.mu.Unlock()
	s.applyLogLevel(ctx, b, up, caps)

	// A kind whose listing fails keeps what was listed before (the cached
	// catalog, or the last start's), rather than none.
	b.mu.Lock()
	prev := b.lists
	b.mu.Unlock()
	l, err := s.fetchLists(ctx, b, up, kindAll, prev)
	if err != nil {
		b.log.Warn("listing failed after start; serving what was listed", "err", err)
	}
	about := newAbout(ir, l.tools)
	// The cache is for the next start: written beside this one, not on
	// its way to ready, and only from a whole listing (one cut short, by
	// a client that quit at once for instance, would advertise less next
	// time). Start runs within s.wg, so the Add is not concurrent with
	// Close's Wait at zero.
	if err == nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			b.saveMu.Lock()
			defer b.saveMu.Unlock()
			s.saveCatalog(b, l, about)
		}()
	}
	b.mu.Lock()
	b.lists = l
	b.listed = b.listed || err == nil
	b.about = about
	b.state = stateUp
	b.err = nil
	b.since = time.Now()
	b.checked, b.healthErr = time.Time{}, nil
	b.mu.Unlock()
	b.log.Info("server up", "pid", up.PID(), "tools", len(l.tools), "prompts", len(l.prompts),
		"resources", len(l.resources), "templates", len(l.templates))
	s.rebuild()
	s.resubscribe(ctx, b, up.Session())
	return up, nil
}

var errStopped = errors.New("stopped")

// supervise runs b for the proxy's lifetime: it starts it, waits for it to
// end, and restarts it with exponential backoff and jitter. After
// Restart.Crashes failures within Restart.Window it marks it failed and only
// retries every Restart.FailedRetry. The result of the first attempt goes to
// first (an error only for a required server, which is then not retried).
// While b is down its tools stay listed, so a call gets an error that says
// when the server is expected back instead of "unknown tool".
func (s *Server) supervise(b *backend, first chan<- error) {
	pol := b.cfg.Restart.withDefaults()
	var failures []time.Time
	attempt := 0
	reported := false
	report := func(err error) {
		if !reported {
			reported = true
			first <- err
		}
	}
	defer report(nil)
	hasCache, now := s.adoptCache(b) // adopted in New, unless b came with a reload
	if now {
		s.rebuild()
	}
	if hasCache {
		b.markListable()
	}
	if b.cfg.Lazy {
		if hasCache {
			b.log.Info("lazy server: advertising its cached catalog until a call needs it", "tools", b.toolCount())
			report(nil)
			if !s.waitForUse(b) {
				return
			}
		} else {
			// Without a listing the client could not know its tools, so
			// it is started once now; idle_timeout stops it again.
			b.log.Info("lazy server: no cached catalog yet; starting it once to learn it")
		}
	} else if hasCache {
		b.log.Info("advertising the cached catalog while the server starts", "tools", b.toolCount())
	}
	for {
		b.touch()
		up, err := s.startUpstream(s.life, b)
		if errors.Is(err, errStopped) || s.isClosed() || b.stopped() {
			if up != nil {
				_ = up.Close()
			}
			return
		}
		if err != nil {
			if !reported && b.cfg.Required {
				b.setDown(stateFailed, err, time.Time{})
				report(fmt.Errorf("%w: server %q: %w", ErrRequiredFailed, b.name, err))
				return
			}
			b.log.Error("server failed to start; it is left out and retried", "err", err)
		}
		report(nil)
		if err == nil {
			if b.cfg.Health != nil {
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.checkHealth(b, up)
				}()
			}
			if s.waitUp(b, up) {
				// Idle: stopped on purpose, not a failure.
				b.log.Info("server idle; stopping it until a call needs it", "idle_timeout", b.cfg.IdleTimeout)
				_ = up.Close()
				attempt, failures = 0, nil
				if !s.waitForUse(b) {
					return
				}
				continue
			}
			if s.isClosed() || b.stopped() {
				return
			}
			_ = up.Close() // releases what is left; quick once Done
			if s.isClosed() || b.stopped() {
				return
			}
			b.mu.Lock()
			upFor := time.Since(b.since)
			b.restarts++
			b.mu.Unlock()
			if upFor > pol.Window {
				attempt, failures = 0, nil
			}
			err = up.Err()
			b.log.Error("server exited; restarting it", "err", err, "stderr_tail", up.StderrTail(), "uptime", upFor.Round(time.Millisecond))
		}
		now := time.Now()
		failures = append(failures, now)
		for len(failures) > 0 && now.Sub(failures[0]) > pol.Window {
			failures = failures[1:]
		}
		if pol.Disabled {
			b.setDown(stateFailed, err, time.Time{})
			select {
			case <-s.closed:
			case <-b.quit:
			}
			return
		}
		st, delay := stateRestarting, backoff(pol, attempt)
		attempt++
		if len(failures) >= pol.Crashes {
			st, delay = stateFailed, pol.FailedRetry
			b.log.Error("server keeps failing; marked failed and retried rarely",
				"failures", len(failures), "window", pol.Window, "next_try_in", delay)
		}
		b.setDown(st, err, now.Add(delay))
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-s.closed:
			t.Stop()
			return
		case <-b.quit:
			t.Stop()
			return
		}
	}
}

// waitUp waits while up serves: it returns false when up's connection ended
// or the proxy or b is stopping, and true when b has been idle for its idle
// timeout (then b is already out of service: see goIdle).
func (s *Server) waitUp(b *backend, up *upstream.Upstream) bool {
	var idle <-chan time.Time
	if b.cfg.IdleTimeout > 0 {
		t := time.NewTicker(max(b.cfg.IdleTimeout/4, 10*time.Millisecond))
		defer t.Stop()
		idle = t.C
	}
	for {
		select {
		case <-up.Done():
			return false
		case <-s.closed:
			return false
		case <-b.quit:
			return false
		case <-idle:
			if b.goIdle() {
				return true
			}
		}
	}
}

// stopped reports whether b was closed (proxy closed, or removed by reload).
func (b *backend) stopped() bool {
	select {
	case <-b.quit:
		return true
	default:
		return false
	}
}

// setDown records that b is not serving, why, and when it is tried again.
func (b *backend) setDown(st state, err error, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == stateStopped {
		return
	}
	b.state, b.err, b.retryAt, b.up = st, err, retryAt, nil
}

// backoff is the delay before restart attempt n: Initial * 2^n, capped at
// Max, with ±10% jitter so that servers that died together do not restart in
// lockstep.
func backoff(p RestartPolicy, n int) time.Duration {
	d := p.Initial
	for i := 0; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return d + time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
}

// fetchLists lists the kinds in want from up, draining pagination, and returns
// prev with those kinds replaced. A server of the initialize era is asked
// for the kinds at once, each on its own request (MCP lets a client have
// several in flight): a start then waits for one round trip to the server,
// not one per kind, which on a busy machine was about 6 ms of a start's
// 35. A server spoken to in 2026-07-28 is asked one kind after the other:
// asked at once, the four lists once left a dual-era server's
// resources/list unanswered for the whole call timeout in CI
// (TestFullListsByteStable/stdio/2026-07-28), not reproduced since. A kind
// that fails keeps prev's; the error returned is the first in the order
// tools, prompts, resources, templates.
func (s *Server) fetchLists(ctx context.Context, b *backend, up *upstream.Upstream, want listKind, prev lists) (lists, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	cs := up.Session()
	caps := &mcp.ServerCapabilities{}
	if ir := up.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	out := prev
	var errs [4]error
	var wg sync.WaitGroup
	run := wg.Go
	if up.Modern() {
		run = func(f func()) { f() }
	}
	if want&kindTools != 0 && caps.Tools != nil {
		run(func() { out.tools, errs[0] = drain(cs.Tools(ctx, nil), "tools/list", prev.tools) })
	}
	if want&kindPrompts != 0 && caps.Prompts != nil {
		run(func() { out.prompts, errs[1] = drain(cs.Prompts(ctx, nil), "prompts/list", prev.prompts) })
	}
	if want&kindResources != 0 && caps.Resources != nil {
		run(func() { out.resources, errs[2] = drain(cs.Resources(ctx, nil), "resources/list", prev.resources) })
	}
	if want&kindTemplates != 0 && caps.Resources != nil {
		run(func() {
			out.templates, errs[3] = drain(cs.ResourceTemplates(ctx, nil), "resources/templates/list", prev.templates)
		})
	}
	wg.Wait()
	out = keepSame(prev, out)
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// drain collects the items of a paginated list; on an error it returns
// prev and the error, prefixed with method.
func drain[T any](seq iter.Seq2[T, error], method string, prev []T) ([]T, error) {
	var out []T
	for item, err := range seq {
		if err != nil {
			return prev, fmt.Errorf("%s: %w", method, err)
		}
		out = append(out, item)
	}
	return out, nil
}

// requestRefresh marks kinds of b's lists stale and makes sure one refresh loop
// runs for b. Bursts of list_changed coalesce into one listing.
func (s *Server) requestRefresh(b *backend, kinds listKind) {
	b.mu.Lock()
	b.dirty |= kinds
	if b.fetching {
		b.mu.Unlock()
		return
	}
	b.fetching = true
	b.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// A short pause lets a burst of notifications arrive before listing.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-s.closed:
		}
		for {
			b.mu.Lock()
			kinds := b.dirty
			b.dirty = 0
			up, prev, st := b.up, b.lists, b.state
			if kinds == 0 || up == nil || st != stateUp || s.isClosed() {
				b.fetching = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			l, err := s.fetchLists(context.Background(), b, up, kinds, prev)
			if err != nil {
				b.log.Warn("re-listing after list_changed failed; keeping the previous list", "err", err)
			}
			b.mu.Lock()
			b.lists = l
			b.listed = b.listed || err == nil
			b.mu.Unlock()
			s.rebuild()
			s.relayListChanged(b, kinds)
		}
	}()
}

func (s *Server) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// clientOptions builds the MCP client handlers for one upstream: they close over
// the backend so every notification is attributed to its server.
func (s *Server) clientOptions(b *backend, fixed *mcp.ServerSession) (*mcp.ClientOptions, []mcp.Middleware) {
	if fixed != nil { // a session's own process: lists come from the shared one
		opts := &mcp.ClientOptions{
			KeepAlive:                 30 * time.Second,
			KeepAliveFailureThreshold: 3,
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				s.progress.forward(b, fixed, r.Params)
			},
		}
		s.relayLogs(opts, b, fixed)
		return opts, s.relayOptions(opts, b, fixed)
	}
	opts := &mcp.ClientOptions{
		// A server that stops answering pings is closed, and so restarted.
		KeepAlive:                 30 * time.Second,
		KeepAliveFailureThreshold: 3,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.requestRefresh(b, kindTools)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.requestRefresh(b, kindPrompts)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.requestRefresh(b, kindResources|kindTemplates)
		},
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			s.resourceUpdated(ctx, b, r.Params.URI)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.progress.forward(b, nil, r.Params)
		},
	}
	s.relayLogs(opts, b, nil)
	mw := s.relayOptions(opts, b, nil)
	return opts, mw
}
