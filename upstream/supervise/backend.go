package supervise

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// State is a backend's lifecycle state.
type State int

const (
	StateStarting State = iota
	StateUp
	StateRestarting // not serving; a restart is scheduled
	StateIdle       // not running until a call needs it (lazy start, idle stop)
	StateFailed     // failing repeatedly (or required and failed); retried rarely
	StateStopped
)

func (st State) String() string {
	switch st {
	case StateStarting:
		return "starting"
	case StateUp:
		return "up"
	case StateFailed:
		return "failed"
	case StateRestarting:
		return "restarting"
	case StateIdle:
		return "idle"
	case StateStopped:
		return "stopped"
	}
	return "unknown"
}

// ListKind names one of the four lists an upstream serves.
type ListKind uint8

const (
	KindTools ListKind = 1 << iota
	KindPrompts
	KindResources
	KindTemplates
	KindAll = KindTools | KindPrompts | KindResources | KindTemplates
)

// Lists is an upstream's last successful listing.
type Lists struct {
	Tools     []*mcp.Tool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
}

// ErrRequiredFailed means a server marked required could not be started.
var ErrRequiredFailed = errors.New("required server failed to start")

// Config is what supervision reads of one server's configuration.
type Config struct {
	// Upstream says how to start and reach the server; Hooks.Options
	// completes it at each start.
	Upstream upstream.Options
	// Required makes a failure of the first start final: Launch reports it
	// (wrapping ErrRequiredFailed) and the server is not retried.
	Required bool
	// CallTimeout bounds a listing (and a health check without a timeout).
	CallTimeout time.Duration
	// Restart says how the server is restarted when it exits.
	Restart RestartPolicy
	// Health, if set, checks the server through the real path periodically.
	Health *HealthCheck
	// PerSession gives each downstream session (or call) that the proxy
	// says so a process of its own (isolation = "session": SessionUpstream,
	// CallUpstream).
	PerSession bool
	// PerIdentity gives each caller a connection of its own that carries
	// its credential (credentials = "identity": IdentityUpstream).
	PerIdentity bool
	// Lazy starts the server on the first call that needs it (EnsureUp);
	// until then its cached catalog is its listing.
	Lazy bool
	// IdleTimeout stops the server when no call used it for that long.
	IdleTimeout time.Duration
	// CacheKey identifies the server's config in its cache file's name (with
	// the executable), so that a changed config does not advertise another
	// program's tools.
	CacheKey string
}

// Runtime is what every backend of one proxy shares.
type Runtime struct {
	// Life ends when the proxy closes; starts and health checks run in it.
	Life context.Context
	// Closed is closed when the proxy closes.
	Closed <-chan struct{}
	// WG counts the goroutines a backend runs; the proxy waits for it at
	// Close.
	WG *sync.WaitGroup
	// CacheDir keeps the servers' cached catalogs; if empty, none are.
	CacheDir string
}

// Hooks are how a backend reports to the proxy, which sets them. A nil hook
// is skipped.
type Hooks struct {
	// Options completes the options of each start of the shared connection:
	// the logger, the client's handlers and relays, the reaper, the era
	// cache and the era to prefer.
	Options func(*upstream.Options)
	// Connected runs once a start has connected and before it lists, with
	// what the server declared (the proxy sets the client's log level).
	Connected func(ctx context.Context, up *upstream.Upstream, caps *mcp.ServerCapabilities)
	// Up runs once a start has listed and the backend serves (the proxy
	// rebuilds its catalog and renews the resource subscriptions). changed
	// is false when the start listed the very definitions b had, and said
	// of itself what b knew (a start after the cached catalog was adopted,
	// a restart of a server that lists the same): what the catalog was
	// built from is unchanged, and a rebuild would build it again.
	Up func(ctx context.Context, up *upstream.Upstream, changed bool)
	// ProcOptions returns the options of a process of b's own: for the
	// client session ss (kind "session") or for one call ("call").
	ProcOptions func(ss *mcp.ServerSession, kind string) upstream.Options
	// IdentityOptions returns the options of the connection that carries
	// who's credential; subject returns the caller's latest downstream token.
	IdentityOptions func(who string, subject func() string) upstream.Options
	// Adopted runs when the backend's supervisor adopted its cached catalog
	// (the proxy rebuilds its catalog).
	Adopted func()
	// ListChanged runs after the kinds of the backend's lists were listed
	// again on the server's list_changed (the proxy rebuilds its catalog and
	// tells its clients).
	ListChanged func(kinds ListKind)
}

