package proxy

import (
	"net/http"
	"time"

	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/policy"
)

// newMetrics returns the proxy's registry, whose gauges read the upstreams'
// state and the open sessions at scrape time.
func (s *Server) newMetrics() *telemetry.Metrics {
	return telemetry.New(telemetry.Source{
		Upstreams: func() []telemetry.Upstream {
			sts := s.Status()
			out := make([]telemetry.Upstream, len(sts))
			for i, st := range sts {
				out[i] = telemetry.Upstream{Name: st.Name, State: st.State, Restarts: st.Restarts,
					Era: st.Era, EraSource: st.EraSource, ProbeSeconds: -1}
				if st.ProbeMS != nil {
					out[i].ProbeSeconds = float64(*st.ProbeMS) / 1000
				}
			}
			return out
		},
		Sessions: func() map[string]int {
			n := map[string]int{}
			for ss := range s.server.Sessions() {
				// A streamable HTTP session has an id; the stdio one has none.
				if ss.ID() == "" {
					n["stdio"]++
				} else {
					n["http"]++
				}
			}
			return n
		},
		Resume: func() (open, delivered, max int, ok bool) {
			e := s.resume.Load()
			if e == nil {
				return 0, 0, 0, false
			}
			open, delivered = e.held()
			return open, delivered, e.max, true
		},
	})
}

// MetricsHandler serves GET /metrics, or is nil when Options.Metrics is off.
func (s *Server) MetricsHandler() http.Handler {
	if s.metrics == nil {
		return nil
	}
	return s.metrics.Handler()
}

// observe feeds the metrics from a finished request's audit record, so that
// the audit log and the metrics count the same outcomes. Labels come only
// from the configured catalog: a tool name that is not an exposed, visible
// tool (unknown, hidden, of a server that is down) is counted as
// telemetry.Other, never as the client's string.
func (s *Server) observe(rec *auditRecord, start time.Time) {
	if s.metrics == nil {
		return
	}
	server, tool := rec.Server, ""
	if rec.Method == "tools/call" {
		tool = rec.Exposed
		if _, _, ok := s.catalog.Load().visibleTool(tool, policy.Widest); !ok {
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
	s.metrics.Request(rec.Method, server, tool, rec.Outcome, refused, time.Since(start))
}

// MetricsServer returns an http.Server for a listener of the metrics' own
// (stdio mode has no HTTP listener to serve them on): GET /metrics only,
// behind the same Host and Origin checks as [Server.HTTPHandler], so that a
// browser page on another origin cannot read them. It is nil when
// Options.Metrics is off.
func (s *Server) MetricsServer(opts HTTPOptions) *http.Server {
	m := s.MetricsHandler()
	if m == nil {
		return nil
	}
	opts.setDefaults()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m)
	return &http.Server{
		Handler:           checkHostOrigin(opts, mux),
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
