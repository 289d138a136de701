// Package proxy is Manifold's aggregating MCP server: it starts the configured
// upstreams, merges and namespaces their tools, prompts, resources and resource
// templates into one catalog, routes every request to the upstream that owns it,
// rewrites names and resource URIs both ways, and serves the whole over stdio or
// streamable HTTP.
//
// It must not know about the config file format, go-plugin or the command line: it
// receives typed [Options]. Each backend is an [upstream.Upstream]; proxy knows
// names and routing, upstream knows one connection.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/bridge"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/guard"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/pin"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/proxy/route"
	"github.com/manifold-mcp/manifold/proxy/search/embedcache"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// DefaultMaxNameLength is the default budget of an exposed name: with the
// entry name "manifold", Claude Code's "mcp__manifold__<name>" is then at
// most 64 characters, and Gemini CLI's "mcp_manifold_<name>" at most 62.
const DefaultMaxNameLength = 64 - len("mcp__manifold__")

// Version is the proxy's version, reported in serverInfo.
var Version = "0.1.0-dev"

// Sentinel errors, checked with errors.Is.
var (
	// ErrRequiredFailed means a server marked required could not be started.
	ErrRequiredFailed = supervise.ErrRequiredFailed
)

// ServerConfig is one upstream server as the proxy sees it.
type ServerConfig struct {
	// Upstream says how to start and reach the server. Its Name is the server's
	// key; its Logger and Client fields are set by the proxy.
	Upstream upstream.Options
	// Prefix namespaces the server's tool and prompt names (Prefix + "__" + name)
	// and its resource URIs. If empty, names and URIs are exposed unchanged.
	Prefix string
	// Required makes a failure to start this server fatal for Start.
	Required bool
	// CallTimeout bounds one call to this server. If zero, Options.CallTimeout.
	CallTimeout time.Duration
	// Restart says how the server is restarted when it exits.
	Restart RestartPolicy
	// Health, if set, checks the server through the real path periodically.
	Health *HealthCheck
	// PerSession gives each downstream HTTP session a process of its own
	// (isolation = "session"); stdio has one session, so it changes nothing
	// there. If false, all sessions share one process.
	PerSession bool
	// PerIdentity makes each caller's calls, reads and prompt gets travel on
	// a connection of its own that carries that caller's stored credential
	// (credentials = "identity"; Upstream.OAuth set, its Identity filled in
	// per caller). The shared connection (the service credential or none)
	// keeps the catalog and the health checks. If false, every caller uses
	// the shared connection. For a stdio server (isolation = "identity")
	// the caller's own connection is a process of its own, started with
	// IdentityEnv's entry for the caller added to Upstream.Env.
	PerIdentity bool
	// IdentityEnv are the KEY=VALUE environments of the identities
	// ("user:SUBJECT") of a stdio server with PerIdentity; a caller without
	// an entry is refused. If nil, every caller is refused.
	IdentityEnv map[string][]string
	// Lazy starts the server on the first call that needs it; until then its
	// tools are advertised from the last successful listing (Options.CacheDir).
	Lazy bool
	// IdleTimeout stops the server when no call used it for that long; the
	// next call starts it again. If zero, it is never stopped for idleness.
	IdleTimeout time.Duration
	// Fingerprint, if set, identifies the server's config for Reload: a server
	// whose fingerprint is unchanged keeps its process. If empty, the fields
	// are compared (a server with Upstream.Dial then always restarts).
	Fingerprint string
	// Description says what the server is for, in a sentence: its line in
	// the proxy's instructions summary and its text in search. If empty, the
	// first sentence of the server's initialize instructions stands in. A
	// reload that changes only the description keeps the server's process.
	Description string
	// Instructions merges the server's initialize instructions into the
	// proxy's, under the server's name. If false, they are left out: they go
	// into the model's system prompt, so including them is an opt-in.
	Instructions bool
	// Pin says what happens to a definition of the server that is new or
	// changed since it was approved (Options.Lock), or flagged: hidden
	// (PinQuarantine) or served and flagged (PinWarn). If zero (PinOff),
	// nothing is checked.
	Pin PinMode
	// AllowUnsolicited lets the server ask its client for sampling or
	// elicitation outside any call of that client. If zero, such requests are
	// refused with an error that names this option.
	AllowUnsolicited Unsolicited
}

