// Package upstream runs one backend MCP server for the proxy: it spawns a child
// process (or dials a remote streamable HTTP / SSE endpoint), speaks MCP to it as a
// client through a tolerant transport, forwards tools/call frames on a lean raw path,
// and stops it cleanly. It knows nothing of names, policy or other upstreams, and it
// never restarts a server by itself: the caller watches Done and decides.
//
// A child process runs in its own process group. Its stderr is logged line by
// line; lines on its stdout that are not JSON-RPC are logged and dropped, never
// fatal. When the child exits, the rest of its group is killed, so no grandchild
// (such as the node process behind npx) outlives it.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrClosed is returned by calls on an upstream whose connection has ended.
var ErrClosed = errors.New("upstream connection closed")

// ErrNotReading is returned for a request to a server process that has left
// more than twice its largest message unread on its input: it gets no more
// until it reads.
var ErrNotReading = errors.New("the server is not reading its input")

// protocolVersion pins every upstream connection (see go-sdk-notes §0.1).
const protocolVersion = "2025-11-25"

// ModernVersion is the protocol version of the stateless era (no
// initialize; server/discover; _meta on every request).
const ModernVersion = "2026-07-28"

// Defaults for the zero values of Options.
const (
	defaultStartupTimeout  = 30 * time.Second
	defaultMaxMessageBytes = 64 << 20
	defaultStopGrace       = 2 * time.Second
)

// Options describes one upstream server.
type Options struct {
	// Name is the server's key in the config; it tags logs and errors.
	Name string

	// Command, Args, Env and Dir describe a stdio child process.
	// Env entries are KEY=VALUE and are added to the proxy's environment.
	// If Dir is empty, the child runs in the proxy's working directory.
	Command string
	Args    []string
	Env     []string
	Dir     string

	// URL, Headers and Transport describe a remote server. Transport is
	// "streamable" or "sse"; if empty, "streamable". Headers are set on every
	// HTTP request; if nil, none.
	URL       string
	Headers   map[string]string
	Transport string
	// OAuth, if set, puts the stored OAuth credential it names on every
	// request to the remote server (streamable transport only), refreshes
	// it, and turns a 401 that a refresh does not cure into an *AuthError
	// (errors.Is ErrUnauthorized). If nil, the requests carry Headers only.
	OAuth *OAuth
	// Exchange, if set (and OAuth not), puts on every request a token
	// exchanged (RFC 8693) for the caller's own downstream token; the
	// proxy sets it on the connection of each identity.
	Exchange *Exchange

	// StartupTimeout bounds spawning and initialize. If zero, 30s.
	StartupTimeout time.Duration
	// MaxMessageBytes bounds one inbound frame. If zero, 64 MiB.
	MaxMessageBytes int
	// StopGrace is the wait between the steps of the stop sequence. If zero, 2s.
	StopGrace time.Duration
	// StdinGrace is how long a stopping child is given to exit after its
	// stdin closes, before its group gets SIGTERM (one-shot commands, whose
	// answer is already printed, make it short for servers that ignore the
	// end of their input). If zero, StopGrace.
	StdinGrace time.Duration

	// Protocol pins the protocol era: ProtocolAuto probes server/discover
	// (a child process, once per server: the verdict is cached in Eras) or
	// lets the SDK's discover-then-initialize decide (a remote server, once
	// per origin); ProtocolModern ("2026-07-28") speaks only the stateless
	// era and fails against a server that does not; ProtocolLegacy sends no
	// server/discover and initializes at 2025-11-25. If empty, auto. A
	// server reached through Dial (a plugin) and an "sse" server always
	// speak the initialize era.
	Protocol string
	// ProbeTimeout bounds the wait for the answer to the server/discover
	// probe of a server whose era is not cached. If zero,
	// DefaultProbeTimeout. A server pinned or cached as modern is given
	// StartupTimeout instead.
	ProbeTimeout time.Duration
	// PreferLegacy asks for the initialize era from a server that speaks
	// both (its DiscoverResult lists an initialize-era version too): the
	// proxy sets it when the one client this process serves speaks that
	// era, so that the server's own server->client requests work as they do
	// directly, with no bridge. A server that speaks only 2026-07-28 is
	// still spoken to in that era.
	PreferLegacy bool
	// Eras caches the era of each server across starts. If nil, every start
	// of an auto server probes.
	Eras *EraCache

	// Dial, if set, supplies the transport to the server instead of Command
	// or URL, for servers the proxy runs in-process (plugins). The
	// transport's owner runs and stops the server. If nil, Command or URL.
	Dial func(ctx context.Context) (mcp.Transport, error)

	// Progress, if set, receives the server's progress notifications for a
	// child process, in wire order with the responses of raw calls (the
	// SDK's handler could see a progress notification after the response it
	// preceded). If nil, ClientOptions.ProgressNotificationHandler gets them.
	Progress func(*mcp.ProgressNotificationParams)

	// Log, if set, receives the server's log messages (notifications/message)
	// for a child process, in wire order with the responses of raw calls, so
	// that a message sent during a call is seen while the call is in flight.
	// If nil, ClientOptions.LoggingMessageHandler gets them.
	Log func(*mcp.LoggingMessageParams) //lint:ignore SA1019 logging is part of the protocol versions the proxy serves

	// Reaper, if set, is told the child's process group so that the group
	// dies with the proxy even when the proxy is killed with SIGKILL. If nil,
	// only the direct child dies with it (Pdeathsig).
	Reaper *Reaper

	// Middleware is receiving middleware installed on the MCP client before it
	// connects, for requests that have no handler option (roots/list). If
	// nil, none.
	Middleware []mcp.Middleware
	// Client carries the MCP client handlers (notifications, server->client
	// requests). If nil, none. It is copied, not retained. If its Logger is
	// nil, the SDK logs to Logger.
	Client *mcp.ClientOptions
	// ClientInfo is how the proxy introduces itself. If nil, {Name:"manifold"}.
	ClientInfo *mcp.Implementation
	// Logger receives the upstream's stderr lines, dropped stdout noise and
	// lifecycle events, tagged upstream=<Name>. If nil, logs are discarded.
	Logger *slog.Logger
}

