//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy serves them to clients of 2024-11-05 to 2025-11-25.

package streamable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"github.com/manifold-mcp/manifold/proxy/serve/frame"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// The lean HTTP path of tools/call (ARCHITECTURE §3 "The hot path is lean"):
// a POST of an initialize-era session whose body is one tools/call request
// is served as the stdio lean path serves a line, without the SDK's
// transport, typed decode and re-encode: the body is checked and split by
// the raw scanner (frame.Check, wire.SplitParams), the call goes through
// startCall (policy, limits, audit, masking, URI rewriting, traces, as every
// call), and the answer is one application/json response, which the
// streamable HTTP transport allows for any POST.
//
// A call that may need the request's SSE stream goes to the SDK instead:
// one that asks for progress (a progressToken) in a session older than
// 2025-11-25, whose lean answer has no stream (from 2025-11-25 the progress
// goes on the call's stream, runLean), one of a client that
// declared sampling or elicitation (any server may ask it during the call,
// on the call's stream: the root's relay.go callerFor), and one of a client that
// declared roots to a server of isolation = "session" (whose roots/list is
// relayed during calls). So do
// requests the SDK would refuse (headers, protocol version), and anything
// that is not one tools/call request. A 2026-07-28 request has a lean path
// of its own (serveLeanModern).

// leanCalls are the lean HTTP calls in flight, so that a client's
// notifications/cancelled (a POST of its own) reaches them.
type leanCalls struct {
	mu    sync.Mutex
	calls map[leanKey]context.CancelFunc // guarded by mu
}

type leanKey struct{ session, id string }

func (lc *leanCalls) add(k leanKey, cancel context.CancelFunc) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if _, dup := lc.calls[k]; dup {
		return false
	}
	if lc.calls == nil {
		lc.calls = make(map[leanKey]context.CancelFunc)
	}
	lc.calls[k] = cancel
	return true
}

func (lc *leanCalls) remove(k leanKey) {
	lc.mu.Lock()
	delete(lc.calls, k)
	lc.mu.Unlock()
}

