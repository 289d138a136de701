package proxy

import (
	"net/http"

	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/proxy/serve/streamable"
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
			figures := s.resume.Load()
			if figures == nil {
				return 0, 0, 0, false
			}
			open, delivered, max = (*figures)()
			return open, delivered, max, true
		},
	})
}

// MetricsHandler serves GET /metrics, or is nil when Options.Metrics is off.
func (s *Server) MetricsHandler() http.Handler {
	return s.obs.MetricsHandler()
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
	return streamable.MetricsServer(opts, m)
}
