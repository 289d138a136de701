package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/naming"
)

// downServer returns the server whose namespace holds name (by prefix: an
// error message's guess, never a route) when that server is not up and has
// no listing, so that a call of one of its tools says why instead of
// "unknown tool".
func (c *catalog) downServer(name string) *backend {
	var best *backend
	for _, b := range c.gen.backends {
		p := b.cfg.Prefix
		if p == "" || !strings.HasPrefix(name, p+naming.Separator) || best != nil && len(best.cfg.Prefix) >= len(p) {
			continue
		}
		down := b.Down()
		if down {
			best = b
		}
	}
	return best
}

// callTool forwards one tools/call for the exposed tool name. fields holds the
// downstream params other than "name" as raw JSON (arguments, _meta and
// anything else), forwarded untouched except for the progress token. It returns
// the raw result, or a *jsonrpc.Error to send back as a protocol error, or the
// caller's context error when the downstream cancelled.
func (s *Server) callTool(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage) (json.RawMessage, error) {
	type result struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan result, 1) // a call may answer before startCall returns
	s.startCall(ctx, ss, name, fields, func(raw json.RawMessage, err error) { ch <- result{raw, err} })
	r := <-ch
	return r.raw, r.err
}

// startCall is callTool without waiting: it routes, decides and sends the
// call, and finish gets the outcome exactly once. For a child process the
// completion (result rewriting, audit, finish) runs on the goroutine that
// reads the server's output, so no goroutine waits per call (ARCHITECTURE §3
// "The hot path is lean"); finish must not block for long.
//
// startCall does not wait on its caller's goroutine: a call is routed,
// decided and written to its server there (for stdio, by the goroutine that
// reads the client, with no hand-off per call), and what may wait (the
// initial start, the search surface, a lazy start, a process of its own, a
// shared limit on Redis, a person's approval, a client's retry) goes on on a
// goroutine of its own (mayWait). finish may be called before startCall
// returns.
func (s *Server) startCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	s.run.calledOnce.Do(func() { close(s.run.called) })
	select {
	case <-s.run.ready:
		if !slices.Contains(metaTools, name) || ctx.Value(innerCallKey{}) != nil {
			s.pipeline.Call(ctx, ss, name, fields, finish)
			return
		}
	default:
	}
	go s.pipeline.Call(ctx, ss, name, fields, finish)
}

var markInputRequired = []byte(`"input_required"`)

// handleCallTool is the typed tools/call handler the SDK registers for every
// exposed tool. The routing middleware answers tools/call first (serveCallTool,
// httplean.go), so it runs only for a request that middleware passes on.
func (s *Server) handleCallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw, err := s.callToolRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return typedCallResult(req.Params.Name, raw)
}

// callToolRequest is a tools/call that the SDK decoded (HTTP, and stdio
// frames that the stdio lean path passes on), forwarded as the stdio lean
// path forwards one: it returns the raw result of callTool.
func (s *Server) callToolRequest(ctx context.Context, req *mcp.CallToolRequest) (json.RawMessage, error) {
	if req.Session != nil && req.Session.ID() != "" {
		var done func()
		ctx, done = s.sessions.Calls.Track(ctx, req.Session.ID())
		defer done()
	}
	fields := make(map[string]json.RawMessage, 5)
	if len(req.Params.Arguments) > 0 {
		fields["arguments"] = req.Params.Arguments
	}
	if len(req.Params.Meta) > 0 {
		m, err := json.Marshal(req.Params.Meta)
		if err != nil {
			return nil, err
		}
		fields["_meta"] = m
	}
	if len(req.Params.InputResponses) > 0 {
		m, err := json.Marshal(req.Params.InputResponses)
		if err != nil {
			return nil, err
		}
		fields["inputResponses"] = m
	}
	if req.Params.RequestState != "" {
		fields["requestState"], _ = json.Marshal(req.Params.RequestState)
	}
	return s.callTool(ctx, req.Session, req.Params.Name, fields)
}

// typedCallResult decodes a raw tools/call result of the tool name for the
// SDK to encode again.
func typedCallResult(name string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream result for %q could not be decoded: %v", name, err)}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // "content" is required
	}
	return &res, nil
}
