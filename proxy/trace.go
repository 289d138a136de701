package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/upstream"
)

// Traces follow the OpenTelemetry semantic conventions for MCP
// (telemetry.SemconvVersion): a SERVER span per request the proxy receives,
// named "{mcp.method.name} {target}", child of the trace context the request
// carries (params._meta.traceparent, else the HTTP traceparent header); for a
// tools/call a CLIENT span per upstream call under it; and the context of
// the innermost span passed on to the upstream in params._meta (and, for a
// remote upstream, in the HTTP headers too), so that the upstream's own span
// is its child. With Options.Tracer nil none of this runs.

// traceHeaderKey is the context key of the W3C trace context of the HTTP
// request that carried an MCP request (telemetryMiddleware sets it for
// tools/call, whose span startCall starts).
type traceHeaderKey struct{}

type traceHeader struct{ parent, state string }

// requestIDKey is the context key of the JSON-RPC id of a request the
// stdio lean path serves (the SDK does not show handlers the id).
type requestIDKey struct{}

// listMethods are counted in the metrics per method (the calls, reads and
// gets are counted with their server and name where they are served).
var listMethods = map[string]bool{
	"tools/list": true, "resources/list": true, "resources/templates/list": true, "prompts/list": true,
}

// telemetryMiddleware starts the span of every request the SDK serves
// (tools/call's own starts in startCall, which the lean path also takes)
// and counts the list requests. It is installed only when traces or
// metrics are on.
func (s *Server) telemetryMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		var hdr traceHeader
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			hdr = traceHeader{ex.Header.Get("traceparent"), ex.Header.Get("tracestate")}
		}
		start := time.Now()
		var span *telemetry.Span
		if s.tracer != nil {
			if method == "tools/call" {
				if hdr.parent != "" {
					ctx = context.WithValue(ctx, traceHeaderKey{}, hdr)
				}
			} else {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				r := s.spanRequest(ss, method)
				r.Traceparent, r.Tracestate = hdr.parent, hdr.state
				if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
					if tp, ts := metaTrace(p.GetMeta()); tp != "" {
						r.Traceparent, r.Tracestate = tp, ts
					}
				}
				switch p := req.GetParams().(type) {
				case *mcp.GetPromptParams:
					if p != nil {
						r.Target = p.Name
					}
				case *mcp.ReadResourceParams:
					if p != nil {
						r.ResourceURI = redact.URL(p.URI)
					}
				case *mcp.SubscribeParams:
					if p != nil {
						r.ResourceURI = redact.URL(p.URI)
					}
				case *mcp.UnsubscribeParams:
					if p != nil {
						r.ResourceURI = redact.URL(p.URI)
					}
				}
				ctx, span = s.tracer.StartServer(ctx, r)
			}
		}
		res, err := next(ctx, method, req)
		if span != nil {
			span.End(errType(nil, err))
		}
		if listMethods[method] {
			outcome := "ok"
			if err != nil {
				outcome = "error"
			}
			s.metrics.Request(method, "", "", outcome, "", time.Since(start))
		}
		return res, err
	}
}

// spanRequest is what a span of method on ss says of the session.
func (s *Server) spanRequest(ss *mcp.ServerSession, method string) telemetry.Request {
	r := telemetry.Request{Method: method, Transport: "pipe"}
	if ss != nil {
		if id := ss.ID(); id != "" {
			r.Session, r.Transport = id, "tcp"
		}
		if ip := ss.InitializeParams(); ip != nil {
			r.ProtocolVersion = ip.ProtocolVersion
		}
	}
	return r
}

// metaTrace reads traceparent and tracestate from a request's _meta.
func metaTrace(m map[string]any) (traceparent, tracestate string) {
	traceparent, _ = m["traceparent"].(string)
	tracestate, _ = m["tracestate"].(string)
	return traceparent, tracestate
}

