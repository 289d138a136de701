package proxy

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// The lean tools/call path of the requests the SDK decodes: every HTTP
// request (both eras), and the stdio frames the stdio lean path passes on.
// The SDK keeps the transport (sessions, the request's SSE stream that
// progress and the relayed server requests travel on, cancellation,
// resumption); the call is routed, decided, limited, audited and sent by
// startCall, as on the stdio lean path, and the upstream's result bytes are
// answered as they are, after the rewriting startCall and the era do on
// bytes (masking, resource URIs, labels, caps, 2026 output), without a
// typed decode and re-encode (ARCHITECTURE §3 "The hot path is lean").

// rawCallResult is a tools/call result the SDK sends as the bytes it holds.
// The embedded result only makes it an mcp.Result: the SDK may set its
// _meta and resultType, which are not encoded (the bytes carry their own:
// era.CallResult).
type rawCallResult struct {
	mcp.CallToolResult
	raw json.RawMessage
}

// MarshalJSON returns the result's bytes.
func (r *rawCallResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// serveCallTool answers a tools/call that the SDK decoded with the raw
// result of callToolRequest. A result that is not an object with content
// (or an input_required one) is decoded and checked as the typed path does,
// so that what the SDK would refuse or complete stays so.
func (s *Server) serveCallTool(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	raw, err := s.callToolRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	if s.typed || !leanResult(raw) {
		res, err := typedCallResult(req.Params.Name, raw)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	return &rawCallResult{raw: raw}, nil // made strict for a modern client by eraMiddleware
}

// leanResult reports whether raw, a result from callTool, can be answered
// as it is: a JSON object with a content member, or one that asks for input
// (whose content the SDK does not require).
func leanResult(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || !jsonscan.Valid(raw) {
		return false
	}
	if c := wire.Member(raw, "content"); len(c) > 0 && c[0] == '[' {
		return true
	}
	return bytes.Equal(wire.Member(raw, "resultType"), markInputRequired)
}
