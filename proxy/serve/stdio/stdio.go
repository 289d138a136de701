package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/serve/frame"
)

// Serve serves one downstream client of c over newline-delimited JSON-RPC on r
// and w (the process's stdin and stdout in stdio mode) until r ends or ctx is
// done. Nothing but protocol frames is ever written to w.
//
// tools/call requests travel a lean path (ARCHITECTURE §3 "The hot path is
// lean"): the frame is routed and forwarded as raw bytes, and the upstream's
// result bytes come back with only the id swapped, so the SDK's typed layer
// never decodes them. Everything else (initialize, lists, notifications, rare
// requests) goes to the SDK session.
//
// Every line is checked first (frame.Check): a line that is not one JSON-RPC
// message is answered with a parse error (-32700) or an invalid request
// (-32600) and serving goes on; the SDK, which would end the session on it,
// never sees it. Request ids the SDK would not echo byte for byte are swapped
// for ids of the proxy's own on the way in and back on the way out. When r
// ends, the requests already read are answered before Serve returns.
func Serve(ctx context.Context, c Core, opts Options, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &frameWriter{w: w}
	pr, pw := io.Pipe()
	ids := &sdkIDs{pending: make(map[string]int), mapped: make(map[string]json.RawMessage)}
	t := &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{&sdkWriter{out: out, ids: ids}}, MaxLineLength: opts.MaxMessageBytes}
	ss, err := c.Connect(ctx, t)
	if err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	ln := &lean{c: c, opts: opts, ss: ss, out: out, ids: ids, inflight: make(map[string]context.CancelFunc)}
	readDone := make(chan error, 1)
	go func() { readDone <- ln.readLoop(ctx, r, pw) }()
	waitDone := make(chan error, 1)
	go func() { waitDone <- ss.Wait() }()

	var readErr error
	select {
	case readErr = <-readDone:
		// The client closed its side: answer what it asked for, then let
		// the SDK session end.
		ln.drain(ctx, waitDone)
		pw.CloseWithError(io.EOF)
		<-waitDone
	case <-waitDone:
		pw.CloseWithError(io.EOF)
	case <-ctx.Done():
		_ = ss.Close()
		pw.CloseWithError(io.EOF)
		<-waitDone
	}
	cancel()
	ln.calls.Wait()
	if readErr != nil && !errors.Is(readErr, io.EOF) {
		return readErr
	}
	return nil
}

// drainTimeout bounds how long requests read before the end of input may
// take to be answered; after it they are cancelled, as for a client that went
// away mid-call.
const drainTimeout = 5 * time.Second

// drain waits, at most drainTimeout, until every request read before the end
// of input has been answered, on the lean path and by the SDK.
func (l *lean) drain(ctx context.Context, sdkDone <-chan error) {
	timer := time.NewTimer(min(drainTimeout, l.opts.CallTimeout))
	defer timer.Stop()
	calls := make(chan struct{})
	go func() { l.calls.Wait(); close(calls) }()
	select {
	case <-calls:
	case <-timer.C:
		return
	case <-ctx.Done():
		return
	}
	if idle := l.ids.idle(); idle != nil {
		select {
		case <-idle:
		case <-sdkDone:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
}

// frameWriter serialises whole frames onto the downstream stream.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

// sdkIDs keeps the ids of the requests handed to the SDK that are not yet
// answered, and the client's own spelling of the ids it swapped.
type sdkIDs struct {
	mu      sync.Mutex
	next    uint64
	pending map[string]int             // id as the SDK sees it -> requests in flight; guarded by mu
	mapped  map[string]json.RawMessage // proxy id -> client id; guarded by mu
	empty   chan struct{}              // closed when pending empties; guarded by mu
}

// add records a request for the SDK and returns the id to give it.
func (m *sdkIDs) add(id []byte) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if frame.NeedsMapping(id) {
		m.next++
		own := strconv.AppendUint([]byte(frame.MappedIDPrefix), m.next, 10)
		own = append(own, '"')
		m.mapped[string(own)] = bytes.Clone(id)
		id = own
	}
	m.pending[string(id)]++
	return id
}

// has reports whether a request with id (as the client wrote it) is pending.
func (m *sdkIDs) has(id []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending[string(id)] > 0
}

// own returns the proxy's id for the pending request the client calls id,
// or nil.
func (m *sdkIDs) own(id []byte) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	for own, orig := range m.mapped {
		if bytes.Equal(orig, id) {
			return []byte(own)
		}
	}
	return nil
}

// answered records the SDK's answer to id and returns the id to send the
// client.
func (m *sdkIDs) answered(id []byte) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := string(id)
	if n := m.pending[key]; n > 1 {
		m.pending[key] = n - 1
	} else if n == 1 {
		delete(m.pending, key)
	}
	if len(m.pending) == 0 && m.empty != nil {
		close(m.empty)
		m.empty = nil
	}
	if orig, ok := m.mapped[key]; ok {
		delete(m.mapped, key)
		return orig
	}
	return id
}