// startCallSpan starts the SERVER span of a tools/call of name, and returns
// finish wrapped to end it with the outcome.
func (s *Server) startCallSpan(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (context.Context, func(json.RawMessage, error)) {
	r := s.spanRequest(ss, "tools/call")
	r.Target = name
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		var str string
		if json.Unmarshal([]byte(id), &str) == nil {
			id = str // a string id, unquoted
		}
		r.RequestID = id
	}
	if m, ok := ctx.Value(requestMetaKey{}).(json.RawMessage); ok {
		r.ProtocolVersion = cmpOr(metaVersion(m), r.ProtocolVersion)
		r.Traceparent, r.Tracestate = telemetry.FromMeta(m)
	}
	if r.Traceparent == "" {
		r.Traceparent, r.Tracestate = telemetry.FromMeta(fields["_meta"])
	}
	if r.Traceparent == "" {
		if h, ok := ctx.Value(traceHeaderKey{}).(traceHeader); ok {
			r.Traceparent, r.Tracestate = h.parent, h.state
		}
	}
	ctx, span := s.tracer.StartServer(ctx, r)
	return ctx, func(raw json.RawMessage, err error) {
		span.End(errType(raw, err))
		finish(raw, err)
	}
}

// metaVersion is the protocol version a modern request states in _meta.
func metaVersion(meta json.RawMessage) string {
	var m struct {
		Version string `json:"io.modelcontextprotocol/protocolVersion"`
	}
	_ = json.Unmarshal(meta, &m)
	return m.Version
}

// traceUpstream starts the CLIENT span of a request sent to server and
// returns ctx with it (and with its trace context for a remote upstream's
// HTTP headers) and meta with its trace context. Without a tracer, or
// without a span in ctx, it returns them unchanged.
func (s *Server) traceUpstream(ctx context.Context, method, target, server string, meta json.RawMessage) (context.Context, json.RawMessage, *telemetry.Span, error) {
	if s.tracer == nil {
		return ctx, meta, nil, nil
	}
	if tp, _ := telemetry.Context(ctx); tp == "" {
		return ctx, meta, nil, nil // no trace context to continue
	}
	ctx, span := s.tracer.StartClient(ctx, telemetry.Request{Method: method, Target: target, Server: server})
	meta, err := telemetry.SetMeta(ctx, meta)
	if err != nil {
		span.End("invalid_meta", 0)
		return ctx, nil, nil, err
	}
	tp, ts := telemetry.Context(ctx)
	return upstream.WithTraceContext(ctx, tp, ts), meta, span, nil
}

// traceMeta sets the trace context of the span in ctx on a typed request's
// _meta (resources/read, prompts/get) and on ctx for a remote upstream's
// HTTP headers. Without a tracer it returns them unchanged.
func (s *Server) traceMeta(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta) {
	if s.tracer == nil {
		return ctx, meta
	}
	tp, ts := telemetry.Context(ctx)
	if tp == "" {
		return ctx, meta
	}
	out := make(mcp.Meta, len(meta)+2)
	maps.Copy(out, meta)
	out["traceparent"] = tp
	delete(out, "tracestate")
	if ts != "" {
		out["tracestate"] = ts
	}
	return upstream.WithTraceContext(ctx, tp, ts), out
}

// errType is the conventions' error.type of an answer, and its JSON-RPC
// error code (0 if it is not one): the code for a JSON-RPC error,
// "tool_error" for a result with isError set, "cancelled" or "_OTHER" for
// other failures, "" for success.
func errType(raw json.RawMessage, err error) (string, int64) {
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		if jsonscan.Contains(raw, wire.MarkIsError) {
			return telemetry.ErrToolError, 0
		}
		return "", 0
	case errors.As(err, &rpcErr):
		return jsonrpcCode(rpcErr.Code), rpcErr.Code
	case errors.Is(err, context.Canceled):
		return "cancelled", 0
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", 0
	default:
		return "_OTHER", 0
	}
}

func jsonrpcCode(c int64) string {
	b, _ := json.Marshal(c)
	return string(b)
}