// Backend is one configured upstream and what the proxy knows of it.
type Backend struct {
	cfg   Config
	name  string
	log   *slog.Logger
	rt    Runtime
	hooks Hooks

	saveMu sync.Mutex // held while the catalog cache file is written (saveCatalog)

	mu          sync.Mutex
	state       State                   // guarded by mu
	up          *upstream.Upstream      // guarded by mu; nil unless started
	err         error                   // guarded by mu; why it failed or exited
	lists       Lists                   // guarded by mu
	listed      bool                    // guarded by mu; lists holds a listing (of a start, a re-listing or the cache)
	fromCache   bool                    // guarded by mu; the cached catalog was adopted (adoptCache)
	caps        *mcp.ServerCapabilities // guarded by mu; see capabilities
	dirty       ListKind                // guarded by mu; lists to re-fetch
	fetching    bool                    // guarded by mu; a refresh loop runs
	busy        map[*inflight]struct{}  // guarded by mu; calls in flight
	started     chan struct{}           // closed when the initial start attempt ended
	listable    chan struct{}           // closed once lists holds a listing (cached or live) or the initial start ended (markListable)
	listOnce    sync.Once
	since       time.Time                       // guarded by mu; when it last came up
	retryAt     time.Time                       // guarded by mu; next start attempt while down
	restarts    int                             // guarded by mu; times it exited and was restarted
	perSession  map[*mcp.ServerSession]*ownConn // guarded by mu; isolation = "session"
	callProcs   int                             // guarded by mu; processes running one modern call each (CallUpstream)
	perIdentity map[string]*ownConn             // guarded by mu; credentials = "identity" (identity.go)
	wakeCh      chan struct{}                   // a call needs the server: start it (capacity 1)
	woken       atomic.Bool                     // a call woke it and waits for it
	lastUsed    atomic.Int64                    // unix nanos of the last call
	quit        chan struct{}                   // closed by stop: the supervisor stops
	quitOnce    sync.Once
	checked     time.Time        // guarded by mu; last health check
	healthErr   error            // guarded by mu; its failure, nil if it passed
	probe       upstream.EraInfo // guarded by mu; the last start that probed its era
	about       About            // guarded by mu; what it said of itself when last up
}

// New returns the backend of the server name, starting (it runs once
// Launch is called).
func New(name string, cfg Config, log *slog.Logger, rt Runtime, hooks Hooks) *Backend {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{cfg: cfg, name: name, log: log, rt: rt, hooks: hooks, state: StateStarting,
		started: make(chan struct{}), listable: make(chan struct{}), quit: make(chan struct{}), wakeCh: make(chan struct{}, 1)}
}