// Unsolicited names the server->client requests a server may send outside
// any call of its client (relay.Unsolicited).
type Unsolicited = relay.Unsolicited

// Options configures a Server.
type Options struct {
	// Servers are the upstreams, in priority order: when two servers would
	// expose the same name, the earlier one keeps it.
	Servers []ServerConfig
	// LeftOut are configured servers that the proxy does not run, because
	// their configuration cannot be used as it stands; Status reports each
	// as state "misconfigured" with its error. SetLeftOut replaces them.
	LeftOut []LeftOut
	// CallTimeout bounds one call to an upstream. If zero, 60s.
	CallTimeout time.Duration
	// StateKey keys the requestState values handed to modern clients
	// (HMAC-SHA256; at least 32 bytes), so that replicas sharing it accept
	// each other's states. If empty, a random key of this process.
	StateKey []byte
	// StateTTL bounds how long a requestState stays valid. If zero, or
	// longer than the call's timeout, the call's timeout.
	StateTTL time.Duration
	// MaxInputRounds bounds the rounds of input a legacy client is asked
	// for on behalf of a modern server in one call. If zero, 10.
	MaxInputRounds int
	// FirstListWait bounds how long a list request (tools, prompts,
	// resources, templates), and the instructions of an initialize, wait
	// for upstreams whose catalog is not known yet: neither cached by an
	// earlier run nor listed by their initial start. After it the list
	// holds the servers that are known, and each session that listed gets
	// list_changed as the others arrive. Many clients list once, right
	// after initialize, and give a server only so long to answer. If zero,
	// as long as the client allows, by its clientInfo name: 500ms for
	// Codex, 20s for Claude Code, Gemini CLI and opencode, 8s for any
	// other (firstlist.go).
	FirstListWait time.Duration
	// FirstListTimeout bounds how long a request for a name that is not (yet)
	// in the catalog (a tool call, prompt get, resource read, completion)
	// waits for upstreams still in their initial start: the name may belong
	// to one of them. If zero, 10s.
	FirstListTimeout time.Duration
	// MaxNameLength is the longest exposed tool or prompt name; longer ones
	// are shortened deterministically (see package naming). Claude Code sends
	// names to the model as "mcp__<entry>__<name>" and the model API takes 64
	// characters. If zero, 49: 64 - len("mcp__manifold__").
	MaxNameLength int
	// MaxMessageBytes bounds one inbound frame from the downstream client. If
	// zero, 64 MiB.
	MaxMessageBytes int
	// Policy decides what is visible and callable; nil allows everything.
	Policy *policy.Rules
	// Audit, if set, receives one JSON line per call, resource read and
	// prompt get.
	Audit io.Writer
	// AuditArguments adds the calls' argument values, with secrets redacted,
	// to the audit lines.
	AuditArguments bool
	// Metrics keeps Prometheus metrics, served by [Server.MetricsHandler]
	// and at /metrics of [Server.HTTPHandler]. If false, nothing is counted.
	Metrics bool
	// Tracer, if set, makes an OpenTelemetry span of every request and
	// passes the trace context on to the upstreams (trace.go); Close shuts
	// it down, exporting the spans left. If nil, nothing is traced.
	Tracer *telemetry.Tracer
	// Reaper, if set, is given to every stdio server so that its whole process
	// group dies with the proxy, even when the proxy is killed with SIGKILL;
	// Close closes it last. If nil, only each server's direct child dies
	// with the proxy.
	Reaper *upstream.Reaper
	// CacheDir holds each server's last successful listing, which lazy
	// servers advertise before they run. If empty, nothing is cached.
	CacheDir string
	// WaitForClient makes Start wait for the first downstream client's
	// initialize and offer upstreams the client capabilities that client
	// declared (sampling, elicitation; roots only with PerSession): the stdio
	// mode, with one client. If false (HTTP), upstreams start at once and a
	// shared one is offered none, since it serves every session; a session's
	// own process (PerSession) is offered what that session declared.
	WaitForClient bool
	// Logger receives the proxy's and the upstreams' logs. If nil, logs are
	// discarded. Hiding secrets in it is the caller's job (Redactor.Writer
	// under its handler).
	Logger *slog.Logger
	// Catalog says which tool list each client gets: every tool, or the
	// search surface (surface.go). If zero, every client gets every tool.
	// SetCatalog replaces it.
	Catalog CatalogOptions
	// ConfirmTTL is how long a person has to answer a request to approve a
	// call (policy Confirm), and how long an approval id waits for
	// `manifold approve-call` and the retry. If zero, 5 minutes.
	ConfirmTTL time.Duration
	// ApprovalDir is the folder, private to the user, through which
	// `manifold approve-call` approves the calls of clients that cannot
	// elicit (proxy/confirm). If empty, such calls are refused with no way to
	// approve them.
	ApprovalDir string
	// Redactor hides secrets in what the proxy shows: Status, Explain, the
	// /status and /readyz bodies and the audit lines. If nil, one that hides
	// credential shapes only.
	Redactor *redact.Redactor
	// Lock holds the approved definitions of the servers whose Pin is set
	// (the lock file); SetLock replaces it. If nil, none is approved yet:
	// each such server's clean definitions are trusted on first use.
	Lock *pin.Lock
	// OnTrust, if set, is called with the definitions trusted on first use
	// (a server of which Lock held nothing), to record them in the lock
	// file. Called with the catalog's lock held: it must not call back
	// into the Server.
	OnTrust func([]pin.Entry)
	// SpendLedger records what calls spent against the policy's budgets
	// (proxy/guard). If nil, a ledger in the memory of this process.
	SpendLedger SpendLedger
	// RateStore keeps the rate limits' buckets (shared.go). If nil, buckets
	// in the memory of this process.
	RateStore RateStore
	// Approvals shares the approvals given with `manifold approve-call`
	// between replicas (proxy/confirm); ApprovalDir is then not used. If nil,
	// approvals go through ApprovalDir, for this process only.
	Approvals ApprovalStore
	// Sessions keeps the records of the initialize era's HTTP sessions, so
	// that any replica serves a session another created (proxy/serve/streamable session.go).
	// If nil, a session is known to the process that created it only.
	Sessions SessionStore
	// Answers carries a legacy HTTP client's answer to a server→client
	// request to the replica that asked it, when the answer reaches another
	// (proxy/serve/streamable answerrelay.go). If nil, such an answer is handed to this process's
	// session as it came, and a question another replica asked is not
	// answered.
	Answers AnswerRelay
	// Retries carries the retry of a 2026-07-28 client's call parked on a
	// legacy server to the replica that holds the call, when the retry
	// reaches another (proxy/bridge). If nil, such a retry is refused.
	Retries RetryRelay
}

