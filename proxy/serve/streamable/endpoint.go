package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// Options configures the streamable HTTP endpoint.
type Options struct {
	// AllowedHosts are Host header names accepted besides localhost,
	// 127.0.0.1 and ::1 (any port). If empty, only those.
	AllowedHosts []string
	// AllowedOrigins are Origin header values (scheme://host[:port]) accepted
	// besides loopback origins. If empty, only loopback origins; requests
	// without an Origin header (non-browser clients) are always accepted.
	AllowedOrigins []string
	// SessionTimeout closes a session that has had no request open and no
	// call in flight for that long. If zero, 10 minutes.
	SessionTimeout time.Duration
	// MaxSessions caps the sessions open at once; a new one beyond it is
	// refused with 503. If zero, 100.
	MaxSessions int
	// MaxRequestBytes bounds one request body; a larger one is refused with
	// 413. If zero, 4 MiB.
	MaxRequestBytes int64
	// HeaderTimeout bounds reading a request's headers, BodyTimeout reading
	// its body (408 when it runs out). Neither bounds the response: SSE
	// streams and long calls are not cut. If zero, 10s and 30s.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	// Authenticate, if not nil, guards /mcp, /status and /status/clients
	// (not the probes /healthz and /readyz): it answers a request without
	// valid credentials itself, and lets the others through with the
	// caller's identity on the context as the SDK's auth.TokenInfo (see
	// auth.RequireBearerToken): UserID is the user a session is bound to,
	// Extra["subject"] (string) and Extra["groups"] ([]string) are shown in
	// the audit line and status. If nil, every request is served (loopback
	// without authentication).
	Authenticate func(http.Handler) http.Handler
	// Public are more routes served without authentication, by ServeMux
	// pattern (the protected resource metadata of RFC 9728); they pass the
	// Host check but not the Origin check, since a browser client reads them
	// from its own origin. If nil, none.
	Public map[string]http.Handler
	// MaxBufferedBytes bounds the request bodies being received or waiting
	// for the SDK to read them, all requests together (a body of unknown
	// length counts as MaxRequestBytes); a request that finds no room within
	// BodyTimeout is refused with 503. If zero, 16 × MaxRequestBytes.
	MaxBufferedBytes int64
	// MaxEventBytes bounds the SSE events kept so that a client of the
	// initialize era can resume a dropped stream (GET with Last-Event-ID),
	// all sessions together, the records of the streams and events counted
	// (eventstore.go): past it the oldest events are dropped first, a
	// stream with its last one, and a resume that needs them is refused.
	// The streams of answers delivered to a client still connected keep at
	// most a sixteenth of it and go first. A session's events are dropped
	// when it ends. If zero, 10 MiB.
	MaxEventBytes int

	// primeDelay is how long a lean call of 2025-11-25 may take to be
	// answered with one application/json response (runLean); if zero, the
	// constant primeDelay. Tests set it to keep a quick call off the timer.
	primeDelay time.Duration

	// ApprovalBase is the loopback URL of the listener ("http://127.0.0.1:7777")
	// under which the proxy serves the pages of URL-mode approvals
	// (proxy/confirm/page.go) to clients that declared elicitation.url. If empty,
	// no page is served and those clients are asked with a form.
	ApprovalBase string
}

// WithPrimeDelay returns o with the time a lean call of 2025-11-25 may take
// to be answered with one application/json response set to d (primeDelay):
// tests set it to keep a quick call off the timer.
func (o Options) WithPrimeDelay(d time.Duration) Options {
	o.primeDelay = d
	return o
}

// Config keys of the limits, named in errors so that the operator knows what
// to raise. cmd/manifold maps them to Options.
const (
	keyMaxBody     = "http.max_body_bytes"
	keyBodyTimeout = "http.body_timeout"
	keyMaxSessions = "http.max_sessions"
)

func (o *Options) setDefaults() {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Minute
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = 100
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 4 << 20
	}
	if o.HeaderTimeout == 0 {
		o.HeaderTimeout = 10 * time.Second
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = 30 * time.Second
	}
	if o.MaxBufferedBytes == 0 {
		o.MaxBufferedBytes = 16 * o.MaxRequestBytes
	}
	o.MaxBufferedBytes = max(o.MaxBufferedBytes, o.MaxRequestBytes)
	if o.MaxEventBytes == 0 {
		o.MaxEventBytes = 10 << 20
	}
	if o.primeDelay == 0 {
		o.primeDelay = primeDelay
	}
}