func (lc *leanCalls) cancel(k leanKey) {
	lc.mu.Lock()
	cancel := lc.calls[k]
	lc.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// serveLean serves the POST r of session e on the lean path and reports
// whether it did; if not, the SDK serves it. A notifications/cancelled for a
// lean call cancels it and is passed on to the SDK as well (which ignores
// ids it does not know).
func (m *mcpEndpoint) serveLean(w http.ResponseWriter, r *http.Request, e *httpSession, body []byte) bool {
	ss := e.ss
	if !m.core.Lean() || ss == nil || modernSession(ss) {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || !leanHeaders(r, ip.ProtocolVersion) {
		return false
	}
	f := frame.Check(body)
	if f.Kind == wire.Notification && f.Method == "notifications/cancelled" {
		if rid := wire.Member(f.Params, "requestId"); rid != nil {
			m.lean.cancel(leanKey{e.id, string(rid)})
		}
		return false
	}
	if f.Kind != wire.Request || f.Method != "tools/call" || era.Of(f.Params) != era.Legacy {
		return false
	}
	streamed := m.events != nil && r.Header.Get("Mcp-Protocol-Version") >= primingVersion
	if meta := wire.Member(f.Params, "_meta"); wire.Member(meta, "progressToken") != nil && !streamed {
		return false // the progress needs an event stream (the SDK's, before 2025-11-25)
	}
	caps := ip.Capabilities
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	fields, name, ok := leanFields(f.Params)
	if !ok {
		return false // the SDK answers what is wrong
	}
	if m.core.MayAsk(caps) {
		return false // the server may ask it, on the call's stream
	} else if caps.RootsV2 != nil || caps.Roots.ListChanged {
		if m.core.PerSessionTool(name) {
			return false
		}
	}

	// A client of 2025-11-25 gets, for a call not answered at once
	// (runLean), the event stream with a priming event first, as from the
	// SDK, so that a stream that drops during the call can be resumed (GET
	// with Last-Event-ID, served by the SDK from the same event store); the
	// call's progress notifications are events of that stream. Its call
	// goes on when the connection drops, as on the SDK's path. Before
	// 2025-11-25 an application/json answer cannot be resumed: its call is
	// cancelled when the client goes away.
	var stream *leanStream
	base := r.Context()
	if streamed {
		stream = &leanStream{events: m.events, session: e.id, client: r.Context()} // its id: prime
		base = context.WithoutCancel(base)
	}
	key := leanKey{e.id, string(f.ID)}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	if !m.lean.add(key, cancel) {
		var none *leanStream // refused before the stream starts
		none.write(ctx, w, frame.Response(f.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "invalid request: id " + string(f.ID) + " is already used by a request in flight; use a new id for every request"}))
		return true
	}
	defer m.lean.remove(key)
	defer m.core.Calls().Add(e.id, cancel)() // a DELETE cancels it
	m.runLean(ctx, cancel, w, r, ss, f.ID, name, fields, stream, false)
	return true
}

// serveLeanModern serves a 2026-07-28 request (no session) whose body is
// one tools/call on the lean path, and reports whether it did; if not, the
// SDK's stateless handler serves it. The request is served only when the
// SDK would accept it as it is: the headers it requires (Content-Type,
// Accept, MCP-Protocol-Version equal to the _meta protocol version,
// Mcp-Method, Mcp-Name), a _meta the SDK would accept (era.Of), and a
// tool without parameters bound to headers (x-mcp-header, which the SDK
// checks against the arguments). A call of the search surface's tools goes
// to the SDK too, and so does a call of a tool whose server needs a process
// of its own or a person's approval (sharedUp), and one to a shared server
// of the initialize era by a client that declared what the server may ask
// during the call (MayAsk): the bridge parks it (the root's mrtr.go).
//
// The answer is one application/json response (an event stream of the
// progress notifications and the response for a call that asks for
// progress, as the SDK answers it), and closing the request is
// the client's cancellation, as 2026-07-28 has it ("the server MUST treat a
// client disconnect as cancellation of that request"). A call parked for a
// client's input (mrtr.go) lives on in its parked state, as on the SDK's
// path.
func (m *mcpEndpoint) serveLeanModern(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !m.core.Lean() || len(r.Header.Values("Last-Event-ID")) > 0 || !leanContent(r) {
		return false
	}
	f := frame.Check(body)
	if f.Kind != wire.Request || f.Method != "tools/call" || era.Of(f.Params) != era.Modern {
		return false
	}
	meta := wire.Member(f.Params, "_meta") // era.Of: an object without escapes
	if v, ok := wire.RawString(wire.Member(meta, era.KeyProtocolVersion)); !ok || v != r.Header.Get("Mcp-Protocol-Version") {
		return false // -32020 from the SDK
	}
	if r.Header.Get("Mcp-Method") != "tools/call" {
		return false
	}
	fields, name, ok := leanFields(f.Params)
	if !ok || r.Header.Get("Mcp-Name") != name || m.core.MetaTool(name) || m.core.HeaderBound(name) {
		return false
	}
	if up, visible := m.core.SharedUp(name, httpCaller(r)); visible && up == nil {
		return false
	} else if up != nil && !up.Modern() && m.core.MayAsk(era.OfRequest(nil, meta).Caps) {
		return false // the bridge parks the call for the server's questions (mrtr.go)
	}
	ctx := r.Context()
	if meta := fields["_meta"]; meta != nil {
		ctx = era.WithRequestMeta(ctx, meta) // the request's own era (era.OfRequest)
		// The era's own keys describe this request, not the upstream's;
		// the upstream face writes its own.
		if meta = era.StripRequestMeta(meta); meta == nil {
			delete(fields, "_meta")
		} else {
			fields["_meta"] = meta
		}
	}
	var stream *leanStream // an event stream for the call's progress, kept nowhere
	if wire.Member(meta, "progressToken") != nil {
		stream = &leanStream{client: r.Context()}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.runLean(ctx, cancel, w, r, nil, f.ID, name, fields, stream, true)
	return true
}

// writeModernError writes msg, the JSON-RPC error response of a 2026-07-28
// request, with the HTTP status 2026-07-28 gives its code (SEP-2575): 404
// for a method not found; 400 for invalid params, an unsupported protocol
// version and a missing client capability; else 200.
func writeModernError(w http.ResponseWriter, msg []byte, code int64) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Cache-Control"] = []string{"no-cache, no-transform"}
	switch code {
	case jsonrpc.CodeMethodNotFound:
		w.WriteHeader(http.StatusNotFound)
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		w.WriteHeader(http.StatusBadRequest)
	}
	_, _ = w.Write(msg)
}

// httpCaller is the policy identity of r's authenticated caller (the
// zero Identity without authentication).
func httpCaller(r *http.Request) policy.Identity {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return session.IdentityOf(ti).Policy()
	}
	return policy.Identity{}
}