// Server is the aggregating MCP server.
type Server struct {
	opts       Options
	log        *slog.Logger
	server     *mcp.Server
	serverInfo []byte // implementation() as JSON, for the lean path's modern results
	typed      bool   // tests only: answer tools/call and tools/list with typed results (httplean.go, listbytes.go)

	gen      atomic.Pointer[generation] // the configured servers; replaced by Reload
	reloadMu sync.Mutex                 // serialises Reload

	catalog atomic.Pointer[catalog] // the merged view, swapped whole

	sessions session.Book // the downstream sessions and clients: their modes, calls in flight, first-list waits

	relay    *relay.Relay       // what upstreams send towards clients: requests, logs, progress (proxy/relay)
	eras     *upstream.EraCache // each server's protocol era, across restarts and reloads
	rules    atomic.Pointer[policy.Rules]
	bridge   *bridge.Bridges            // sealed states and parked calls (proxy/bridge)
	approver *confirm.Approver          // a person's approval of calls, approve-call, URL-mode pages (proxy/confirm)
	answerTo atomic.Pointer[answerSink] // receives the answers other replicas relay (face_http.go ListenAnswers)
	guard    *guard.Guard
	pipeline *route.Route               // the call pipeline (proxy/route)
	obs      *observe.Observer          // the audit log, metrics and traces of each request
	resume   atomic.Pointer[eventStats] // the HTTP endpoint's event store's figures, for the metrics; nil over stdio

	// The server's components besides the rooms: what the rebuild loop
	// keeps between rebuilds (catalog.go, pinned.go), where the server is in
	// its life (Start, Close, Drain), and the downstream client of a
	// stdio server (the capabilities offered to upstreams).
	builder rebuildState
	run     running
	client  downClient
}