// Upstream is one running backend connection. Its methods are safe for
// concurrent use.
type Upstream struct {
	name    string
	log     *slog.Logger
	grace   time.Duration
	stdinGr time.Duration // Options.StdinGrace, defaulted
	maxMsg  int
	client  *mcp.Client
	session *mcp.ClientSession
	init    *mcp.InitializeResult // the session's, bounded (sanitize)
	era     EraInfo               // Source, Probe and ProbeCost; set during Start

	logLevel atomic.Pointer[string] // the per-request log level of a modern server; nil: none
	reqMeta  []metaMember           // the _meta of a modern child's raw requests; set during Start

	done chan struct{} // closed when the connection has ended
	err  error         // why it ended; written before done is closed

	closeOnce sync.Once

	child  *child  // set for a child process
	remote *remote // set for a remote server
	local  *local  // set for a server reached through Options.Dial
}

// Start spawns or dials the server and completes initialize within
// opts.StartupTimeout. On failure the error names the server, says what
// happened and carries the tail of the server's stderr; a child process has
// already been killed and reaped by then.
func Start(ctx context.Context, opts Options) (*Upstream, error) {
	if opts.StartupTimeout <= 0 {
		opts.StartupTimeout = defaultStartupTimeout
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = defaultMaxMessageBytes
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = defaultStopGrace
	}
	if opts.StdinGrace <= 0 {
		opts.StdinGrace = opts.StopGrace
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	u := &Upstream{
		name:    opts.Name,
		log:     logger.With("upstream", opts.Name),
		grace:   opts.StopGrace,
		stdinGr: opts.StdinGrace,
		maxMsg:  opts.MaxMessageBytes,
		done:    make(chan struct{}),
	}
	if err := checkProtocol(u.name, opts.Protocol); err != nil {
		return nil, err
	}
	switch {
	case opts.Dial != nil:
		if err := u.dialLocal(ctx, opts); err != nil {
			return nil, err
		}
	case opts.Command != "" && opts.URL != "":
		return nil, fmt.Errorf("upstream %q: both command and url are set; keep one", u.name)
	case opts.Command != "":
		if err := u.startChild(ctx, opts); err != nil {
			return nil, err
		}
	case opts.URL != "":
		if err := u.dial(ctx, opts); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("upstream %q: neither command nor url is set; set one", u.name)
	}
	u.init = sanitize(u.session.InitializeResult())
	var server string
	if info := u.init.ServerInfo; info != nil {
		server = info.Name + " " + info.Version
	}
	u.log.Info("upstream started", "pid", u.PID(), "server", server, "protocol", u.ProtocolVersion(), "era_from", u.era.Source)
	return u, nil
}

// reset forgets a probe process that was stopped, before a fresh one is
// started. Only Start calls it, before anyone else has seen u.
func (u *Upstream) reset() {
	u.done = make(chan struct{})
	u.err = nil
	u.child = nil
}

// newClient builds the SDK client for opts.
func (u *Upstream) newClient(opts Options) *mcp.Client {
	info := opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "manifold"}
	}
	var copts mcp.ClientOptions
	if opts.Client != nil {
		copts = *opts.Client
	}
	if copts.Logger == nil {
		copts.Logger = u.log
	}
	// An input_required result of a modern server reaches the proxy as it
	// came (the proxy bridges it), instead of the SDK answering it.
	copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	u.client = mcp.NewClient(info, &copts)
	u.client.AddReceivingMiddleware(opts.Middleware...)
	u.client.AddSendingMiddleware(u.logLevelMiddleware)
	return u.client
}

