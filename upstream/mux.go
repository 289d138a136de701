package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

const (
	stdoutBufSize = 64 << 10
	stderrLineMax = 4 << 10
	noiseLogBytes = 200
)

func (c *child) closeStdin() {
	c.stdinOnce.Do(func() {
		c.stdin.Close()
		close(c.stdinClosed)
	})
}

// write sends one frame (which ends in '\n') to the child's stdin without
// waiting for the child to read it: a caller is never held by a server that
// does not read (for stdio, the goroutine that reads the client sends calls,
// startCall in package proxy). What the pipe does not take at once is queued
// and written in order by flush; a server that leaves more than
// maxQueued(c.max) bytes unread gets no more frames, and the write fails.
func (c *child) write(frame []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	switch {
	case c.werr != nil:
		return 0, c.werr
	case c.flushing:
		if c.queued+len(frame) > maxQueued(c.max) {
			return 0, fmt.Errorf("upstream %q: %w (%d bytes are waiting); nothing was sent", c.name, ErrNotReading, c.queued)
		}
		c.queue = append(c.queue, bytes.Clone(frame))
		c.queued += len(frame)
		return len(frame), nil
	}
	n, err := writeNow(c.stdin, frame)
	if err != nil {
		c.werr = err
		return n, err
	}
	if n < len(frame) {
		c.queue = append(c.queue, bytes.Clone(frame[n:]))
		c.queued, c.flushing = len(frame)-n, true
		go c.flush()
	}
	return len(frame), nil
}

// maxQueued bounds what write queues for a server that does not read: two
// of the largest messages, and at least 1 MiB.
func maxQueued(maxMsg int) int { return max(2*maxMsg, 1<<20) }

// flush writes the queue to stdin, waiting for the child to read, until the
// queue is empty or writing fails (stdin closed: the child is stopping).
func (c *child) flush() {
	for {
		c.wmu.Lock()
		if len(c.queue) == 0 || c.werr != nil {
			c.queue, c.queued, c.flushing = nil, 0, false
			c.wmu.Unlock()
			return
		}
		b := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.queued -= len(b)
		c.wmu.Unlock()
		if _, err := c.stdin.Write(b); err != nil {
			c.wmu.Lock()
			c.werr = err
			c.wmu.Unlock()
		}
	}
}

// stdinWriter is the SDK's side of the child's stdin. The SDK writes one
// whole frame per Write call, so sharing the mutex with the raw path keeps
// frames from interleaving.
type stdinWriter struct{ c *child }

func (w stdinWriter) Write(p []byte) (int, error) {
	if w.c.replayDiscover(p) {
		return len(p), nil
	}
	w.c.noteSent(p)
	return w.c.write(p)
}

func (w stdinWriter) Close() error {
	w.c.closeStdin()
	return nil
}

// readStdout is the only reader of the child's stdout.
func (c *child) readStdout(pw *io.PipeWriter) {
	lr := &lineReader{br: bufio.NewReaderSize(c.stdoutR, stdoutBufSize), max: c.max}
	sdk := pw // nil once the SDK stopped reading
	for {
		line, size, err := lr.next()
		switch {
		case line != nil:
			sdk = c.route(line, sdk)
		case size > 0:
			c.dropOversized(lr, size)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("reading stdout", "err", err)
			}
			break
		}
	}
	if c.closing.Load() {
		c.endCalls(fmt.Errorf("upstream %q: %w", c.name, ErrClosed))
	} else {
		// The exit status and the whole stderr tail come later, in Err.
		c.endCalls(fmt.Errorf("upstream %q: server exited: %w", c.name, ErrClosed))
	}
	// stdoutDone first: whoever sees the SDK fail on EOF must find it closed.
	close(c.stdoutDone)
	pw.Close()
}

var rawIDMarker = []byte(`"mf.`)

// relayLog hands a log message to Options.Log on the reader goroutine, in
// wire order with the responses to raw calls (see relayProgress). It reports
// false if req is not a log message.
func (c *child) relayLog(req *jsonrpc.Request) bool {
	if req.Method != "notifications/message" || req.ID.IsValid() || len(req.Params) == 0 || string(req.Params) == "null" {
		return false
	}
	p := new(mcp.LoggingMessageParams) //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	if err := json.Unmarshal(req.Params, p); err != nil {
		return false
	}
	c.logMsg(p)
	return true
}

// relayProgress hands a progress notification to Options.Progress on the
// reader goroutine, so that it is delivered before the response that follows
// it on the wire (the SDK's notification queue would race the raw path). It
// reports false if req is not a progress notification.
func (c *child) relayProgress(req *jsonrpc.Request) bool {
	if req.Method != "notifications/progress" || req.ID.IsValid() || len(req.Params) == 0 || string(req.Params) == "null" {
		return false
	}
	p := new(mcp.ProgressNotificationParams)
	if err := json.Unmarshal(req.Params, p); err != nil {
		return false
	}
	c.progress(p)
	return true
}