// rebuildState is what the rebuild loop keeps between rebuilds: the
// SDK registration, the pins and their caches, the catalog options, the
// search encoder's embeddings and what was already logged.
type rebuildState struct {
	regGen       atomic.Uint64 // changes of the SDK's registry, for the prepared lists (listbytes.go)
	schemaWarned sync.Map      // tool name + untranslatable schema parts already logged
	// embeds are the search encoder's embeddings (CatalogOptions.Encoder),
	// made at the first catalog that wants them and kept across rebuilds.
	embedsMu sync.Mutex
	embeds   *embedcache.Cache
	rebuilds rebuildQueue // coalesces rebuild requests (catalog.go)
	catMu    sync.Mutex   // serialises catalog rebuilds and SDK registration
	reg      registered   // what is registered with the SDK server; guarded by catMu
	scratch  *mcp.Server  // guarded by catMu; checks tool schemas as the SDK would (checkHeaderTools)
	derived  cat.Derived  // guarded by catMu; the exposed definitions of the last rebuild (catalog.go)
	// dupWarned are the names a server listed twice that were logged
	// (dropDuplicates), by server, kind and name; guarded by catMu.
	dupWarned    map[string]bool
	leftOut      atomic.Pointer[[]LeftOut]       // Options.LeftOut; replaced by SetLeftOut
	catOpts      atomic.Pointer[CatalogOptions]  // which tool list each client gets (surface.go)
	alwaysWarned sync.Map                        // CatalogOptions.Always names already logged as not visible
	pins         atomic.Pointer[pin.Lock]        // approved definitions (pinned.go); stored with catMu held
	unconfirmed  map[pin.Key]pin.Entry           // guarded by catMu; trusted on first use, not yet in a lock given to SetLock
	pinCache     map[*backend]*pinCache          // guarded by catMu; each server's fingerprinted definitions (pinned.go)
	heldInstr    atomic.Pointer[map[string]bool] // servers whose instructions are held for review
	pinLogged    sync.Map                        // reviews already logged
}

// running is where the Server is in its life: started, every upstream's
// first start over (ready) or its catalog known (listable), the first
// call, draining, stopping, closed; and the goroutines it waits for.
type running struct {
	draining   atomic.Bool   // Drain was called: /readyz is 503, new HTTP work is refused
	stopping   atomic.Bool   // Close has begun: no call is handed to an upstream
	inflight   atomic.Int64  // HTTP requests to /mcp being served, GET streams left out
	ready      chan struct{} // closed when every upstream's initial start has finished
	listable   chan struct{} // closed when every upstream's catalog is known (cached or live) or its initial start has finished
	called     chan struct{} // closed at the first tools/call (Called)
	calledOnce sync.Once
	startOnce  sync.Once
	started    bool // guarded by reloadMu; Start has launched the servers
	closeOnce  sync.Once
	closed     chan struct{}
	wg         sync.WaitGroup // background goroutines (supervisors, refreshers)
	life       context.Context
	cancel     context.CancelFunc // ends life at Close
}