// leanFields splits the params of a lean tools/call: the tool's name, and
// the other members as raw JSON. ok is false for params the SDK must answer
// (not an object, no name).
func leanFields(params []byte) (fields map[string]json.RawMessage, name string, ok bool) {
	fields, err := wire.SplitParams(bytes.Clone(params)) // the call may outlive the body's buffer
	if err != nil {
		return nil, "", false
	}
	name, ok = wire.RawString(fields["name"])
	if !ok || name == "" {
		return nil, "", false
	}
	delete(fields, "name")
	return fields, name, true
}

// runLean runs a lean HTTP call of the tool name on ss (nil for a
// 2026-07-28 request) and answers the request id with its outcome: on
// stream, or as one application/json response. ctx is the call's, and
// cancel ends it: when ctx is done before the answer (a cancellation, or a
// client gone without a stream), the call is cancelled and, without a
// stream, nothing is written.
func (m *mcpEndpoint) runLean(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, r *http.Request, ss *mcp.ServerSession, id []byte, name string, fields map[string]json.RawMessage, stream *leanStream, modern bool) {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		ctx = session.WithTokenInfo(ctx, ti)
	}
	if m.core.Observer().Tracing() {
		if tp := r.Header.Get("traceparent"); tp != "" {
			ctx = observe.WithTraceHeader(ctx, tp, r.Header.Get("tracestate"))
		}
		ctx = observe.WithRequestID(ctx, string(id))
	}

	var progress chan []byte // the call's progress notifications, for stream
	if stream != nil && wire.Member(fields["_meta"], "progressToken") != nil {
		progress = make(chan []byte, leanProgressQueue)
		ctx = context.WithValue(ctx, progressSinkKey{}, progressSink(func(p *mcp.ProgressNotificationParams) { queueProgress(progress, p) }))
	}

	type answer struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan answer, 1)
	m.core.StartCall(ctx, ss, name, fields, func(raw json.RawMessage, err error) { ch <- answer{raw, err} })
	// A resumable stream (one kept in the event store) starts only when
	// the call needs it: when the answer has not come within primeDelay, or
	// progress comes first. Then its priming event goes out first, so that
	// a client whose connection drops holds the id to resume from. A call
	// answered sooner is answered with one application/json response, which
	// the transport allows for any POST: a stream whose priming event would
	// have gone out in the same write as the answer could not have been
	// resumed anyway, and its stream id and event store bookkeeping are
	// saved.
	var primed <-chan time.Time // the stream starts when this fires
	if stream != nil && stream.events != nil {
		t := time.NewTimer(m.opts.primeDelay)
		defer t.Stop()
		primed = t.C
	} else if stream != nil {
		stream.open(w)
	}
	started := func() bool { return stream == nil || stream.events == nil || stream.n > 0 }
	var a answer
