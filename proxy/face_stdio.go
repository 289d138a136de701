package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/serve/stdio"
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
//
// Every line is checked first (frame.Check): a line that is not one JSON-RPC
// message is answered with a parse error (-32700) or an invalid request
// (-32600) and serving goes on; the SDK, which would end the session on it,
// never sees it. Request ids the SDK would not echo byte for byte are swapped
// for ids of the proxy's own on the way in and back on the way out. When r
// ends, the requests already read are answered before ServeStdio returns.
// The stdio face (proxy/serve/stdio) serves it.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	opts := stdio.Options{MaxMessageBytes: s.opts.MaxMessageBytes, CallTimeout: s.opts.CallTimeout}
	return stdio.Serve(ctx, stdioCore{s}, opts, r, w)
}

// stdioCore is what the stdio face reaches of the proxy (stdio.Core).
type stdioCore struct{ s *Server }

func (c stdioCore) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return c.s.server.Connect(ctx, t, nil)
}

func (c stdioCore) StartCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	c.s.startCall(ctx, ss, name, fields, finish)
}

func (c stdioCore) LeanList(ctx context.Context, ss *mcp.ServerSession, id, params []byte, modern bool) ([]byte, bool) {
	return c.s.leanList(ctx, ss, id, params, modern, nil)
}

func (c stdioCore) ServerInfo() []byte          { return c.s.serverInfo }
func (c stdioCore) Observer() *observe.Observer { return c.s.obs }
func (c stdioCore) Log() *slog.Logger           { return c.s.log }