// idle returns a channel closed once no SDK request is pending, or nil if
// none is.
func (m *sdkIDs) idle() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return nil
	}
	if m.empty == nil {
		m.empty = make(chan struct{})
	}
	return m.empty
}

// sdkWriter is the SDK's side of the downstream stream: it puts the client's
// ids back into the SDK's responses.
type sdkWriter struct {
	out *frameWriter
	ids *sdkIDs
}

var sdkFramePrefix = []byte(`{"jsonrpc":"2.0","id":`)

func (w *sdkWriter) Write(p []byte) (int, error) {
	// The SDK writes the members in a fixed order: jsonrpc, id, then method
	// (a request of its own) or result/error (a response).
	if bytes.HasPrefix(p, sdkFramePrefix) {
		at := len(sdkFramePrefix)
		end := jsonscan.SkipValue(p, at)
		if !bytes.HasPrefix(p[end:], []byte(`,"method"`)) {
			id := w.ids.answered(p[at:end])
			if !bytes.Equal(id, p[at:end]) {
				q := make([]byte, 0, len(p)+len(id))
				q = append(append(append(q, p[:at]...), id...), p[end:]...)
				if _, err := w.out.Write(q); err != nil {
					return 0, err
				}
				return len(p), nil
			}
		}
	}
	return w.out.Write(p)
}

// lean is the stdio hot path for tools/call.
type lean struct {
	c    Core
	opts Options
	ss   *mcp.ServerSession
	out  *frameWriter
	ids  *sdkIDs

	calls    sync.WaitGroup
	mu       sync.Mutex
	inflight map[string]context.CancelFunc // downstream request id -> cancel; guarded by mu
}

// readLoop reads frames from r. tools/call requests are served on the lean path;
// everything else is handed to the SDK through sdk. A line longer than the
// limit is discarded (its bytes are not kept) and answered with an error.
func (l *lean) readLoop(ctx context.Context, r io.Reader, sdk io.Writer) error {
	br := bufio.NewReaderSize(r, 256<<10)
	limit := l.opts.MaxMessageBytes
	var long []byte
	over := 0 // bytes of the oversized line being discarded
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			switch {
			case over > 0:
				over += len(chunk)
			case len(long)+len(chunk) > limit+2: // "\r\n" may follow
				over = len(long) + len(chunk)
				long = nil
			default:
				long = append(long, chunk...)
			}
			continue
		}
		line := chunk
		switch {
		case over > 0:
			l.writeError(wire.NullID, tooLarge(over+len(chunk), limit))
			line, over = nil, 0
		case long != nil:
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 {
			if werr := l.handle(ctx, line, sdk, limit); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}

func tooLarge(n, limit int) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
		"invalid request: a message of %d bytes exceeds max_message_bytes (%d); it was discarded. Send smaller messages or raise max_message_bytes", n, limit)}
}