// noteEra keeps the era info of a start that probed, so that status shows
// the probe's cost after later starts are served from the cache.
func (b *Backend) noteEra(e upstream.EraInfo) {
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

// Enter records a call in flight from ss (nil: a request without a
// session) with the handler context ctx; the returned func ends it. A call
// without a session is recorded too: it is a caller of its own, so that
// what a shared server says during it is never taken for another caller's
// (BusySessions, SoleCaller).
func (b *Backend) Enter(ctx context.Context, ss *mcp.ServerSession) func() {
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

// BusySessions returns the callers with calls in flight on b: each session
// once, and a nil for each call without a session (each is a caller of its
// own).
func (b *Backend) BusySessions() []*mcp.ServerSession {
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

// SoleCaller returns how many callers have calls in flight on b (as
// BusySessions counts them) and, when there is exactly one, its session
// (nil for a call without one) and the context of one of its calls that is
// not done (nil if all are).
func (b *Backend) SoleCaller() (n int, ss *mcp.ServerSession, call context.Context) {
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

// CallOf returns the context of one of ss's calls in flight on b, or nil if
// there is none (or ss is nil).
func (b *Backend) CallOf(ss *mcp.ServerSession) context.Context {
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

// Capabilities returns what b's server declared at its last start (nil
// before it).
func (b *Backend) Capabilities() *mcp.ServerCapabilities {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.caps
}

// MarkListable closes b.listable, once: a list need not wait for b any
// more, since b's catalog (cached or live) is in it, or its initial start
// ended without one.
func (b *Backend) MarkListable() { b.listOnce.Do(func() { close(b.listable) }) }

// Snapshot returns the backend's state, connection and error.
func (b *Backend) Snapshot() (State, *upstream.Upstream, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.up, b.err
}

// stop tells b's supervisor to stop (Quit is closed); Close stops the
// backend too.
func (b *Backend) stop() { b.quitOnce.Do(func() { close(b.quit) }) }

// Close stops b for good: its supervisor ends, and its own processes and
// connections and then its shared connection close.
func (b *Backend) Close() error {
	b.stop()
	b.closeOwn()
	b.mu.Lock()
	up := b.up
	b.state = StateStopped
	b.mu.Unlock()
	if up == nil {
		return nil
	}
	return up.Close()
}

// Unavailable describes, for the model, why the backend cannot serve a call.
func (b *Backend) Unavailable() string {
	b.mu.Lock()
	st, err, retryAt := b.state, b.err, b.retryAt
	b.mu.Unlock()
	back := "it is retried later"
	if !retryAt.IsZero() {
		back = fmt.Sprintf("it is expected back in about %s; retry then", (max(time.Until(retryAt), 0) + time.Second).Round(time.Second))
	}
	switch st {
	case StateStarting, StateIdle:
		return fmt.Sprintf("upstream %q is still starting; nothing was executed; retry in a few seconds", b.name)
	case StateRestarting:
		return fmt.Sprintf("upstream %q is restarting after a failure (%v); nothing was executed; %s", b.name, err, back)
	case StateFailed:
		return fmt.Sprintf("upstream %q is failing (%v), so its tools are unavailable; nothing was executed; %s. Tell the user to check the server's command in the proxy config and its logs", b.name, err, back)
	case StateStopped:
		return fmt.Sprintf("upstream %q is stopped; nothing was executed", b.name)
	}
	return fmt.Sprintf("upstream %q is unavailable; nothing was executed", b.name)
}

// start starts b's upstream and lists its catalog. On success b is up
// and the catalog includes it.
func (b *Backend) start(ctx context.Context) (*upstream.Upstream, error) {
	opts := b.cfg.Upstream
	if b.hooks.Options != nil {
		b.hooks.Options(&opts)
	}
	up, err := upstream.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	b.noteEra(up.Era())
	b.mu.Lock()
	if b.state == StateStopped { // Close raced with the start
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
	if b.hooks.Connected != nil {
		b.hooks.Connected(ctx, up, caps)
	}

	// A kind whose listing fails keeps what was listed before (the cached
	// catalog, or the last start's), rather than none.
	b.mu.Lock()
	prev := b.lists
	b.mu.Unlock()
	l, err := b.fetchLists(ctx, up, KindAll, prev)
	if err != nil {
		b.log.Warn("listing failed after start; serving what was listed", "err", err)
	}
	about := newAbout(ir, l.Tools)
	// The cache is for the next start: written beside this one, not on
	// its way to ready, and only from a whole listing (one cut short, by
	// a client that quit at once for instance, would advertise less next
	// time). Start runs within rt.WG, so the Add is not concurrent with
	// Close's Wait at zero.
	if err == nil {
		b.rt.WG.Add(1)
		go func() {
			defer b.rt.WG.Done()
			b.saveMu.Lock()
			defer b.saveMu.Unlock()
			b.saveCatalog(l, about)
		}()
	}
	b.mu.Lock()
	// The proxy's catalog was built from b's lists and about as they are
	// before this start (every change of them is followed by a hook that
	// rebuilds it: Adopted, Up, ListChanged); a start that lists the very
	// definitions again (keepSame: the cached catalog, or the last start's)
	// leaves it as it is.
	changed := !b.listed || !sameLists(b.lists, l) || !sameAbout(b.about, about)
	b.lists = l
	b.listed = b.listed || err == nil
	b.about = about
	b.state = StateUp
	b.err = nil
	b.since = time.Now()
	b.checked, b.healthErr = time.Time{}, nil
	b.mu.Unlock()
	b.log.Info("server up", "pid", up.PID(), "tools", len(l.Tools), "prompts", len(l.Prompts),
		"resources", len(l.Resources), "templates", len(l.Templates))
	if b.hooks.Up != nil {
		b.hooks.Up(ctx, up, changed)
	}
	return up, nil
}

var errStopped = errors.New("stopped")

// Launch starts supervising b; the returned channel gets the result of its
// first start (an error only for a required server).
func (b *Backend) Launch() <-chan error {
	done := make(chan error, 1)
	first := make(chan error, 1)
	b.rt.WG.Add(2)
	go func() {
		defer b.rt.WG.Done()
		err := <-first
		close(b.started)
		b.MarkListable()
		done <- err
	}()
	go func() {
		defer b.rt.WG.Done()
		b.supervise(first)
	}()
	return done
}

// Started is closed when b's initial start attempt ended.
func (b *Backend) Started() <-chan struct{} { return b.started }

// Listable is closed once b's lists hold a listing (cached or live) or its
// initial start ended.
func (b *Backend) Listable() <-chan struct{} { return b.listable }

// supervise runs b for the proxy's lifetime: it starts it, waits for it to
// end, and restarts it with exponential backoff and jitter. After
// Restart.Crashes failures within Restart.Window it marks it failed and only
// retries every Restart.FailedRetry. The result of the first attempt goes to
// first (an error only for a required server, which is then not retried).
// While b is down its tools stay listed, so a call gets an error that says
// when the server is expected back instead of "unknown tool".
func (b *Backend) supervise(first chan<- error) {
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
	hasCache, now := b.AdoptCache() // adopted in New, unless b came with a reload
	if now && b.hooks.Adopted != nil {
		b.hooks.Adopted()
	}
	if hasCache {
		b.MarkListable()
	}
	if b.cfg.Lazy {
		if hasCache {
			b.log.Info("lazy server: advertising its cached catalog until a call needs it", "tools", b.toolCount())
			report(nil)
			if !b.waitForUse() {
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
		up, err := b.start(b.rt.Life)
		if errors.Is(err, errStopped) || b.closing() || b.stopped() {
			if up != nil {
				_ = up.Close()
			}
			return
		}
		if err != nil {
			if !reported && b.cfg.Required {
				b.setDown(StateFailed, err, time.Time{})
				report(fmt.Errorf("%w: server %q: %w", ErrRequiredFailed, b.name, err))
				return
			}
			b.log.Error("server failed to start; it is left out and retried", "err", err)
		}
		report(nil)
		if err == nil {
			if b.cfg.Health != nil {
				b.rt.WG.Add(1)
				go func() {
					defer b.rt.WG.Done()
					b.checkHealth(up)
				}()
			}
			if b.waitUp(up) {
				// Idle: stopped on purpose, not a failure.
				b.log.Info("server idle; stopping it until a call needs it", "idle_timeout", b.cfg.IdleTimeout)
				_ = up.Close()
				attempt, failures = 0, nil
				if !b.waitForUse() {
					return
				}
				continue
			}
			if b.closing() || b.stopped() {
				return
			}
			_ = up.Close() // releases what is left; quick once Done
			if b.closing() || b.stopped() {
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
			b.setDown(StateFailed, err, time.Time{})
			select {
			case <-b.rt.Closed:
			case <-b.quit:
			}
			return
		}
		st, delay := StateRestarting, backoff(pol, attempt)
		attempt++
		if len(failures) >= pol.Crashes {
			st, delay = StateFailed, pol.FailedRetry
			b.log.Error("server keeps failing; marked failed and retried rarely",
				"failures", len(failures), "window", pol.Window, "next_try_in", delay)
		}
		b.setDown(st, err, now.Add(delay))
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-b.rt.Closed:
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
func (b *Backend) waitUp(up *upstream.Upstream) bool {
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
		case <-b.rt.Closed:
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

// stopped reports whether b was stopped (proxy closed, or removed by reload).
func (b *Backend) stopped() bool {
	select {
	case <-b.quit:
		return true
	default:
		return false
	}
}

// closing reports whether the proxy is closing.
func (b *Backend) closing() bool {
	select {
	case <-b.rt.Closed:
		return true
	default:
		return false
	}
}

// setDown records that b is not serving, why, and when it is tried again.
func (b *Backend) setDown(st State, err error, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == StateStopped {
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
func (b *Backend) fetchLists(ctx context.Context, up *upstream.Upstream, want ListKind, prev Lists) (Lists, error) {
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
	if want&KindTools != 0 && caps.Tools != nil {
		run(func() { out.Tools, errs[0] = drain(cs.Tools(ctx, nil), "tools/list", prev.Tools) })
	}
	if want&KindPrompts != 0 && caps.Prompts != nil {
		run(func() { out.Prompts, errs[1] = drain(cs.Prompts(ctx, nil), "prompts/list", prev.Prompts) })
	}
	if want&KindResources != 0 && caps.Resources != nil {
		run(func() { out.Resources, errs[2] = drain(cs.Resources(ctx, nil), "resources/list", prev.Resources) })
	}
	if want&KindTemplates != 0 && caps.Resources != nil {
		run(func() {
			out.Templates, errs[3] = drain(cs.ResourceTemplates(ctx, nil), "resources/templates/list", prev.Templates)
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

// RequestRefresh marks kinds of b's lists stale and makes sure one refresh loop
// runs for b. Bursts of list_changed coalesce into one listing.
func (b *Backend) RequestRefresh(kinds ListKind) {
	b.mu.Lock()
	b.dirty |= kinds
	if b.fetching {
		b.mu.Unlock()
		return
	}
	b.fetching = true
	b.mu.Unlock()
	b.rt.WG.Add(1)
	go func() {
		defer b.rt.WG.Done()
		// A short pause lets a burst of notifications arrive before listing.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-b.rt.Closed:
		}
		for {
			b.mu.Lock()
			kinds := b.dirty
			b.dirty = 0
			up, prev, st := b.up, b.lists, b.state
			if kinds == 0 || up == nil || st != StateUp || b.closing() {
				b.fetching = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			l, err := b.fetchLists(context.Background(), up, kinds, prev)
			if err != nil {
				b.log.Warn("re-listing after list_changed failed; keeping the previous list", "err", err)
			}
			b.mu.Lock()
			b.lists = l
			b.listed = b.listed || err == nil
			b.mu.Unlock()
			if b.hooks.ListChanged != nil {
				b.hooks.ListChanged(kinds)
			}
		}
	}()
}