// sseRetry is the reconnection delay sent with the priming event of every
// resumable SSE stream (the SSE retry field): how long a client whose stream
// dropped waits before it resumes it.
const sseRetry = "1000"

// Server returns an http.Server for [Handler]: it bounds the
// time to read request headers and keeps per connection what a session is
// bound to. Serve it on a listener of your choice.
func Server(core Core, opts Options) *http.Server {
	opts.setDefaults()
	return &http.Server{
		Handler:           Handler(core, opts),
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       2 * time.Minute, // idle keep-alive connections
		MaxHeaderBytes:    64 << 10,
		ConnContext:       session.WithConnPeer,
	}
}

// Handler serves the proxy over HTTP: the streamable HTTP MCP endpoint
// at /mcp and core's Health /healthz, /readyz, /status and
// /status/clients. Every
// request, to any path, passes the same Host and Origin checks against DNS
// rebinding first: a browser page on another origin cannot drive or read the
// proxy. Requests to /mcp are bounded (body size and read time, sessions
// open at once), and a session can be used only by the peer (and, with
// opts.Authenticate, the user) that created it (see peer).
func Handler(core Core, opts Options) http.Handler {
	opts.setDefaults()
	guard := opts.Authenticate
	if guard == nil {
		guard = func(h http.Handler) http.Handler { return h }
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard(newMCPEndpoint(core, opts)))
	health := core.Health()
	mux.Handle("GET /healthz", health)
	mux.Handle("GET /readyz", health)
	mux.Handle("GET /status", guard(health)) // they show the catalog and the clients
	mux.Handle("GET /status/clients", guard(health))
	if opts.ApprovalBase != "" {
		// The pages of URL-mode approvals are opened in a browser, which has
		// no bearer token: the unguessable token in the path is the secret.
		mux.Handle("/approve/{token}", core.ApprovalPages(strings.TrimSuffix(opts.ApprovalBase, "/")))
	}
	if m := core.Metrics(); m != nil {
		mux.Handle("GET /metrics", guard(m)) // behind [auth] as /mcp is
	}
	if len(opts.Public) == 0 {
		return checkHostOrigin(opts, mux)
	}
	checked := checkHostOrigin(opts, mux)
	public := http.NewServeMux()
	for pattern, h := range opts.Public {
		public.Handle(pattern, checkHost(opts, h))
	}
	public.Handle("/", checked)
	return public
}

// MetricsServer returns an http.Server for a listener of the metrics' own
// (stdio mode has no HTTP listener to serve them on): GET /metrics only, served
// by metrics, behind the same Host and Origin checks as [Handler], so that a
// browser page on another origin cannot read them.
func MetricsServer(opts Options, metrics http.Handler) *http.Server {
	opts.setDefaults()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	return &http.Server{
		Handler:           checkHostOrigin(opts, mux),
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// checkHost refuses requests whose Host is not a loopback name or an
// allowed host, before next sees them.
func checkHost(opts Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, opts.AllowedHosts) {
			http.Error(w, "manifold: Host "+strconv.Quote(r.Host)+" is not allowed; add it to http.allowed_hosts in the proxy config", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newMCPEndpoint returns /mcp, for options with their defaults set.
func newMCPEndpoint(core Core, opts Options) *mcpEndpoint {
	// The events of the initialize era's streams, for resumption: keyed by
	// session and stream, so a resume replays only its own session's events
	// (and reaches a session only past the owner check, as every request
	// with a session id does); bounded for all sessions together, and a
	// session's events are dropped when the SDK closes its connection
	// (eventstore.go: the SDK's own store keeps a record per stream for as
	// long as its session lives).
	events := newEventStore(opts.MaxEventBytes)
	core.KeepsEvents(events.figures) // for the metrics
	server := core.MCPServer()
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		EventStore:          events,
		Logger:              core.SDKLog().With("component", "http"),
		// The checks below replace the SDK's loopback-only Host check, so that
		// AllowedHosts can extend it, and its idle timeout, which would close
		// a session whose only open request is its GET stream.
		DisableLocalhostProtection: true,
	})
	// 2026-07-28 requests have no session: the SDK serves them only in
	// stateless mode, a temporary session per request, on the same server.
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		// 2026-07-28: "the server MUST treat a client disconnect as
		// cancellation of that request" (a call parked for the client's
		// input lives on in its parked state, mrtr.go).
		PropagateRequestCancellation: true,
		Logger:                       core.SDKLog().With("component", "http"),
		DisableLocalhostProtection:   true,
	})
	sessions := &httpSessions{core: core, max: opts.MaxSessions, idle: opts.SessionTimeout, store: core.Sessions()}
	if sessions.store != nil {
		server.AddReceivingMiddleware(sessions.initializeMiddleware) // session.go
	}
	m := &mcpEndpoint{
		core:      core,
		opts:      opts,
		sdk:       sdk,
		stateless: stateless,
		events:    events,
		sessions:  sessions,
		buffered:  semaphore.NewWeighted(opts.MaxBufferedBytes),
		modern:    semaphore.NewWeighted(int64(modernRequestsPerSession * opts.MaxSessions)),
		listens:   semaphore.NewWeighted(int64(opts.MaxSessions)),
	}
	m.startAnswers() // answerrelay.go
	return m
}