wait:
	for {
		select {
		case a = <-ch:
			break wait
		case msg := <-progress:
			if !started() {
				stream.prime(ctx, w)
				primed = nil
			}
			stream.event(ctx, w, msg, false)
			stream.flush(w)
		case <-primed:
			stream.prime(ctx, w)
			stream.flush(w)
			primed = nil
		case <-ctx.Done(): // cancelled, or (application/json) the client went away
			cancel()
			a = <-ch
			if stream == nil {
				return
			}
			break wait
		}
	}
	if !started() {
		if len(progress) == 0 {
			stream = nil // answered at once: application/json
		} else {
			stream.prime(ctx, w)
		}
	}
	// The server's progress came before its answer: what is still queued
	// goes first.
	for drained := false; progress != nil && stream != nil && !drained; {
		select {
		case msg := <-progress:
			stream.event(ctx, w, msg, false)
		default:
			drained = true
		}
	}
	if a.err == nil {
		a.raw, a.err = m.core.CallAnswer(name, a.raw)
	}
	if a.err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(a.err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: a.err.Error()}
		}
		if modern && (stream == nil || stream.n == 0) {
			// 2026-07-28 answers some errors with an HTTP status too, as
			// the SDK does (an application/json body either way), unless
			// the stream of the call's progress has begun.
			writeModernError(w, frame.Response(id, nil, rpcErr), rpcErr.Code)
			return
		}
		stream.write(ctx, w, frame.Response(id, nil, rpcErr))
		return
	}
	if modern {
		a.raw = era.CallResult(a.raw, m.core.ServerInfo())
	}
	stream.result(ctx, w, id, a.raw)
}

// leanHeaders reports whether r's headers are ones the SDK serves a POST
// of a session with (else it answers with the error): leanContent, and no
// protocol version other than the session's.
func leanHeaders(r *http.Request, negotiated string) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && (v != negotiated || !slices.Contains(era.LegacyVersions, v)) {
		return false
	}
	return leanContent(r)
}

