package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions
// for MCP (semantic-conventions-genai, status Development) whose span names
// and attribute names the spans follow.
const SemconvVersion = "semantic-conventions-genai v0.1.0"

// Attribute names of the MCP semantic conventions (and of the general ones
// they refer to) that the spans carry.
const (
	AttrMethod          = "mcp.method.name"
	AttrSession         = "mcp.session.id"
	AttrProtocolVersion = "mcp.protocol.version"
	AttrResourceURI     = "mcp.resource.uri"
	AttrRequestID       = "jsonrpc.request.id"
	AttrToolName        = "gen_ai.tool.name"
	AttrPromptName      = "gen_ai.prompt.name"
	AttrOperation       = "gen_ai.operation.name"
	AttrTransport       = "network.transport"
	AttrStatusCode      = "rpc.response.status_code"
	AttrErrorType       = "error.type"
	AttrServer          = "manifold.upstream" // not in the conventions: which upstream served the request
)

// ErrToolError is the error.type of a tools/call whose result has isError
// set, as the conventions name it.
const ErrToolError = "tool_error"

// TraceOptions configures the OTLP trace exporter.
type TraceOptions struct {
	// Endpoint is the OTLP/HTTP URL the spans are posted to, such as
	// http://127.0.0.1:4318 (a URL without a path gets /v1/traces). If
	// empty, the exporter reads the standard OTEL_EXPORTER_OTLP_ENDPOINT
	// and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variables (default
	// https://localhost:4318/v1/traces).
	Endpoint string
	// Ratio is the share of traces started here that are sampled, from 0
	// to 1; a request whose traceparent says sampled (or not) is followed
	// as its parent says. If zero, no trace is started here.
	Ratio float64
	// Service and Version name the process (service.name and
	// service.version). If empty, "manifold" and none.
	Service, Version string
	// Log receives the exporter's errors. If nil, they are dropped.
	Log *slog.Logger
}

// Tracer makes the spans of one proxy. A nil *Tracer makes none: every
// method is a nil check, so the proxy's hooks cost nothing when traces are
// off.
type Tracer struct {
	tp *sdktrace.TracerProvider
	tr trace.Tracer
}

// ExporterURL returns the URL of the OTLP/HTTP traces endpoint for a
// configured endpoint: endpoint itself when it has a path, else with
// /v1/traces, or an error when it is not an http(s) URL with a host.
func ExporterURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an OTLP/HTTP endpoint; write an http(s) URL such as \"http://127.0.0.1:4318\"", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// NewTracer starts the exporter. Spans are batched and posted in the
// background; Shutdown flushes them.
//
// The OpenTelemetry SDK reports export errors through a process-wide
// handler: NewTracer points it at opts.Log.
func NewTracer(opts TraceOptions) (*Tracer, error) {
	var eo []otlptracehttp.Option
	if opts.Endpoint != "" {
		u, err := ExporterURL(opts.Endpoint)
		if err != nil {
			return nil, err
		}
		eo = append(eo, otlptracehttp.WithEndpointURL(u))
	}
	exp, err := otlptracehttp.New(context.Background(), eo...)
	if err != nil {
		return nil, fmt.Errorf("traces: OTLP exporter: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("traces: export failed", "err", err) }))
	attrs := []attribute.KeyValue{attribute.String("service.name", cmpOr(opts.Service, "manifold"))}
	if opts.Version != "" {
		attrs = append(attrs, attribute.String("service.version", opts.Version))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(opts.Ratio))),
	)
	return &Tracer{tp: tp, tr: tp.Tracer("github.com/manifold-mcp/manifold")}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Shutdown exports the spans not yet sent and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Request describes one MCP request, in the conventions' terms.
type Request struct {
	Method string // mcp.method.name
	// Target is the low-cardinality part of the span name: the tool or
	// prompt name (gen_ai.tool.name, gen_ai.prompt.name); empty for other
	// methods, whose span is named by the method alone.
	Target          string
	ResourceURI     string // mcp.resource.uri of resources/read and subscriptions
	Session         string // the session id, exported hashed (see SessionAttr)
	ProtocolVersion string // mcp.protocol.version
	RequestID       string // jsonrpc.request.id, when known
	Transport       string // network.transport: "pipe" (stdio) or "tcp" (HTTP)
	Server          string // the upstream that serves it, when known
	// Traceparent and Tracestate are the W3C trace context the request
	// came with (params._meta, else the HTTP headers); empty if none.
	Traceparent, Tracestate string
}

// Span is one request's span. A nil *Span does nothing.
type Span struct{ s trace.Span }

// StartServer starts the span of a request the proxy received (kind
// SERVER), child of the request's trace context if it has a valid one.
func (t *Tracer) StartServer(ctx context.Context, r Request) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	if r.Traceparent != "" {
		c := propagation.MapCarrier{"traceparent": r.Traceparent}
		if r.Tracestate != "" {
			c["tracestate"] = r.Tracestate
		}
		// The request's context replaces any span ctx had: the client
		// said where this request belongs.
		ctx = propagation.TraceContext{}.Extract(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), c)
	}
	return t.start(ctx, trace.SpanKindServer, r)
}