// route delivers one stdout line: to a waiting raw call, to the SDK, or to
// the log. Only a message the SDK decodes (with its own decoder) and will
// not choke on reaches it, since one bad message ends its session for good.
// It returns the SDK pipe, or nil once the SDK is gone.
func (c *child) route(line []byte, sdk *io.PipeWriter) *io.PipeWriter {
	msg := bytes.TrimSpace(line)
	c.spoke.Store(true)
	drop := func(why string) *io.PipeWriter {
		c.log.Warn("dropped stdout line that is not JSON-RPC", "why", why, "line", truncate(msg, noiseLogBytes))
		if c.probing.Load() {
			c.noisy.Store(true)
		}
		return sdk
	}
	switch {
	case len(msg) == 0 || (msg[0] != '{' && msg[0] != '['):
		c.log.Warn("dropped non-JSON stdout line", "line", truncate(msg, noiseLogBytes))
		if c.probing.Load() {
			c.noisy.Store(true)
		}
		return sdk
	case !utf8.Valid(msg):
		if id, ok := findRawID(msg); ok {
			c.deliver(id, reply{err: fmt.Errorf("upstream %q: tools/call response is not valid UTF-8", c.name)})
		}
		return drop("not valid UTF-8")
	case msg[0] == '[':
		return drop("a JSON-RPC batch, which protocol 2025-06-18 and later do not have")
	case jsonscan.Contains(msg, rawIDMarker) && c.divert(msg):
		return sdk
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return drop("not a JSON-RPC message (" + err.Error() + ")")
	}
	switch m := m.(type) {
	case *jsonrpc.Response:
		if !c.sentBySDK(msg) {
			return drop("a response to an id never sent")
		}
	case *jsonrpc.Request:
		if m.ID.IsValid() && !exactID(msg) {
			return drop("a request whose id cannot be echoed exactly")
		}
		if c.progress != nil && c.relayProgress(m) {
			return sdk
		}
		if c.logMsg != nil && c.relayLog(m) {
			return sdk
		}
	}

	if sdk == nil {
		return nil
	}
	if c.probing.Load() {
		// The SDK does not read yet: a message before the answer to the
		// probe would block this reader, and the answer behind it.
		c.log.Warn("dropped a message sent before the server/discover probe was answered", "line", truncate(msg, noiseLogBytes))
		return sdk
	}
	buf := make([]byte, 0, len(msg)+1)
	if _, err := sdk.Write(append(append(buf, msg...), '\n')); err != nil {
		return nil // the SDK closed its end; keep draining for the raw path
	}
	return sdk
}

// exactID reports whether the top-level id of msg (valid JSON) is one the
// SDK echoes byte for byte: an int64 integer or a string without escapes.
func exactID(msg []byte) bool {
	m, _ := splitObject(msg)
	return canonicalID(m.id)
}

func canonicalID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return bytes.IndexByte(id, '\\') < 0
	}
	if string(id) == "-0" {
		return false
	}
	_, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil
}

// noteSent records the id of a request the SDK writes to the server.
func (c *child) noteSent(frame []byte) {
	m, ok := splitObject(frame)
	if !ok || m.method == nil || m.id == nil {
		return
	}
	c.smu.Lock()
	if c.sent == nil {
		c.sent = make(map[string]struct{})
	}
	c.sent[string(m.id)] = struct{}{}
	c.smu.Unlock()
}

// sentBySDK reports whether msg, a response, answers a request the SDK sent
// and that has not been answered yet; it forgets the request.
func (c *child) sentBySDK(msg []byte) bool {
	m, _ := splitObject(msg)
	c.smu.Lock()
	defer c.smu.Unlock()
	_, ok := c.sent[string(m.id)]
	delete(c.sent, string(m.id))
	return ok
}

// divert hands a response to a raw call to its caller. It reports false if
// msg is not such a response. Only the top level of msg is parsed; the
// result is checked to be JSON and copied, never decoded.
func (c *child) divert(msg []byte) bool {
	if !jsonscan.Valid(msg) {
		return false
	}
	m, ok := splitObject(msg)
	if !ok || m.method != nil {
		return false
	}
	id, ok := parseRawID(m.id)
	if !ok {
		return false
	}
	var rep reply
	switch {
	case m.err != nil && string(m.err) != "null":
		we := new(jsonrpc.Error)
		if err := json.Unmarshal(m.err, we); err != nil {
			rep.err = fmt.Errorf("upstream %q: tools/call: malformed error response: %w", c.name, err)
		} else {
			rep.err = we
		}
	case m.result != nil:
		rep.result = bytes.Clone(m.result)
	default:
		rep.err = fmt.Errorf("upstream %q: tools/call response has neither result nor error", c.name)
	}
	if !c.deliver(id, rep) {
		if id > c.nextID.Load() {
			c.log.Warn("dropped stdout line that is not JSON-RPC", "why", "a response to an id never sent", "id", string(m.id))
		} else {
			c.log.Debug("dropped response to a call that is no longer waiting", "id", string(m.id))
		}
	}
	return true
}

