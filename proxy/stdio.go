package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one downstream client over newline-delimited JSON-RPC on r
// and w (the process's stdin and stdout in stdio mode) until r ends or ctx is
// done. Nothing but protocol frames is ever written to w.
//
// tools/call requests travel a lean path (ARCHITECTURE §3 "The hot path is
// lean"): the frame is routed and forwarded as raw bytes, and the upstream's
// result bytes come back with only the id swapped, so the SDK's typed layer
// never decodes them. Everything else (initialize, lists, notifications, rare
// requests) goes to the SDK session.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &frameWriter{w: w}
	pr, pw := io.Pipe()
	t := &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{out}, MaxLineLength: s.opts.MaxMessageBytes}
	ss, err := s.server.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	ln := &lean{s: s, ss: ss, out: out, inflight: make(map[string]context.CancelFunc)}
	readDone := make(chan error, 1)
	go func() {
		err := ln.readLoop(ctx, r, pw)
		pw.CloseWithError(io.EOF)
		readDone <- err
	}()
	waitDone := make(chan error, 1)
	go func() { waitDone <- ss.Wait() }()

	var readErr error
	select {
	case readErr = <-readDone:
		// The client closed its side; let the SDK session drain and end.
		<-waitDone
	case <-waitDone:
	case <-ctx.Done():
		_ = ss.Close()
		<-waitDone
	}
	cancel()
	ln.calls.Wait()
	if readErr != nil && !errors.Is(readErr, io.EOF) {
		return readErr
	}
	return nil
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

// lean is the stdio hot path for tools/call.
type lean struct {
	s   *Server
	ss  *mcp.ServerSession
	out *frameWriter

	calls    sync.WaitGroup
	mu       sync.Mutex
	inflight map[string]context.CancelFunc // downstream request id -> cancel; guarded by mu
}

// readLoop reads frames from r. tools/call requests are served on the lean path;
// everything else is handed to the SDK through sdk.
func (l *lean) readLoop(ctx context.Context, r io.Reader, sdk io.Writer) error {
	br := bufio.NewReaderSize(r, 256<<10)
	max := l.s.opts.MaxMessageBytes
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > max {
				return fmt.Errorf("downstream frame larger than %d bytes (max_message_bytes)", max)
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 {
			if !l.divert(ctx, line) {
				if line[len(line)-1] != '\n' {
					line = append(line, '\n')
				}
				if _, werr := sdk.Write(line); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return err
		}
	}
}

var (
	markToolsCall = []byte(`"tools/call"`)
	markCancelled = []byte(`"notifications/cancelled"`)
)

// rawRequest is the part of a frame the lean path reads.
type rawRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// divert serves a tools/call frame on the lean path and reports whether it did.
// A downstream cancellation of a lean call cancels it (and is also passed on to
// the SDK, which ignores ids it does not know).
func (l *lean) divert(ctx context.Context, line []byte) bool {
	trimmed := bytes.TrimLeft(line, " \t\r")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false // batches and junk: the SDK answers them
	}
	isCall := bytes.Contains(line, markToolsCall)
	if !isCall && !bytes.Contains(line, markCancelled) {
		return false
	}
	if l.ss.InitializeParams() == nil {
		return false // before initialize the SDK answers
	}
	var req rawRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return false
	}
	switch {
	case req.Method == "tools/call" && len(req.ID) > 0 && string(req.ID) != "null":
		fields := make(map[string]json.RawMessage, 3)
		if len(req.Params) > 0 && string(req.Params) != "null" {
			if err := json.Unmarshal(req.Params, &fields); err != nil {
				l.writeError(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid tools/call params: %v", err)})
				return true
			}
		}
		var name string
		if err := json.Unmarshal(fields["name"], &name); err != nil || name == "" {
			l.writeError(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs a tool name in params.name"})
			return true
		}
		delete(fields, "name")
		cctx, cancel := context.WithCancel(ctx)
		key := string(req.ID)
		l.mu.Lock()
		l.inflight[key] = cancel
		l.mu.Unlock()
		l.calls.Add(1)
		// The call is routed and sent on a goroutine of its own (a lazy
		// server may have to start first); its answer is written by
		// whoever completes it, for a child process the goroutine that
		// reads the server's output.
		go l.s.startCall(cctx, l.ss, name, fields, func(raw json.RawMessage, err error) {
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
				l.writeError(req.ID, rpcErr)
				return
			}
			l.writeResult(req.ID, raw)
		})
		return true
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil && len(p.RequestID) > 0 {
			l.mu.Lock()
			cancel := l.inflight[string(p.RequestID)]
			l.mu.Unlock()
			if cancel != nil {
				cancel()
				return true
			}
		}
	}
	return false
}

func (l *lean) writeResult(id, result json.RawMessage) {
	buf := make([]byte, 0, len(result)+len(id)+40)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, result...)
	buf = append(buf, "}\n"...)
	_, _ = l.out.Write(buf)
}

func (l *lean) writeError(id json.RawMessage, e *jsonrpc.Error) {
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		return
	}
	_, _ = l.out.Write(append(msg, '\n'))
}