// checkHostOrigin refuses requests whose Host is not a loopback name or an
// allowed host, and browser requests from an Origin that is not loopback or
// allowed, before next sees them.
func checkHostOrigin(opts Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, opts.AllowedHosts) {
			http.Error(w, "manifold: Host "+strconv.Quote(r.Host)+" is not allowed; add it to http.allowed_hosts in the proxy config", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, opts.AllowedOrigins) {
			http.Error(w, "manifold: Origin "+strconv.Quote(o)+" is not allowed; add it to http.allowed_origins in the proxy config", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpEndpoint is /mcp: the SDK's streamable HTTP handler behind the limits
// and the session bookkeeping.
type mcpEndpoint struct {
	core      Core
	opts      Options
	sdk       *mcp.StreamableHTTPHandler // stateful: the initialize era
	stateless *mcp.StreamableHTTPHandler // 2026-07-28 requests
	events    *eventStore                // the stateful handler's, for resumption
	sessions  *httpSessions
	buffered  *semaphore.Weighted // bytes of request bodies held, at most opts.MaxBufferedBytes
	modern    *semaphore.Weighted // 2026-07-28 requests being served
	listens   *semaphore.Weighted // open subscriptions/listen streams
	lean      leanCalls           // tools/call served without the SDK (call.go)

	answersDown atomic.Bool // the last answer for another replica could not be relayed (logged once)
}

// modernRequestsPerSession sizes the cap on 2026-07-28 requests served at
// once: they hold no session, so http.max_sessions bounds them through this
// factor (a session of the initialize era has several requests open too).
// Open subscriptions/listen streams, which last as long as a GET stream,
// are capped at http.max_sessions on their own.
const modernRequestsPerSession = 8

func (m *mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.refuseDraining(w, r) {
		return
	}
	if r.Method != http.MethodGet {
		m.core.InFlight(1) // the root's drain.go: WaitIdle
		defer m.core.InFlight(-1)
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		m.serveNew(w, r)
		return
	}
	stream := opensGETStream(r)
	owner := session.OwnerOf(r)
	e, res := m.sessions.enter(id, owner, stream)
	e, res = m.crossReplica(r, id, owner, stream, e, res) // session.go: sessions other replicas created
	if res != entered && r.ContentLength != 0 {
		m.boundUnread(w) // refused unread: the body must not hold the answer
	}
	switch res {
	case unknownSession:
		writeHTTPError(w, http.StatusNotFound, codeInvalidRequest, "manifold: session not found (it ended, expired after "+m.opts.SessionTimeout.String()+" idle, or never existed); start a new session with initialize", nil)
		return
	case otherOwner:
		writeHTTPError(w, http.StatusForbidden, codeInvalidRequest, "manifold: this session belongs to another client (a session is bound to the address, local user and authenticated identity that created it); start a session of your own with initialize", nil)
		return
	case streamOpen:
		writeHTTPError(w, http.StatusConflict, codeInvalidRequest, "manifold: this session already has a GET stream open; close it before opening another", nil)
		return
	case sharedDown:
		w.Header().Set("Retry-After", "1")
		writeHTTPError(w, http.StatusServiceUnavailable, codeServerError, "manifold: this session was created by another replica, and the shared store ([cluster] redis) that describes it cannot be reached; retry shortly", nil)
		return
	case tooManyAdopt:
		w.Header().Set("Retry-After", "30")
		writeHTTPError(w, http.StatusServiceUnavailable, codeServerError,
			fmt.Sprintf("manifold: too many HTTP sessions open on this replica (%s = %d); retry later, or raise %s in the proxy config", keyMaxSessions, m.opts.MaxSessions, keyMaxSessions),
			map[string]any{"limit": m.opts.MaxSessions, "key": keyMaxSessions})
		return
	}
	defer m.sessions.leave(e, stream)
	if r.Method == http.MethodPost {
		release, ok := m.readBody(w, r)
		if !ok {
			return
		}
		defer release()
		if m.relayAnswers(w, r, id) { // answerrelay.go: answers to questions of other replicas
			return
		}
		if m.serveLeanList(w, r, e, r.Body.(*heldBody).data) { // list.go
			return
		}
		if m.serveLean(w, r, e, r.Body.(*heldBody).data) {
			return
		}
	}
	if r.Method == http.MethodDelete {
		// The client ends its session: its calls in flight are cancelled
		// upstream (the SDK would wait for them before closing it).
		m.core.Calls().Cancel(id)
	}
	if r.Method == http.MethodDelete {
		m.sessions.forget(r.Context(), id)
	}
	if e.tr != nil {
		m.serveAdopted(w, r, e)
		return
	}
	if r.Method == http.MethodDelete {
		dw := &statusWriter{ResponseWriter: w}
		m.sdk.ServeHTTP(dw, r)
		if dw.code == http.StatusNoContent {
			// The SDK closed the session before it answered: its place is
			// free now, not when the watcher of the session gets to it, so
			// that an initialize right after the DELETE is not refused at
			// the cap.
			m.sessions.remove(e)
		}
		return
	}
	m.events.serveDone(m.sdk, &retryWriter{ResponseWriter: m.tagIDs(w)}, r)
}

// opensGETStream reports whether r opens (or resumes) a session's one GET
// stream: a GET without Last-Event-ID, or resuming the GET stream, whose
// event ids the SDK writes as "_N" (a stream id, "" for the GET stream, "_",
// the index). A GET resuming a request's stream is not it: the SDK lets
// one request at a time resume each stream.
func opensGETStream(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	last := r.Header.Values("Last-Event-ID")
	return len(last) == 0 || strings.HasPrefix(last[0], "_")
}

// statusWriter records the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.code == 0 {
		sw.code = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// serveNew serves a request without a session id: a POST creates a session
// (if the cap allows), anything else the SDK refuses.
func (m *mcpEndpoint) serveNew(w http.ResponseWriter, r *http.Request) {
	headerModern := r.Header.Get("Mcp-Protocol-Version") >= era.Version
	if r.Method != http.MethodPost {
		if headerModern {
			m.stateless.ServeHTTP(w, r) // 405: a 2026-07-28 client only POSTs
			return
		}
		m.sdk.ServeHTTP(w, r)
		return
	}
	release, ok := m.readBody(w, r)
	if !ok {
		return
	}
	defer release()
	if m.refuseNewWork(w, r.Body.(*heldBody).data) { // drain.go
		return
	}
	if body := r.Body.(*heldBody).data; headerModern || bodyModern(body) {
		m.serveModern(w, r, isListen(body))
		return
	}
	if !m.sessions.reserve() {
		w.Header().Set("Retry-After", "30")
		writeHTTPError(w, http.StatusServiceUnavailable, codeServerError,
			fmt.Sprintf("manifold: too many HTTP sessions open (%s = %d); retry later, end unused sessions with DELETE, or raise %s in the proxy config", keyMaxSessions, m.opts.MaxSessions, keyMaxSessions),
			map[string]any{"limit": m.opts.MaxSessions, "key": keyMaxSessions})
		return
	}
	nw := &newSessionWriter{ResponseWriter: w, h: m.sessions, owner: session.OwnerOf(r)}
	defer func() {
		if nw.e != nil {
			m.sessions.leave(nw.e, false)
		} else {
			m.sessions.unreserve()
		}
	}()
	m.events.serveDone(m.sdk, &retryWriter{ResponseWriter: m.tagIDs(nw)}, r)
}

// serveModern serves a 2026-07-28 request (no session) on the stateless
// handler, within the caps on such requests and on open listen streams. The
// SDK checks the rest: the MCP-Protocol-Version header against _meta
// (-32020 on a mismatch, -32022 for a version not served) and the
// Mcp-Method and Mcp-Name headers against the body (-32020).
func (m *mcpEndpoint) serveModern(w http.ResponseWriter, r *http.Request, listen bool) {
	if !m.modern.TryAcquire(1) {
		w.Header().Set("Retry-After", "1")
		writeHTTPError(w, http.StatusServiceUnavailable, codeServerError,
			fmt.Sprintf("manifold: too many 2026-07-28 requests in flight (%d, %d × %s); retry shortly, or raise %s in the proxy config",
				modernRequestsPerSession*m.opts.MaxSessions, modernRequestsPerSession, keyMaxSessions, keyMaxSessions),
			map[string]any{"limit": modernRequestsPerSession * m.opts.MaxSessions, "key": keyMaxSessions})
		return
	}
	defer m.modern.Release(1)
	if listen {
		if !m.listens.TryAcquire(1) {
			w.Header().Set("Retry-After", "30")
			writeHTTPError(w, http.StatusServiceUnavailable, codeServerError,
				fmt.Sprintf("manifold: too many subscriptions/listen streams open (%s = %d); close one, retry later, or raise %s in the proxy config",
					keyMaxSessions, m.opts.MaxSessions, keyMaxSessions),
				map[string]any{"limit": m.opts.MaxSessions, "key": keyMaxSessions})
			return
		}
		defer m.listens.Release(1)
		// A listen stream lasts as long as its client wants: not a
		// request that draining waits for (ServeHTTP counted it).
		m.core.InFlight(-1)
		defer m.core.InFlight(1)
	} else if body := r.Body.(*heldBody).data; m.serveLeanModern(w, r, body) || m.serveLeanModernList(w, r, body) { // call.go, list.go
		return
	}
	m.stateless.ServeHTTP(w, r)
}

// bodyModern reports whether a request body (one JSON-RPC message) is a
// 2026-07-28 request by its _meta, as the SDK reads it: a protocol version
// from 2026-07-28 on. The stateless handler then refuses it if the header
// does not agree.
func bodyModern(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !jsonscan.Valid(body) {
		return false
	}
	meta := wire.Member(wire.Member(body, "params"), "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return false
	}
	var v string
	if pv := wire.Member(meta, era.KeyProtocolVersion); len(pv) == 0 || json.Unmarshal(pv, &v) != nil {
		return false
	}
	return v >= era.Version
}

// isListen reports whether a body is a subscriptions/listen request.
func isListen(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return false
	}
	var method string
	return json.Unmarshal(wire.Member(body, "method"), &method) == nil && method == "subscriptions/listen"
}

// readAllSized is io.ReadAll with room for size bytes from the start (a
// request's Content-Length, -1 if unknown): a large body is read into one
// buffer, not into one that doubles a dozen times. A body longer than it
// said still reads whole.
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size+1, 512)) // +1: the read that finds the end
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readBody reads r's body within the size and time limits and puts it back
// for the SDK, or answers the error and returns false. The read deadline
// covers the body only: once the body is read it is lifted before the
// response starts; an error answer leaves the rest of the body to net/http
// under a deadline (see boundUnread). The body's bytes count against
// MaxBufferedBytes until the SDK has read them or release is called,
// whichever comes first.
func (m *mcpEndpoint) readBody(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	limit := m.opts.MaxRequestBytes
	tooLarge := func() (func(), bool) {
		m.boundUnread(w)
		writeHTTPError(w, http.StatusRequestEntityTooLarge, codeInvalidRequest,
			fmt.Sprintf("manifold: request body exceeds %s (%d bytes); send a smaller request or raise %s in the proxy config", keyMaxBody, limit, keyMaxBody),
			map[string]any{"limit": limit, "key": keyMaxBody})
		return nil, false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	weight := limit
	if r.ContentLength >= 0 {
		weight = max(r.ContentLength, 1)
	}
	var err error
	if !m.buffered.TryAcquire(weight) { // else wait, within the body's time
		ctx, cancel := context.WithTimeout(r.Context(), m.opts.BodyTimeout)
		err = m.buffered.Acquire(ctx, weight)
		cancel()
	}
	if err != nil {
		m.boundUnread(w)
		w.Header().Set("Retry-After", "1")
		writeHTTPError(w, http.StatusServiceUnavailable, codeServerError,
			fmt.Sprintf("manifold: too many request bodies arriving at once (at most %d bytes are held, %s each); retry shortly", m.opts.MaxBufferedBytes, keyMaxBody),
			map[string]any{"limit": m.opts.MaxBufferedBytes})
		return nil, false
	}
	var once sync.Once
	release = func() { once.Do(func() { m.buffered.Release(weight) }) }

	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(m.opts.BodyTimeout)) // unsupported only by test recorders
	data, err := readAllSized(io.LimitReader(r.Body, limit+1), r.ContentLength)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The read deadline stays passed: net/http cannot wait for the
		// rest of the body before answering.
		release()
		writeHTTPError(w, http.StatusRequestTimeout, codeInvalidRequest,
			fmt.Sprintf("manifold: request body not received within %s (%s); send the body at once or raise %s in the proxy config", keyBodyTimeout, m.opts.BodyTimeout, keyBodyTimeout),
			map[string]any{"limit": m.opts.BodyTimeout.String(), "key": keyBodyTimeout})
		return nil, false
	case err != nil:
		release()
		m.boundUnread(w)
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "manifold: reading the request body: "+err.Error(), nil)
		return nil, false
	case int64(len(data)) > limit:
		release()
		return tooLarge()
	}
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = &heldBody{data: data, release: release}
	r.ContentLength = int64(len(data))
	return release, true
}