// handle checks one line and serves it: on the lean path, through the SDK,
// or with an error answer. It returns an error only when the SDK is gone.
func (l *lean) handle(ctx context.Context, line []byte, sdk io.Writer, limit int) error {
	if msg := bytes.TrimSpace(line); len(msg) == 0 {
		return nil // blank line
	} else if len(msg) >= limit { // the SDK counts the newline too
		l.writeError(wire.NullID, tooLarge(len(msg), limit))
		return nil
	}
	f := frame.Check(line)
	switch f.Kind {
	case wire.Bad:
		if f.Bad == nil {
			l.c.Log().Warn("dropped a downstream message", "why", f.Why, "line", truncate(f.Msg, 200))
		} else {
			l.writeError(f.BadID, &jsonrpc.Error{Code: f.Bad.Code, Message: f.Bad.Message})
		}
		return nil
	case wire.Request:
		if l.inUse(f.ID) {
			l.writeError(f.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "invalid request: id " + string(f.ID) + " is already used by a request in flight; use a new id for every request"})
			return nil
		}
		fallthrough
	case wire.Notification:
		if l.divert(ctx, f) {
			return nil
		}
	}
	msg := f.Msg
	if f.Kind == wire.Notification && f.Method == "notifications/cancelled" {
		if msg = l.mapCancel(f); msg == nil {
			return nil
		}
	}
	var id []byte
	if f.Kind == wire.Request {
		id = l.ids.add(f.ID)
		if !bytes.Equal(id, f.ID) {
			msg = make([]byte, 0, len(f.Msg)+len(id))
			msg = append(append(append(msg, f.Msg[:f.IDAt]...), id...), f.Msg[f.IDAt+len(f.ID):]...)
		}
	}
	// The SDK ends the session on any message it cannot decode: ask its
	// own decoder first (checkResponse already did for responses).
	if f.Kind != wire.Response {
		if _, err := jsonrpc.DecodeMessage(msg); err != nil {
			badID := wire.NullID
			if id != nil {
				l.ids.answered(id)
				badID = f.ID
			}
			l.writeError(badID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()})
			return nil
		}
	}
	buf := make([]byte, 0, len(msg)+1)
	_, err := sdk.Write(append(append(buf, msg...), '\n'))
	return err
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// divert serves a tools/call request (or a tools/list whose answer is
// prepared) on the lean path and reports whether it did. A downstream
// cancellation of a lean call cancels it (and is also passed on to the SDK,
// which ignores ids it does not know).
func (l *lean) divert(ctx context.Context, f wire.Frame) bool {
	if f.Kind == wire.Request && f.Method == "tools/list" {
		return l.list(ctx, f) // listlean.go
	}
	if f.Method != "tools/call" && f.Method != "notifications/cancelled" {
		return false
	}
	switch {
	case f.Kind == wire.Request && f.Method == "tools/call":
		modern, ok := era.Lean(f.Params)
		if !ok {
			return false
		}
		if l.ss.InitializeParams() == nil {
			// Before initialize the SDK answers; a modern client's first
			// request sets the session up there (and tells the proxy its
			// capabilities), the lean path serves the next ones.
			return false
		}
		id := json.RawMessage(bytes.Clone(f.ID))
		// The line is the reader's buffer, read over by the next line:
		// the call keeps a copy.
		fields, err := wire.SplitParams(bytes.Clone(f.Params))
		if err != nil {
			l.writeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid tools/call params: %v", err)})
			return true
		}
		name, ok := wire.RawString(fields["name"])
		if !ok || name == "" {
			l.writeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs a tool name in params.name"})
			return true
		}
		delete(fields, "name")
		if meta, ok := fields["_meta"]; ok && modern {
			ctx = era.WithRequestMeta(ctx, meta) // the bridges read the request's own era
			// The era's own keys describe this request, not the
			// upstream's; the upstream face writes its own.
			if meta = era.StripRequestMeta(meta); meta == nil {
				delete(fields, "_meta")
			} else {
				fields["_meta"] = meta
			}
		}
		if l.c.Observer().Tracing() {
			ctx = observe.WithRequestID(ctx, string(id)) // jsonrpc.request.id of the span
		}
		cctx, cancel := context.WithCancel(ctx)
		key := string(id)
		l.mu.Lock()
		l.inflight[key] = cancel
		l.mu.Unlock()
		l.calls.Add(1)
		// The call is routed and sent on this goroutine unless it may
		// wait (Core.StartCall); its answer is written by whoever completes
		// it, for a child process the goroutine that reads the server's
		// output.
		l.c.StartCall(cctx, l.ss, name, fields, func(raw json.RawMessage, err error) {
			defer l.calls.Done()
			l.mu.Lock()
			delete(l.inflight, key)
			l.mu.Unlock()
			cancelled := cctx.Err() != nil
			cancel()
			if cancelled && err != nil {
				return // cancelled by the client: it ignores any answer
			}
			if err != nil {
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) {
					rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				l.writeError(id, rpcErr)
				return
			}
			if modern {
				raw = era.CallResult(raw, l.c.ServerInfo())
			}
			l.writeResult(id, raw)
		})
		return true
	case f.Kind == wire.Notification && f.Method == "notifications/cancelled":
		if l.ss.InitializeParams() == nil {
			return false
		}
		if rid := wire.Member(f.Params, "requestId"); rid != nil {
			l.mu.Lock()
			cancel := l.inflight[string(rid)]
			l.mu.Unlock()
			if cancel != nil {
				cancel()
				return true
			}
		}
	}
	return false
}

// mapCancel returns the cancellation f as the SDK must see it: a requestId
// the SDK would read as another id (1.5 as 1) is replaced by the proxy's id
// for that request. It returns nil to drop f when no such request is in
// flight.
func (l *lean) mapCancel(f wire.Frame) []byte {
	rid := wire.Member(f.Params, "requestId")
	if len(rid) == 0 || !frame.NeedsMapping(rid) {
		return f.Msg
	}
	own := l.ids.own(rid)
	if own == nil {
		return nil
	}
	at := cap(f.Msg) - cap(rid) // rid is a slice of f.Msg
	msg := make([]byte, 0, len(f.Msg)+len(own))
	return append(append(append(msg, f.Msg[:at]...), own...), f.Msg[at+len(rid):]...)
}

// inUse reports whether a request with id is in flight on either path. The
// SDK does not answer a request whose id is in use, so it must not see one.
// (Swapped ids are unique; a client id swapped twice is answered twice.)
func (l *lean) inUse(id []byte) bool {
	l.mu.Lock()
	_, lean := l.inflight[string(id)]
	l.mu.Unlock()
	return lean || l.ids.has(id)
}

func (l *lean) writeResult(id, result json.RawMessage) {
	_, _ = l.out.Write(append(frame.Response(id, result, nil), '\n'))
}

func (l *lean) writeError(id json.RawMessage, e *jsonrpc.Error) {
	_, _ = l.out.Write(append(frame.Response(id, nil, e), '\n'))
}

// nopWriteCloser adapts an io.Writer that the proxy must not close.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
