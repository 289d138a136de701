package proxy

import (
	"context"
	"encoding/json"
	"github.com/manifold-mcp/manifold/proxy/era"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/proxy/observe"
)

// The spans follow the OpenTelemetry semantic conventions for MCP (see
// proxy/observe); this file is what they read of the SDK's requests and
// sessions.

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
		var hdrParent, hdrState string
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			hdrParent, hdrState = ex.Header.Get("traceparent"), ex.Header.Get("tracestate")
		}
		start := time.Now()
		var span *telemetry.Span
		if s.obs.Tracing() {
			if method == "tools/call" {
				if hdrParent != "" {
					ctx = observe.WithTraceHeader(ctx, hdrParent, hdrState)
				}
			} else {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				r := spanRequest(ss, method)
				r.Traceparent, r.Tracestate = hdrParent, hdrState
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
				ctx, span = s.obs.Tracer().StartServer(ctx, r)
			}
		}
		res, err := next(ctx, method, req)
		if span != nil {
			span.End(observe.ErrType(nil, err))
		}
		if listMethods[method] {
			outcome := "ok"
			if err != nil {
				outcome = "error"
			}
			s.obs.Metrics().Request(method, "", "", outcome, "", time.Since(start))
		}
		return res, err
	}
}

// spanRequest is what a span of method on ss says of the session.
func spanRequest(ss *mcp.ServerSession, method string) telemetry.Request {
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

// startCallSpan starts the SERVER span of a tools/call of name on ss, and
// returns finish wrapped to end it with the outcome (observe.StartCall).
func startCallSpan(obs *observe.Observer, ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (context.Context, func(json.RawMessage, error)) {
	r := spanRequest(ss, "tools/call")
	r.Target = name
	meta, _ := era.RequestMeta(ctx)
	return obs.StartCall(ctx, r, meta, fields["_meta"], finish)
}