// downClient is the stdio server's one downstream client as the upstreams
// are offered it: its capabilities, once known, and its era.
type downClient struct {
	capsMu       sync.Mutex
	clientCaps   *mcp.ClientCapabilities // guarded by capsMu; offered to upstreams
	clientUp     chan struct{}           // closed at the first downstream initialize
	clientOnce   sync.Once
	clientModern atomic.Bool // the stdio client speaks 2026-07-28 (set with clientOnce)
}

// New validates opts and builds a Server. It starts nothing; call Start.
func New(opts Options) (*Server, error) {
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 60 * time.Second
	}
	if opts.FirstListTimeout == 0 {
		opts.FirstListTimeout = 10 * time.Second
	}
	if opts.MaxNameLength == 0 {
		opts.MaxNameLength = DefaultMaxNameLength
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = 64 << 20
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New()
	}
	s := &Server{
		eras: newEraCache(opts.CacheDir, log),
		opts: opts,
		log:  log,
		run: running{
			ready:    make(chan struct{}),
			listable: make(chan struct{}),
			called:   make(chan struct{}),
			closed:   make(chan struct{}),
		},
		client: downClient{clientUp: make(chan struct{})},
		guard:  guard.New(guard.Options{Rates: opts.RateStore, Ledger: opts.SpendLedger, Redactor: opts.Redactor}),
		approver: confirm.New(confirm.Options{TTL: opts.ConfirmTTL, Dir: opts.ApprovalDir, Store: opts.Approvals,
			Redactor: opts.Redactor, Logger: log, Parked: confirmParked()}),
	}
	s.run.life, s.run.cancel = context.WithCancel(context.Background())
	s.rules.Store(opts.Policy)
	s.builder.pins.Store(opts.Lock)
	s.builder.catOpts.Store(&opts.Catalog)
	s.builder.leftOut.Store(&opts.LeftOut)
	obsOpts := observe.Options{AuditArguments: opts.AuditArguments, Tracer: opts.Tracer, Listed: func(tool string) bool {
		_, _, ok := s.catalog.Load().VisibleTool(tool, policy.Widest)
		return ok
	}}
	if opts.Audit != nil {
		obsOpts.Audit = opts.Redactor.Writer(opts.Audit)
	}
	if opts.Metrics {
		obsOpts.Metrics = s.newMetrics()
	}
	s.obs = observe.New(obsOpts)
	s.relay = s.newRelay()
	s.bridge = s.newBridges()
	s.pipeline = s.newRoute()
	g, err := s.newGeneration(opts.Servers, nil)
	if err != nil {
		return nil, err
	}
	s.gen.Store(g)
	s.catalog.Store(newCatalog(g, opts.Catalog, s.embedCache(opts.Catalog)))
	s.server = s.newMCPServer()
	// The servers listed by an earlier run are in the catalog before any
	// client can list it.
	adopted := false
	for _, b := range g.backends {
		if _, now := b.AdoptCache(); now {
			b.MarkListable()
			adopted = true
		}
	}
	if adopted {
		s.rebuild()
	}
	return s, nil
}

// Start launches every upstream concurrently, each bounded by its startup
// timeout. A server that fails is logged with the tail of its stderr and left
// out; the others serve. Start returns once the required servers are up (or one
// of them failed, which is an error wrapping ErrRequiredFailed); the others keep
// starting in the background and join the catalog when ready. With
// Options.WaitForClient it first waits for the downstream client's initialize.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.WaitForClient {
		select {
		case <-s.client.clientUp:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.run.closed:
			return nil
		}
	}
	var required errgroup.Group
	var all, listable sync.WaitGroup
	s.run.startOnce.Do(func() {
		s.startRetries() // bridge.go
		s.reloadMu.Lock()
		defer s.reloadMu.Unlock()
		for _, b := range s.gen.Load().backends {
			all.Add(1)
			listable.Add(1)
			done := b.Launch()
			s.run.wg.Add(1)
			go func() {
				defer s.run.wg.Done()
				<-b.Listable()
				listable.Done()
				<-b.Started()
				all.Done()
			}()
			if b.Required() {
				required.Go(func() error { return <-done })
			}
		}
		s.run.started = true
		s.run.wg.Add(1)
		go func() {
			defer s.run.wg.Done()
			listable.Wait()
			close(s.run.listable)
			all.Wait()
			close(s.run.ready)
		}()
	})
	return required.Wait()
}

