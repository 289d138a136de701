package observe

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/manifold-mcp/manifold/internal/telemetry"
)

// Options says what an Observer feeds; each part is off when left zero.
type Options struct {
	// Audit receives one JSON line per call, resource read and prompt get
	// (already behind the redactor).
	Audit io.Writer
	// AuditArguments logs argument values (redacted).
	AuditArguments bool
	// Metrics counts the requests.
	Metrics *telemetry.Metrics
	// Tracer records the spans.
	Tracer *telemetry.Tracer
	// Listed reports whether tool is an exposed tool visible to someone,
	// the only names the metrics use as labels. Nil counts every tool as
	// telemetry.Other.
	Listed func(tool string) bool
}

// Observer receives the record of each finished request and feeds the
// audit log and the metrics from it, and starts the spans. A nil Observer
// observes nothing.
type Observer struct {
	audit   *auditor           // nil when the audit log is off
	metrics *telemetry.Metrics // nil when the metrics are off
	tracer  *telemetry.Tracer  // nil when traces are off
	listed  func(tool string) bool
}

// New returns the Observer of o.
func New(o Options) *Observer {
	obs := &Observer{metrics: o.Metrics, tracer: o.Tracer, listed: o.Listed}
	if o.Audit != nil {
		obs.audit = &auditor{w: o.Audit, args: o.AuditArguments}
	}
	return obs
}

// Records reports whether a finished request's Record is wanted: the audit
// log or the metrics are on.
func (o *Observer) Records() bool { return o != nil && (o.audit != nil || o.metrics != nil) }

// Audits reports whether the audit log is on.
func (o *Observer) Audits() bool { return o != nil && o.audit != nil }

// Tracing reports whether traces are on.
func (o *Observer) Tracing() bool { return o != nil && o.tracer != nil }

// Tracer is the tracer, nil when traces are off.
func (o *Observer) Tracer() *telemetry.Tracer {
	if o == nil {
		return nil
	}
	return o.tracer
}

// Metrics is the metrics, nil (which counts nothing) when they are off.
func (o *Observer) Metrics() *telemetry.Metrics {
	if o == nil {
		return nil
	}
	return o.metrics
}

// MetricsHandler serves the metrics, or is nil when they are off.
func (o *Observer) MetricsHandler() http.Handler {
	if o.Metrics() == nil {
		return nil
	}
	return o.metrics.Handler()
}

// Record counts rec, a finished request that started at start, in the
// metrics and writes its audit line, with args (the call's raw arguments,
// or nil) when the audit log shows them. The caller fills what rec says of
// the session and the identity.
func (o *Observer) Record(rec Record, start time.Time, args json.RawMessage) {
	if o == nil {
		return
	}
	o.observe(&rec, start)
	o.audit.record(rec, start, args)
}

// Audit writes rec's audit line only: a request the metrics do not count.
func (o *Observer) Audit(rec Record, start time.Time, args json.RawMessage) {
	if o == nil {
		return
	}
	o.audit.record(rec, start, args)
}

// Shutdown exports the spans not yet exported, within ctx.
func (o *Observer) Shutdown(ctx context.Context) error {
	return o.Tracer().Shutdown(ctx)
}

// observe feeds the metrics from a finished request's audit record, so that
// the audit log and the metrics count the same outcomes. Labels come only
// from the configured catalog: a tool name that is not an exposed, visible
// tool (unknown, hidden, of a server that is down) is counted as
// telemetry.Other, never as the client's string.
func (o *Observer) observe(rec *Record, start time.Time) {
	if o.metrics == nil {
		return
	}
	server, tool := rec.Server, ""
	if rec.Method == "tools/call" {
		tool = rec.Exposed
		if o.listed == nil || !o.listed(tool) {
			tool = telemetry.Other
		}
		if server == "" {
			server = telemetry.Other
		}
	}
	refused := ""
	switch rec.Outcome {
	case "rate limited":
		refused = "rate_limit"
	case "hidden", "denied":
		refused = "policy"
	case "budget spent":
		refused = "budget"
	case "argument limit":
		refused = "argument_limit"
	case "awaits review":
		refused = "pin"
	}
	o.metrics.Request(rec.Method, server, tool, rec.Outcome, refused, time.Since(start))
}
