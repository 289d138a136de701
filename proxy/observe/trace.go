package observe

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
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
// request that carried an MCP request (the SDK's middleware and the lean
// HTTP path set it for tools/call, whose span StartCall starts).
type traceHeaderKey struct{}

type traceHeader struct{ parent, state string }

// requestIDKey is the context key of the JSON-RPC id of a request the
// lean paths serve (the SDK does not show handlers the id).
type requestIDKey struct{}

// WithTraceHeader returns ctx with the W3C trace context (traceparent,
// tracestate) of the HTTP request that carried a tools/call.
func WithTraceHeader(ctx context.Context, parent, state string) context.Context {
	return context.WithValue(ctx, traceHeaderKey{}, traceHeader{parent, state})
}

// WithRequestID returns ctx with id, the raw JSON-RPC id of the request,
// for the jsonrpc.request.id of its span.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// StartCall starts the SERVER span of a tools/call, r saying what the
// caller knows of it (method, target, session, transport, protocol
// version), and returns finish wrapped to end it with the outcome. The
// trace context comes from reqMeta (the _meta of a 2026-07-28 request, nil
// when there is none), else from paramsMeta (params._meta), else from the
// HTTP request's headers (WithTraceHeader).
func (o *Observer) StartCall(ctx context.Context, r telemetry.Request, reqMeta, paramsMeta json.RawMessage, finish func(json.RawMessage, error)) (context.Context, func(json.RawMessage, error)) {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		var str string
		if json.Unmarshal([]byte(id), &str) == nil {
			id = str // a string id, unquoted
		}
		r.RequestID = id
	}
	if reqMeta != nil {
		r.ProtocolVersion = cmp.Or(metaVersion(reqMeta), r.ProtocolVersion)
		r.Traceparent, r.Tracestate = telemetry.FromMeta(reqMeta)
	}
	if r.Traceparent == "" {
		r.Traceparent, r.Tracestate = telemetry.FromMeta(paramsMeta)
	}
	if r.Traceparent == "" {
		if h, ok := ctx.Value(traceHeaderKey{}).(traceHeader); ok {
			r.Traceparent, r.Tracestate = h.parent, h.state
		}
	}
	ctx, span := o.Tracer().StartServer(ctx, r)
	return ctx, func(raw json.RawMessage, err error) {
		span.End(ErrType(raw, err))
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

// TraceUpstream starts the CLIENT span of a request sent to server and
// returns ctx with it (and with its trace context for a remote upstream's
// HTTP headers) and meta with its trace context. Without a tracer, or
// without a span in ctx, it returns them unchanged.
func (o *Observer) TraceUpstream(ctx context.Context, method, target, server string, meta json.RawMessage) (context.Context, json.RawMessage, *telemetry.Span, error) {
	if !o.Tracing() {
		return ctx, meta, nil, nil
	}
	if tp, _ := telemetry.Context(ctx); tp == "" {
		return ctx, meta, nil, nil // no trace context to continue
	}
	ctx, span := o.tracer.StartClient(ctx, telemetry.Request{Method: method, Target: target, Server: server})
	meta, err := telemetry.SetMeta(ctx, meta)
	if err != nil {
		span.End("invalid_meta", 0)
		return ctx, nil, nil, err
	}
	tp, ts := telemetry.Context(ctx)
	return upstream.WithTraceContext(ctx, tp, ts), meta, span, nil
}

// TraceMeta sets the trace context of the span in ctx on a typed request's
// _meta (resources/read, prompts/get) and on ctx for a remote upstream's
// HTTP headers. Without a tracer it returns them unchanged.
func (o *Observer) TraceMeta(ctx context.Context, meta map[string]any) (context.Context, map[string]any) {
	if !o.Tracing() {
		return ctx, meta
	}
	tp, ts := telemetry.Context(ctx)
	if tp == "" {
		return ctx, meta
	}
	out := make(map[string]any, len(meta)+2)
	maps.Copy(out, meta)
	out["traceparent"] = tp
	delete(out, "tracestate")
	if ts != "" {
		out["tracestate"] = ts
	}
	return upstream.WithTraceContext(ctx, tp, ts), out
}

// ErrType is the conventions' error.type of an answer, and its JSON-RPC
// error code (0 if it is not one): the code for a JSON-RPC error,
// "tool_error" for a result with isError set, "cancelled" or "_OTHER" for
// other failures, "" for success.
func ErrType(raw json.RawMessage, err error) (string, int64) {
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