// boundUnread bounds what is left of reading the body of a request refused
// before its body was read to the end, so that the answer cannot wait on the
// client forever: net/http reads the rest of a body under 256 KiB before it
// writes the answer (and again after the handler), and without a deadline a
// client that declares a small Content-Length and never sends it would hold
// the connection and its goroutine for good. With the deadline, a client that
// sends its body gets the answer once it is sent; a slower one gets it after
// BodyTimeout, and the connection is closed after it.
func (m *mcpEndpoint) boundUnread(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(m.opts.BodyTimeout)) // unsupported only by test recorders
}

// heldBody is a request body already read, handed to the SDK: it drops its
// bytes and releases their budget once the SDK has read them to the end.
type heldBody struct {
	data    []byte
	off     int
	release func()
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		b.data = nil
		b.release()
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *heldBody) Close() error {
	b.data = nil
	b.release()
	return nil
}

// newSessionWriter registers the session that the SDK creates for a request
// the moment the SDK starts its answer (which carries the session id), so
// that the session is known before its client can use it.
type newSessionWriter struct {
	http.ResponseWriter
	h     *httpSessions
	owner peer
	done  bool
	e     *httpSession // the session registered, or nil
}

func (nw *newSessionWriter) header() {
	if nw.done {
		return
	}
	nw.done = true
	if id := nw.Header().Get("Mcp-Session-Id"); id != "" {
		nw.e = nw.h.register(id, nw.owner)
	}
}