// members holds the raw values of the top-level members of a JSON-RPC
// message that the raw path looks at; nil when absent.
type members struct {
	id, method, result, err []byte
}

// splitObject finds the top-level members of msg, which must be valid JSON.
// Keys written with escapes are not recognised.
func splitObject(msg []byte) (m members, ok bool) {
	i := jsonscan.SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return m, false
	}
	i = jsonscan.SkipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return m, true
	}
	for i < len(msg) && msg[i] == '"' {
		end := jsonscan.SkipString(msg, i)
		key := msg[i+1 : end-1]
		i = jsonscan.SkipSpace(msg, end)
		if i >= len(msg) || msg[i] != ':' {
			return m, false
		}
		i = jsonscan.SkipSpace(msg, i+1)
		end = jsonscan.SkipValue(msg, i)
		switch string(key) {
		case "id":
			m.id = msg[i:end]
		case "method":
			m.method = msg[i:end]
		case "result":
			m.result = msg[i:end]
		case "error":
			m.err = msg[i:end]
		}
		i = jsonscan.SkipSpace(msg, end)
		if i >= len(msg) {
			break
		}
		switch msg[i] {
		case '}':
			return m, true
		case ',':
			i = jsonscan.SkipSpace(msg, i+1)
		default:
			return m, false
		}
	}
	return m, false
}

// dropOversized logs a stdout line over the limit and, if it was the
// response to a raw call, fails that call.
func (c *child) dropOversized(lr *lineReader, size int) {
	c.log.Warn("dropped oversized stdout line", "bytes", size, "limit", c.max,
		"head", truncate(lr.head, noiseLogBytes))
	for _, edge := range [][]byte{lr.head, lr.tail} {
		if id, ok := findRawID(edge); ok {
			c.deliver(id, reply{err: fmt.Errorf(
				"upstream %q: tools/call response of %d bytes exceeds the %d-byte limit; raise max message size or ask for less",
				c.name, size, c.max)})
			return
		}
	}
}

// truncate returns b as a string of at most n bytes.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// lineReader splits a stream into lines of bounded size without a per-line
// allocation for lines that fit its buffer.
type lineReader struct {
	br   *bufio.Reader
	max  int    // longest line kept, without its terminator
	long []byte // a line longer than br's buffer
	head []byte // first bytes of the last oversized line
	tail []byte // last bytes of the last oversized line
}

const (
	edgeBytes   = 256
	keptLongBuf = 1 << 20
)

// next returns the next line with its '\n' (absent on the last line before
// EOF) and its size in bytes. A line longer than max is skipped: line is nil,
// size (> 0) says how long it was, and head and tail keep its ends. At the end
// of input, line is nil and size 0. err is the reader's error; line may be set
// along with it.
func (r *lineReader) next() (line []byte, size int, err error) {
	if cap(r.long) > keptLongBuf {
		r.long = nil // do not keep a huge buffer for ever
	}
	r.long = r.long[:0]
	over := false
	for {
		chunk, rerr := r.br.ReadSlice('\n')
		size += len(chunk)
		switch {
		case over:
			r.keepTail(chunk)
		case size > r.max+2: // longer than max even without "\r\n"
			over = true
			r.head = append(r.head[:0], r.long[:min(len(r.long), edgeBytes)]...)
			r.head = append(r.head, chunk[:min(len(chunk), edgeBytes-len(r.head))]...)
			r.tail = r.tail[:0]
			r.keepTail(r.long)
			r.keepTail(chunk)
			r.long = r.long[:0]
		case rerr == bufio.ErrBufferFull || len(r.long) > 0:
			r.long = append(r.long, chunk...)
			line = r.long
		default:
			line = chunk
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if !over && len(bytes.TrimRight(line, "\r\n")) > r.max {
			over = true
			r.head = append(r.head[:0], line[:min(len(line), edgeBytes)]...)
			r.tail = r.tail[:0]
			r.keepTail(line)
		}
		if over || size == 0 {
			return nil, size, rerr
		}
		return line, size, rerr
	}
}

// keepTail keeps the last edgeBytes bytes seen in tail.
func (r *lineReader) keepTail(b []byte) {
	if len(b) >= edgeBytes {
		r.tail = append(r.tail[:0], b[len(b)-edgeBytes:]...)
		return
	}
	r.tail = append(r.tail, b...)
	if n := len(r.tail) - edgeBytes; n > 0 {
		r.tail = append(r.tail[:0], r.tail[n:]...)
	}
}