// logLevelMiddleware adds the per-request log level (SetLogLevel) to the
// _meta of every request the SDK sends to a modern server, where absent.
func (u *Upstream) logLevelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		lvl := u.logLevel.Load()
		if lvl == nil || strings.HasPrefix(method, "notifications/") || method == "server/discover" {
			return next(ctx, method, req)
		}
		if p := req.GetParams(); p != nil && !isNilParams(p) {
			m := p.GetMeta()
			if m == nil {
				m = map[string]any{}
			}
			if _, ok := m[metaLogLevel]; !ok {
				m[metaLogLevel] = *lvl
				p.SetMeta(m)
			}
		}
		return next(ctx, method, req)
	}
}

// isNilParams reports whether p is a typed nil pointer.
func isNilParams(p mcp.Params) bool {
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// SetLogLevel sets the log level for the server: for the initialize era
// with logging/setLevel (which it returns the error of), for a modern server
// (which has no logging/setLevel) as the per-request level in the _meta of
// every later request.
//
//lint:ignore SA1019 logging is part of the protocol versions the proxy serves
func (u *Upstream) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if !u.Modern() {
		return u.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}) //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	}
	lvl := string(level)
	u.logLevel.Store(&lvl)
	if u.child != nil {
		m := append(slices.Clone(u.reqMeta), metaMember{metaLogLevel, mustJSON(lvl)})
		u.child.meta.Store(&m)
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// NotifyRootsChanged sends notifications/roots/list_changed to the server, so
// that it asks for roots/list again. It does nothing unless the client
// offered the roots capability.
func (u *Upstream) NotifyRootsChanged() {
	// The SDK sends this notification only when the client's own root set
	// changes; roots/list itself is answered by the proxy's middleware, so
	// the stored set is only the trigger.
	u.client.AddRoots(&mcp.Root{URI: "manifold:roots-changed"}) //lint:ignore SA1019 roots are part of the protocol versions the proxy serves
}

// sessionOptions pins the initialize era, for servers reached through Dial.
func sessionOptions() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion}
}

// Name returns the server's key from Options.Name.
func (u *Upstream) Name() string { return u.name }

// Session returns the SDK client session, for everything but the raw path.
func (u *Upstream) Session() *mcp.ClientSession { return u.session }

// ProtocolVersion returns the protocol version negotiated with the server:
// ModernVersion for a server of the stateless era, else the initialize-era
// version it accepted (such as "2025-11-25").
func (u *Upstream) ProtocolVersion() string {
	if u.session == nil {
		return ""
	}
	if ir := u.session.InitializeResult(); ir != nil {
		return ir.ProtocolVersion
	}
	return ""
}

// Modern reports whether the server speaks the stateless era (2026-07-28 or
// later): no initialize, server/discover, and _meta with the protocol version,
// client info and capabilities on every request.
func (u *Upstream) Modern() bool {
	return u.ProtocolVersion() >= ModernVersion
}

// InitializeResult returns what the server said at initialize (or, for a
// modern server, in its DiscoverResult), with its instructions and server
// info bounded and stripped of control characters.
func (u *Upstream) InitializeResult() *mcp.InitializeResult {
	if u.init != nil {
		return u.init
	}
	return sanitize(u.session.InitializeResult())
}

// PID returns the child's pid, which is also its process group id; for a
// server reached through Options.Dial, the pid its transport reports (a
// plugin's); 0 for a remote server.
func (u *Upstream) PID() int {
	switch {
	case u.child != nil:
		return u.child.pid
	case u.local != nil:
		return u.local.pid
	}
	return 0
}

// Done is closed when the connection has ended: the server crashed or exited,
// closed its stdout or stream, or Close was called. Call Close afterwards to
// release what is left.
func (u *Upstream) Done() <-chan struct{} { return u.done }

