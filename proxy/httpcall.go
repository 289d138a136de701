//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy serves them to clients of 2024-11-05 to 2025-11-25.

package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lean HTTP path of tools/call (ARCHITECTURE §3 "The hot path is lean"):
// a POST of an initialize-era session whose body is one tools/call request
// is served as the stdio lean path serves a line, without the SDK's
// transport, typed decode and re-encode: the body is checked and split by
// the raw scanner (checkFrame, splitParams), the call goes through
// startCall (policy, limits, audit, masking, URI rewriting, traces, as every
// call), and the answer is one application/json response, which the
// streamable HTTP transport allows for any POST.
//
// A call that may need the request's SSE stream goes to the SDK instead:
// one that asks for progress (a progressToken), one of a client that
// declared sampling or elicitation (a server may ask it something during
// the call), and one of a client that declared roots to a server of
// isolation = "session" (whose roots/list is relayed during calls). So do
// requests the SDK would refuse (headers, protocol version), 2026-07-28
// requests, and anything that is not one tools/call request.

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
	if m.s.typed || ss == nil || modernSession(ss) || m.s.catalog.Load() == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || !leanHeaders(r, ip.ProtocolVersion) {
		return false
	}
	f := checkFrame(body)
	if f.kind == frameNotification && f.method == "notifications/cancelled" {
		if rid := member(f.params, "requestId"); rid != nil {
			m.lean.cancel(leanKey{e.id, string(rid)})
		}
		return false
	}
	if f.kind != frameRequest || f.method != "tools/call" || requestEra(f.params) != eraLegacy {
		return false
	}
	if meta := member(f.params, "_meta"); member(meta, "progressToken") != nil {
		return false
	}
	caps := ip.Capabilities
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	if caps.Sampling != nil || caps.Elicitation != nil {
		return false
	}
	fields, err := splitParams(bytes.Clone(f.params)) // the call may outlive the body's buffer
	if err != nil {
		return false // the SDK answers what is wrong
	}
	name, ok := rawString(fields["name"])
	if !ok || name == "" {
		return false
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		c := m.s.catalog.Load()
		if te, found := c.tools.Lookup(name); !found || c.gen.byName[te.Server] == nil || c.gen.byName[te.Server].cfg.PerSession {
			return false
		}
	}
	delete(fields, "name")

	// A client of 2025-11-25 gets the event stream with a priming event
	// first, as from the SDK, so that a stream that drops during the call
	// can be resumed (GET with Last-Event-ID, served by the SDK from the
	// same event store): the call then goes on when the connection drops,
	// as on the SDK's path. An application/json answer cannot be resumed:
	// its call is cancelled when the client goes away.
	var stream *leanStream
	base := r.Context()
	if v := r.Header.Get("Mcp-Protocol-Version"); m.events != nil && v >= primingVersion {
		stream = &leanStream{events: m.events, session: e.id, id: rand.Text()}
		base = context.WithoutCancel(base)
	}
	key := leanKey{e.id, string(f.id)}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	if !m.lean.add(key, cancel) {
		var none *leanStream // refused before the stream starts
		none.write(ctx, w, leanResponse(f.id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "invalid request: id " + string(f.id) + " is already used by a request in flight; use a new id for every request"}))
		return true
	}
	defer m.lean.remove(key)
	ctx, done := m.s.sessionCalls.track(ctx, e.id) // a DELETE cancels it
	defer done()
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		ctx = context.WithValue(ctx, identityCtxKey{}, identityOf(ti))
		if tok, ok := ti.Extra[extraSubjectToken].(string); ok && tok != "" {
			ctx = context.WithValue(ctx, subjectTokenKey{}, tok)
		}
	}
	if m.s.tracer != nil {
		if tp := r.Header.Get("traceparent"); tp != "" {
			ctx = context.WithValue(ctx, traceHeaderKey{}, traceHeader{tp, r.Header.Get("tracestate")})
		}
		ctx = context.WithValue(ctx, requestIDKey{}, string(f.id))
	}

	if stream != nil {
		stream.prime(ctx, w)
	}

	type answer struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan answer, 1)
	m.s.startCall(ctx, ss, name, fields, func(raw json.RawMessage, err error) { ch <- answer{raw, err} })
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done(): // cancelled, or (application/json) the client went away
		cancel()
		a = <-ch
		if stream == nil {
			return true
		}
	}
	if a.err == nil && !leanResult(a.raw) {
		if res, err := typedCallResult(name, a.raw); err != nil {
			a.err = err
		} else if a.raw, err = json.Marshal(res); err != nil {
			a.err = err
		}
	}
	if a.err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(a.err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: a.err.Error()}
		}
		stream.write(ctx, w, leanResponse(f.id, nil, rpcErr))
		return true
	}
	stream.write(ctx, w, leanResponse(f.id, a.raw, nil))
	return true
}

// leanHeaders reports whether r's headers are ones the SDK serves a POST
// with (else it answers with the error): a JSON body, an Accept of JSON and
// event streams, and no protocol version other than the session's.
func leanHeaders(r *http.Request, negotiated string) bool {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && (v != negotiated || !slices.Contains(legacyVersions, v)) {
		return false
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

// leanStream is the event stream of one lean call: a priming event, then
// the response, both kept in the session's event store under the stream's
// id, as the SDK keeps its own streams' events.
type leanStream struct {
	events  *mcp.MemoryEventStore
	session string
	id      string // a stream id of this session; never contains '_'
	n       int    // events written
}

// prime writes the stream's priming event, with the reconnection delay.
func (ls *leanStream) prime(ctx context.Context, w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache, no-transform"}
	h["Connection"] = []string{"keep-alive"}
	_ = ls.events.Append(ctx, ls.session, ls.id, nil)
	_, _ = fmt.Fprintf(w, "event: prime\nid: %s_%d\nretry: %s\ndata: \n\n", ls.id, ls.n, sseRetry)
	ls.n++
	_ = http.NewResponseController(w).Flush()
}

// write answers the call with the JSON-RPC response msg: an event of the
// stream, or for a nil stream one application/json body.
func (ls *leanStream) write(ctx context.Context, w http.ResponseWriter, msg []byte) {
	if ls == nil {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Cache-Control"] = []string{"no-cache, no-transform"}
		_, _ = w.Write(msg)
		return
	}
	_ = ls.events.Append(ctx, ls.session, ls.id, msg)
	out := make([]byte, 0, len(msg)+len(ls.id)+40)
	out = append(out, "event: message\nid: "...)
	out = append(out, ls.id...)
	out = append(out, '_')
	out = strconv.AppendInt(out, int64(ls.n), 10)
	out = append(out, "\ndata: "...)
	out = append(out, msg...)
	out = append(out, "\n\n"...)
	ls.n++
	_, _ = w.Write(out)
}

// leanResponse is the JSON-RPC response to id: result, or rpcErr; the
// lean paths answer with it (stdio adds the newline).
func leanResponse(id []byte, result json.RawMessage, rpcErr *jsonrpc.Error) []byte {
	if rpcErr != nil {
		b, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}{"2.0", id, rpcErr})
		if err != nil {
			b = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"internal error"}}`, id, jsonrpc.CodeInternalError)
		}
		return b
	}
	body := make([]byte, 0, len(result)+len(id)+40)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"result":`...)
	body = append(body, result...)
	return append(body, '}')
}