// Ready is closed when every upstream's initial start attempt has finished.
func (s *Server) Ready() <-chan struct{} { return s.run.ready }

// Called is closed when the first tools/call begins: the end of a client's
// opening (initialize, the lists) and the start of its work.
func (s *Server) Called() <-chan struct{} { return s.run.called }

// waitReady waits, bounded by FirstListTimeout, for the initial start.
func (s *Server) waitReady(ctx context.Context) {
	s.waitReadyFor(ctx, s.opts.FirstListTimeout)
}

// waitReadyFor waits, bounded by d, for the initial start.
func (s *Server) waitReadyFor(ctx context.Context, d time.Duration) {
	s.waitFor(ctx, s.run.ready, d)
}

// waitListable waits, bounded by the first-list wait of client (its
// clientInfo name), until every server's catalog is known: from the cache
// of an earlier run at once, else from the end of its initial start. A list
// answered then holds every server it can. The bound runs from the
// session's first wait (its initialize), not from each request: the client's
// patience covers its initialize and its first list together.
func (s *Server) waitListable(ctx context.Context, ss *mcp.ServerSession, client string) {
	select {
	case <-s.run.listable:
		return
	default:
	}
	d := session.FirstListWait(client, s.opts.FirstListWait)
	if ss != nil {
		var first bool
		if d, first = s.sessions.Waits.Left(ss, d, time.Now()); first {
			s.whenSessionEnds(ss, func() { s.sessions.Waits.Forget(ss) })
		}
		if d <= 0 {
			return
		}
	}
	s.waitFor(ctx, s.run.listable, d)
}

// waitFor waits, bounded by d, ctx and Close, for ch to close.
func (s *Server) waitFor(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	select {
	case <-ch:
		return
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-s.run.closed:
	}
}

// Logger returns the proxy's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Redactor returns the proxy's Options.Redactor, to render anything else the
// proxy reports, and to learn the secrets of a reloaded config.
func (s *Server) Redactor() *redact.Redactor { return s.opts.Redactor }

// Close stops every upstream in parallel and waits for the proxy's goroutines.
// It is idempotent.
func (s *Server) Close() error {
	var errs []error
	s.run.closeOnce.Do(func() {
		s.run.stopping.Store(true)
		close(s.run.closed)
		s.run.cancel()
		s.approver.Close()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, b := range s.gen.Load().backends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.Close(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		s.run.wg.Wait()
		s.builder.embedsMu.Lock()
		embeds := s.builder.embeds
		s.builder.embedsMu.Unlock()
		if embeds != nil {
			embeds.Close()
		}
		if err := s.opts.Reaper.Close(); err != nil {
			errs = append(errs, fmt.Errorf("reaper: %w", err))
		}
		if s.obs.Tracing() {
			// The spans not yet exported go now, briefly: a collector
			// that is down does not hold the exit.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if err := s.obs.Shutdown(ctx); err != nil {
				s.log.Warn("traces: exporting the last spans failed", "err", err)
			}
			cancel()
		}
	})
	s.run.wg.Wait()
	return errors.Join(errs...)
}

// quietHandler drops records below min: the SDK logs every session's
// connection at info level, which is noise in the proxy's log.
type quietHandler struct {
	slog.Handler
	min slog.Level
}

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as), h.min}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name), h.min}
}