// Err says why the connection ended; nil while it runs. The error wraps
// ErrClosed; after a crash it carries the exit status and the stderr tail.
func (u *Upstream) Err() error {
	select {
	case <-u.done:
		return u.err
	default:
		return nil
	}
}

// StderrTail returns the last lines (at most 20, about 4 KiB) the child wrote
// to stderr; empty for a remote server.
func (u *Upstream) StderrTail() string {
	if u.child == nil {
		return ""
	}
	return u.child.stderr.String()
}

// CallToolRaw sends tools/call with the given raw params object and returns the
// raw result object. An error response from the server comes back as a
// *jsonrpc.Error with its code, message and data intact; a cancelled ctx
// cancels the call upstream and returns ctx.Err(); a call on an ended
// connection returns an error wrapping ErrClosed.
func (u *Upstream) CallToolRaw(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	if u.child != nil {
		return u.child.callTool(ctx, params)
	}
	return u.callToolSDK(ctx, params)
}

// CallToolRawAsync is CallToolRaw without waiting: it sends the call and
// returns; done is called exactly once with what CallToolRaw would return.
// For a child process done runs on the goroutine that reads the server's
// output, so it must not block for long; it may run before CallToolRawAsync
// returns.
func (u *Upstream) CallToolRawAsync(ctx context.Context, params json.RawMessage, done func(json.RawMessage, error)) {
	if u.child != nil {
		u.child.callToolAsync(ctx, params, done)
		return
	}
	go func() { done(u.callToolSDK(ctx, params)) }()
}

// callToolSDK is CallToolRaw through the SDK session, for remote servers.
func (u *Upstream) callToolSDK(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	select {
	case <-u.done:
		return nil, u.err
	default:
	}
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("upstream %q: tools/call params are not a JSON object: %w", u.name, err)
	}
	cp := &mcp.CallToolParams{
		Meta:           p.Meta,
		Name:           p.Name,
		InputResponses: p.InputResponses,
		RequestState:   p.RequestState,
	}
	if len(p.Arguments) > 0 {
		cp.Arguments = p.Arguments // absent stays absent: a nil interface, not a nil RawMessage
	}
	res, err := u.session.CallTool(ctx, cp)
	if err != nil {
		var we *jsonrpc.Error
		var ae *AuthError
		switch {
		case errors.As(err, &ae): // before *jsonrpc.Error: it comes wrapped in the transport's ErrRejected
			return nil, ae
		case errors.As(err, &we):
			return nil, we
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, mcp.ErrConnectionClosed):
			return nil, fmt.Errorf("upstream %q: tools/call %q: %v: %w", u.name, p.Name, err, ErrClosed)
		}
		select {
		case <-u.done:
			return nil, fmt.Errorf("upstream %q: tools/call %q: %v: %w", u.name, p.Name, err, ErrClosed)
		default:
		}
		return nil, fmt.Errorf("upstream %q: tools/call %q: %w", u.name, p.Name, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: tools/call %q: encoding result: %w", u.name, p.Name, err)
	}
	return out, nil
}

// Close stops the server: for a child, stdin is closed, then after StdinGrace
// its group gets SIGTERM, then after StopGrace SIGKILL, and it is reaped; for
// a remote server, the session is closed and, after StopGrace, what is still
// open is aborted. Close is idempotent; every call waits until the server is
// gone. It returns nil; Err says how the connection ended.
func (u *Upstream) Close() error {
	u.closeOnce.Do(func() {
		switch {
		case u.child != nil:
			u.child.stop()
		case u.remote != nil:
			u.remote.stop()
		default:
			u.local.stop()
		}
		<-u.done
		// The connection is over, so this returns once the SDK's handlers do.
		_ = u.session.Close()
		u.log.Info("upstream stopped")
	})
	return nil
}

// tail keeps the last lines of a stream, bounded in count and bytes.
type tail struct {
	mu    sync.Mutex
	lines []string // guarded by mu
	size  int      // guarded by mu; bytes in lines
}

const (
	tailLines = 20
	tailBytes = 4 << 10
)

func (t *tail) add(line string) {
	if len(line) > tailBytes {
		line = line[:tailBytes]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.size += len(line)
	for len(t.lines) > tailLines || t.size > tailBytes {
		t.size -= len(t.lines[0])
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// withTail formats the stderr tail for an error message.
func withTail(s string) string {
	if s == "" {
		return " (no stderr output)"
	}
	return fmt.Sprintf(" (stderr: %q)", s)
}