// StartClient starts the span of a request the proxy sends to an upstream
// (kind CLIENT), child of the span in ctx.
func (t *Tracer) StartClient(ctx context.Context, r Request) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	return t.start(ctx, trace.SpanKindClient, r)
}

func (t *Tracer) start(ctx context.Context, kind trace.SpanKind, r Request) (context.Context, *Span) {
	name := r.Method
	if r.Target != "" {
		name += " " + r.Target
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String(AttrMethod, r.Method))
	switch r.Method {
	case "tools/call":
		attrs = append(attrs, attribute.String(AttrToolName, r.Target), attribute.String(AttrOperation, "execute_tool"))
	case "prompts/get":
		attrs = append(attrs, attribute.String(AttrPromptName, r.Target))
	}
	for _, kv := range [...]struct{ k, v string }{
		{AttrResourceURI, r.ResourceURI},
		{AttrSession, SessionAttr(r.Session)},
		{AttrProtocolVersion, r.ProtocolVersion},
		{AttrRequestID, r.RequestID},
		{AttrTransport, r.Transport},
		{AttrServer, r.Server},
	} {
		if kv.v != "" {
			attrs = append(attrs, attribute.String(kv.k, kv.v))
		}
	}
	ctx, s := t.tr.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, &Span{s}
}

// SessionAttr is the mcp.session.id exported for a session id: the first
// 16 hex digits of its SHA-256, so that spans of one session group
// together while the id itself, which lets its holder use the session,
// never leaves the proxy.
func SessionAttr(id string) string {
	if id == "" {
		return ""
	}
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:8])
}

// SetServer records which upstream served the request.
func (s *Span) SetServer(name string) {
	if s == nil || name == "" {
		return
	}
	s.s.SetAttributes(attribute.String(AttrServer, name))
}

// End ends the span. errType is the conventions' error.type ("" when the
// request succeeded): ErrToolError, a JSON-RPC error code, or a short word;
// code is the JSON-RPC error code, if the answer was one (else 0).
func (s *Span) End(errType string, code int64) {
	if s == nil {
		return
	}
	if code != 0 {
		s.s.SetAttributes(attribute.String(AttrStatusCode, strconv.FormatInt(code, 10)))
	}
	if errType != "" {
		s.s.SetAttributes(attribute.String(AttrErrorType, errType))
		s.s.SetStatus(codes.Error, errType)
	}
	s.s.End()
}

// Context returns the W3C trace context of the span in ctx (traceparent,
// tracestate), to pass to an upstream; both are empty when ctx has no
// valid span.
func Context(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// FromMeta returns the traceparent and tracestate members of a raw
// params._meta object (the MCP conventions' carrier); empty when absent or
// not strings.
func FromMeta(meta json.RawMessage) (traceparent, tracestate string) {
	if len(meta) == 0 || !strings.Contains(string(meta), `"traceparent"`) {
		return "", ""
	}
	var m struct {
		TP any `json:"traceparent"`
		TS any `json:"tracestate"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return "", ""
	}
	traceparent, _ = m.TP.(string)
	tracestate, _ = m.TS.(string)
	return traceparent, tracestate
}

// SetMeta returns the raw _meta object meta (null or empty for none) with
// traceparent and tracestate set to the trace context of the span in ctx,
// replacing the ones it had; meta unchanged when ctx has no valid span.
func SetMeta(ctx context.Context, meta json.RawMessage) (json.RawMessage, error) {
	tp, ts := Context(ctx)
	if tp == "" {
		return meta, nil
	}
	m := map[string]json.RawMessage{}
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, fmt.Errorf("_meta is not an object: %w", err)
		}
	}
	m["traceparent"], _ = json.Marshal(tp)
	delete(m, "tracestate")
	if ts != "" {
		m["tracestate"], _ = json.Marshal(ts)
	}
	return json.Marshal(m)
}
