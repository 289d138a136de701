package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

// deliver passes r to the raw call id, if it is still waiting.
func (c *child) deliver(id uint64, r reply) bool {
	c.pmu.Lock()
	fn, ok := c.pending[id]
	delete(c.pending, id)
	c.pmu.Unlock()
	if ok {
		fn(r) // one reply per call
	}
	return ok
}

// forget drops the pending raw call id; false if a reply was already sent.
func (c *child) forget(id uint64) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// endCalls fails every pending raw call and all later ones with err.
func (c *child) endCalls(err error) {
	c.pmu.Lock()
	if c.ended != nil {
		c.pmu.Unlock()
		return
	}
	c.ended = err
	fns := make([]func(reply), 0, len(c.pending))
	for id, fn := range c.pending {
		fns = append(fns, fn)
		delete(c.pending, id)
	}
	c.pmu.Unlock()
	for _, fn := range fns { // outside the lock: a completion may write downstream
		fn(reply{err: err})
	}
}

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledFrame = 64 << 10

// sendCall writes the tools/call frame of id with params (and the
// connection's _meta, if any) to the server in one write, from a pooled
// buffer.
func (c *child) sendCall(id uint64, params json.RawMessage) error {
	if m := c.meta.Load(); m != nil {
		params = withMeta(params, *m)
	}
	bp := framePool.Get().(*[]byte)
	frame := appendCallFrame((*bp)[:0], id, params)
	_, err := c.write(frame)
	if cap(frame) <= maxPooledFrame {
		*bp = frame
		framePool.Put(bp)
	}
	return err
}

// callTool is the raw path: one frame out, the result bytes back, untouched.
func (c *child) callTool(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkParams(params); err != nil {
		return nil, fmt.Errorf("upstream %q: tools/call: %w", c.name, err)
	}
	id := c.nextID.Add(1)
	ch := make(chan reply, 1)
	c.pmu.Lock()
	if err := c.ended; err != nil {
		c.pmu.Unlock()
		return nil, err
	}
	c.pending[id] = func(r reply) { ch <- r } // capacity 1, one reply per call
	c.pmu.Unlock()

	err := c.sendCall(id, params)
	if err != nil {
		c.forget(id)
		c.pmu.Lock()
		ended := c.ended
		c.pmu.Unlock()
		if ended != nil {
			return nil, ended
		}
		return nil, fmt.Errorf("upstream %q: sending tools/call: %v: %w", c.name, err, ErrClosed)
	}

	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		if !c.forget(id) { // the reply won the race
			r := <-ch
			return r.result, r.err
		}
		c.cancelCall(id, ctx.Err())
		return nil, ctx.Err()
	}
}

// callToolAsync is callTool without waiting: done is called exactly once,
// on the stdout reader when the response arrives (so it must be quick), or
// when ctx ends (after the server was told), or when the connection ends.
func (c *child) callToolAsync(ctx context.Context, params json.RawMessage, done func(json.RawMessage, error)) {
	if err := ctx.Err(); err != nil {
		done(nil, err)
		return
	}
	if err := checkParams(params); err != nil {
		done(nil, fmt.Errorf("upstream %q: tools/call: %w", c.name, err))
		return
	}
	id := c.nextID.Add(1)
	var fired atomic.Bool
	var stop func() bool
	var stopMu sync.Mutex
	finish := func(r reply) {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		stopMu.Lock()
		if stop != nil {
			stop()
		}
		stopMu.Unlock()
		done(r.result, r.err)
	}
	c.pmu.Lock()
	if err := c.ended; err != nil {
		c.pmu.Unlock()
		finish(reply{err: err})
		return
	}
	c.pending[id] = finish
	c.pmu.Unlock()

	err := c.sendCall(id, params)
	if err != nil && c.forget(id) {
		if errors.Is(err, ErrNotReading) {
			finish(reply{err: err})
			return
		}
		c.pmu.Lock()
		ended := c.ended
		c.pmu.Unlock()
		if ended == nil {
			ended = fmt.Errorf("upstream %q: sending tools/call: %v: %w", c.name, err, ErrClosed)
		}
		finish(reply{err: ended})
		return
	}
	// The call's end on ctx is set up once the call is on its way, off the
	// path to the server; a ctx done by now ends the call at once (the
	// server then gets the request and its cancellation, in that order).
	stopMu.Lock()
	if !fired.Load() {
		stop = context.AfterFunc(ctx, func() {
			if c.forget(id) {
				c.cancelCall(id, ctx.Err())
				finish(reply{err: ctx.Err()})
			}
		})
	}
	stopMu.Unlock()
}

// cancelCall tells the server that nobody waits for call id any more.
func (c *child) cancelCall(id uint64, cause error) {
	reason, _ := json.Marshal(cause.Error())
	frame := make([]byte, 0, 160)
	frame = append(frame, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mf.`...)
	frame = strconv.AppendUint(frame, id, 10)
	frame = append(frame, `","reason":`...)
	frame = append(frame, reason...)
	frame = append(frame, "}}\n"...)
	if _, err := c.write(frame); err != nil {
		c.log.Debug("sending notifications/cancelled", "err", err)
	}
}

// checkParams makes sure params is one JSON object, so that the frame built
// around it is one valid JSON-RPC message.
func checkParams(params []byte) error {
	p := bytes.TrimLeft(params, " \t\r\n")
	if len(p) == 0 || p[0] != '{' || !jsonscan.Valid(p) {
		return errors.New("params must be a JSON object")
	}
	return nil
}

// appendCallFrame appends a tools/call request line with id "mf.<id>".
// Newlines in params can only be insignificant whitespace; they become spaces
// so that the frame stays one line. All other bytes go out as they came.
func appendCallFrame(dst []byte, id uint64, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":"mf.`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `","method":"tools/call","params":`...)
	start := len(dst)
	dst = append(dst, params...)
	if bytes.IndexByte(params, '\n') >= 0 || bytes.IndexByte(params, '\r') >= 0 { // two memchr, not ContainsAny's loop
		for i := start; i < len(dst); i++ {
			if dst[i] == '\n' || dst[i] == '\r' {
				dst[i] = ' '
			}
		}
	}
	return append(dst, "}\n"...)
}

// parseRawID parses a raw-path id, the JSON string "mf.<digits>".
func parseRawID(raw []byte) (uint64, bool) {
	if len(raw) < 6 || !bytes.HasPrefix(raw, rawIDMarker) || raw[len(raw)-1] != '"' {
		return 0, false
	}
	var n uint64
	for _, b := range raw[4 : len(raw)-1] {
		if b < '0' || b > '9' || n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(b-'0')
	}
	return n, true
}

// findRawID finds `"id": "mf.<digits>"` in a fragment of a message.
func findRawID(b []byte) (uint64, bool) {
	key := []byte(`"id"`)
	for i := 0; ; {
		j := bytes.Index(b[i:], key)
		if j < 0 {
			return 0, false
		}
		k := i + j + len(key)
		i = k
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		if k >= len(b) || b[k] != ':' {
			continue
		}
		k++
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		end := k + len(rawIDMarker)
		for end < len(b) && b[end] >= '0' && b[end] <= '9' {
			end++
		}
		if end < len(b) {
			if id, ok := parseRawID(b[k : end+1]); ok {
				return id, true
			}
		}
	}
}