// leanContent reports whether r has the content headers the SDK requires
// of a POST: a JSON body, and an Accept of JSON and event streams.
func leanContent(r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" { // as clients send it, else parsed
		if ct, _, err := mime.ParseMediaType(ct); err != nil || ct != "application/json" {
			return false
		}
	}
	jsonOK, streamOK := false, false
	for _, value := range r.Header.Values("Accept") {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// primingVersion is the first protocol version whose POST streams start
// with a priming event (an event id without data) when they can be resumed.
const primingVersion = "2025-11-25"

// leanStream is the event stream of one lean call: a priming event, the
// call's progress notifications if it asked for them, then the response,
// all kept in the session's event store under the stream's id, as the SDK
// keeps its own streams' events. A stream without events (a 2026-07-28
// request's, which has no session) is an event stream kept nowhere: the
// progress and the response, without ids.
type leanStream struct {
	events  *eventStore
	session string
	id      string          // a stream id of this session (set by prime if empty); never contains '_'
	n       int             // events written
	client  context.Context // the request's: done once the client went away
	held    []byte          // the priming event, not yet written to the response (prime)
	wrote   bool            // something was written to the response
}

// progressSinkKey carries, in the context of a lean HTTP call that asked
// for progress, where its server's progress notifications go
// (relay.ProgressSinkKey).
type progressSinkKey = relay.ProgressSinkKey

// progressSink takes one progress notification of a call, its token the
// client's own (relay.ProgressSink).
type progressSink = relay.ProgressSink

// leanProgressQueue bounds the progress notifications of one lean call
// waiting to be written to its stream. The server's output is read by one
// goroutine for all its calls, which never waits for a client: past the
// bound, the oldest waiting notification gives way to the newest (progress
// only grows, so the newest says the most).
const leanProgressQueue = 64

// queueProgress puts the notifications/progress message of p in q, making
// room by dropping the oldest one if q is full.
func queueProgress(q chan []byte, p *mcp.ProgressNotificationParams) {
	msg, err := json.Marshal(struct {
		JSONRPC string                          `json:"jsonrpc"`
		Method  string                          `json:"method"`
		Params  *mcp.ProgressNotificationParams `json:"params"`
	}{"2.0", "notifications/progress", p})
	if err != nil {
		return
	}
	for {
		select {
		case q <- msg:
			return
		default:
		}
		select {
		case <-q:
		default:
		}
	}
}

// primeDelay is how long a lean call of 2025-11-25 may take to be answered
// with one application/json response (runLean). A call that takes longer
// gets its event stream, the priming event sent at once, so that a client
// whose stream drops during the call holds the event id to resume from.
const primeDelay = 20 * time.Millisecond

// prime starts the stream with its priming event, with the reconnection
// delay, giving the stream a fresh id if it has none. The event is held
// until the next one or a flush: it goes out with the answer, in one write
// whose length is known (send), or on its own when the caller flushes it.
func (ls *leanStream) prime(ctx context.Context, w http.ResponseWriter) {
	if ls.id == "" {
		ls.id = rand.Text()
	}
	ls.open(w)
	_ = ls.events.Open(ctx, ls.session, ls.id)
	_ = ls.events.Append(ctx, ls.session, ls.id, nil)
	held := make([]byte, 0, 40+len(ls.id)+len(sseRetry))
	held = append(held, "event: prime\nid: "...)
	held = append(held, ls.id...)
	held = append(held, '_')
	held = strconv.AppendInt(held, int64(ls.n), 10)
	held = append(held, "\nretry: "...)
	held = append(held, sseRetry...)
	ls.held = append(held, "\ndata: \n\n"...)
	ls.n++
}

// open sets the headers of an event stream.
func (ls *leanStream) open(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache, no-transform"}
	h["Connection"] = []string{"keep-alive"}
}

// flush sends what the stream holds.
func (ls *leanStream) flush(w http.ResponseWriter) {
	if ls.held != nil {
		_, _ = w.Write(ls.held)
		ls.held, ls.wrote = nil, true
	}
	_ = http.NewResponseController(w).Flush()
}

// write answers the call with the JSON-RPC response msg: an event of the
// stream, or for a nil stream one application/json body.
func (ls *leanStream) write(ctx context.Context, w http.ResponseWriter, msg []byte) {
	if ls == nil {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Cache-Control"] = []string{"no-cache, no-transform"}
		_ = wire.WriteWhole(w, msg)
		return
	}
	if err := ls.event(ctx, w, msg, true); err == nil {
		ls.delivered()
	}
}

// delivered marks the stream done in the event store once its response
// went to a client still connected (unless the connection fails now).
func (ls *leanStream) delivered() {
	if ls.events != nil && ls.client != nil && ls.client.Err() == nil {
		ls.events.Done(ls.session, ls.id)
	}
}

// event writes the JSON-RPC message msg as the stream's next event (kept in
// the event store, when the stream has one), the stream's last if last
// (send), and returns the write's error.
func (ls *leanStream) event(ctx context.Context, w http.ResponseWriter, msg []byte, last bool) error {
	out := ls.head(len(msg))
	start := len(out)
	return ls.send(ctx, w, append(out, msg...), start, last)
}

// result writes the response to the call id with result as the stream's
// next event, built in the event's own buffer: a large result is copied
// once, not once for the response and again for the event.
func (ls *leanStream) result(ctx context.Context, w http.ResponseWriter, id []byte, result json.RawMessage) {
	if ls == nil {
		ls.write(ctx, w, frame.Response(id, result, nil))
		return
	}
	out := ls.head(len(result) + len(id) + 40)
	start := len(out)
	out = wire.AppendResponse(out, id, result)
	if err := ls.send(ctx, w, out, start, true); err == nil {
		ls.delivered()
	}
}

// head starts the next event in a buffer with room for a message of n
// bytes: the held priming event if any, then the event's fields up to the
// data's.
func (ls *leanStream) head(n int) []byte {
	out := make([]byte, 0, len(ls.held)+n+len(ls.id)+48)
	out = append(out, ls.held...)
	ls.held = nil
	out = append(out, "event: message\n"...)
	if ls.events != nil {
		out = append(out, "id: "...)
		out = append(out, ls.id...)
		out = append(out, '_')
		out = strconv.AppendInt(out, int64(ls.n), 10)
		out = append(out, '\n')
	}
	return append(out, "data: "...)
}

// send ends the event that out holds, its message from out[start:], keeps
// the message in the event store (when the stream has one), writes the
// event and returns the write's error. The last event of a stream nothing
// was written to yet is the whole response (wire.WriteWhole).
func (ls *leanStream) send(ctx context.Context, w http.ResponseWriter, out []byte, start int, last bool) error {
	if ls.events != nil {
		_ = ls.events.Append(ctx, ls.session, ls.id, out[start:len(out):len(out)])
	}
	out = append(out, "\n\n"...)
	ls.n++
	if last && !ls.wrote {
		ls.wrote = true
		return wire.WriteWhole(w, out)
	}
	ls.wrote = true
	_, err := w.Write(out)
	return err
}
