package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initialize handles a downstream initialize: the first one fixes the client
// capabilities offered to upstreams (Options.WaitForClient) and starts them; the
// result carries the summary of the servers (summary.go).
func (s *Server) initialize(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
		s.learnClient(p.Capabilities, false)
	}
	res, err := next(ctx, method, req)
	ir, ok := res.(*mcp.InitializeResult)
	if err != nil || !ok {
		return res, err
	}
	var client string
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil && p.ClientInfo != nil {
		client = p.ClientInfo.Name
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if text := s.instructions(ctx, ss, client); text != "" {
		out := *ir
		out.Instructions = text
		return &out, nil
	}
	return res, nil
}

// learnClient records, once, the capabilities of the first downstream client
// (its initialize, or its first modern request) as those offered to upstreams,
// and its era (a server that speaks both is spoken to in it), and lets them
// start (Options.WaitForClient; a no-op without it).
func (s *Server) learnClient(caps *mcp.ClientCapabilities, modern bool) {
	if !s.opts.WaitForClient {
		return
	}
	s.client.clientOnce.Do(func() {
		s.client.clientModern.Store(modern)
		s.setClientCaps(caps)
		close(s.client.clientUp)
	})
}