func (nw *newSessionWriter) WriteHeader(code int) {
	nw.header()
	nw.ResponseWriter.WriteHeader(code)
}

func (nw *newSessionWriter) Write(p []byte) (int, error) {
	nw.header()
	return nw.ResponseWriter.Write(p)
}

func (nw *newSessionWriter) Flush() {
	nw.header()
	_ = http.NewResponseController(nw.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (nw *newSessionWriter) Unwrap() http.ResponseWriter { return nw.ResponseWriter }

// retryWriter adds the SSE retry field (sseRetry) to the priming event that
// the SDK writes first on a resumable stream (an event id and no data, in one
// write: "event: prime\nid: ...\ndata: \n\n"), as the SDK offers no option
// for it: a client then knows how soon to resume a stream that dropped.
type retryWriter struct {
	http.ResponseWriter
	started bool
}

func (rw *retryWriter) Write(p []byte) (int, error) {
	if rw.started {
		return rw.ResponseWriter.Write(p)
	}
	rw.started = true
	const prime = "event: prime\nid: "
	end := bytes.IndexByte(p[min(len(prime), len(p)):], '\n')
	if !bytes.HasPrefix(p, []byte(prime)) || end < 0 {
		return rw.ResponseWriter.Write(p)
	}
	i := len(prime) + end + 1 // past the id line
	out := make([]byte, 0, len(p)+len("retry: \n")+len(sseRetry))
	out = append(append(append(append(out, p[:i]...), "retry: "...), sseRetry...), '\n')
	out = append(out, p[i:]...)
	if _, err := rw.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (rw *retryWriter) WriteHeader(code int) { rw.ResponseWriter.WriteHeader(code) }

func (rw *retryWriter) Flush() { _ = http.NewResponseController(rw.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (rw *retryWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// JSON-RPC error codes of the HTTP face's own errors.
const (
	codeInvalidRequest = -32600
	codeServerError    = -32000
)

// writeHTTPError answers status with a JSON-RPC error response (id null: the
// request was not read, or not accepted) that says what is wrong.
func writeHTTPError(w http.ResponseWriter, status, code int, msg string, data any) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	body, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{code, msg, data}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if isLoopbackName(host) {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, host) || strings.EqualFold(a, hostport) })
}

func originAllowed(origin string, allowed []string) bool {
	if slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackName(u.Hostname())
}
