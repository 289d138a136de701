// Package telemetry keeps the proxy's Prometheus metrics, served at /metrics, and
// makes its OpenTelemetry spans, exported over OTLP. No other package imports
// Prometheus or OpenTelemetry; the proxy hands it plain values.
package telemetry

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Other is the label value of every tool (or server) name that is not one
// the proxy exposes: an unknown or hidden tool, or a name past MaxTools. A
// client's raw string never becomes a label.
const Other = "other"

// MaxTools bounds the distinct tool label values kept; calls of further tools
// are counted under Other. The caller passes only exposed names; this is the
// bound of last resort (a catalog that grows through reloads).
const MaxTools = 2000

// MaxToolsPerServer bounds the distinct tool label values of one server, so
// that a server that lists thousands of tools (a hostile or broken one)
// cannot take the whole MaxTools from the others: its further tools are
// counted under Other.
const MaxToolsPerServer = 250

// Buckets are the duration histogram's upper bounds, in seconds: from a
// cached answer (1 ms) to a long upstream call (call_timeout defaults to 60s).
var Buckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Upstream is the state of one configured upstream at scrape time.
type Upstream struct {
	Name     string
	State    string // one of States
	Restarts int
	// Era is "modern" or "legacy" while the server runs, EraSource where
	// the era came from (probe, cache or pin); both are empty otherwise.
	Era, EraSource string
	// ProbeSeconds is what the last probe cost; negative when none ran.
	ProbeSeconds float64
}

// States are the values of Upstream.State, each a series of
// manifold_upstream_state (1 for the current state, 0 for the others).
var States = []string{"starting", "up", "restarting", "idle", "failed", "stopped", "misconfigured"}

// Source reads what is gauged at scrape time: the upstreams in config order
// and the open sessions per transport ("stdio", "http").
type Source struct {
	Upstreams func() []Upstream
	Sessions  func() map[string]int
	// Resume reads the HTTP event store kept for resuming streams: the
	// bytes of open and of delivered streams, and its bound; ok is false
	// without an HTTP endpoint.
	Resume func() (open, delivered, max int, ok bool)
}

// Metrics is one proxy's registry. A nil *Metrics records nothing, so the
// proxy's hooks cost one nil check when metrics are off.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refusals *prometheus.CounterVec

	mu        sync.RWMutex
	tools     map[toolKey]struct{} // tool label values in use; guarded by mu
	perServer map[string]int       // len(tools) per server; guarded by mu
}

type toolKey struct{ server, tool string }

// New returns a registry of its own (not the global default, so that two
// proxies in one process or test do not mix) with the process and Go
// collectors and src's gauges.
func New(src Source) *Metrics {
	labels := []string{"method", "server", "tool", "outcome"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "manifold_requests_total",
			Help: "Requests served (tools/call, resources/read, prompts/get), by method, server, exposed tool and outcome.",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "manifold_errors_total",
			Help: "Requests whose outcome was not ok (tool errors, refusals, failures), by method, server, exposed tool and outcome.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "manifold_request_duration_seconds",
			Help:    "Time from receiving a request to its answer, by method, server, exposed tool and outcome.",
			Buckets: Buckets,
		}, labels),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "manifold_refusals_total",
			Help: "Calls refused before reaching an upstream, by reason (rate_limit, policy, budget, argument_limit, pin), server and exposed tool.",
		}, []string{"reason", "server", "tool"}),
		tools:     make(map[toolKey]struct{}),
		perServer: make(map[string]int),
	}
	m.reg.MustRegister(m.requests, m.errors, m.duration, m.refusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&gauges{src: src})
	return m
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry, for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Request records one request. server and tool must be names the proxy
// exposes (or empty, or Other); outcome one of the proxy's fixed outcome
// words. refused is the reason of a call refused before it reached an
// upstream (rate_limit, policy, budget, argument_limit, pin), else "".
func (m *Metrics) Request(method, server, tool, outcome, refused string, d time.Duration) {
	if m == nil {
		return
	}
	tool = m.bound(server, tool)
	m.requests.WithLabelValues(method, server, tool, outcome).Inc()
	m.duration.WithLabelValues(method, server, tool, outcome).Observe(d.Seconds())
	if !OK(outcome) {
		m.errors.WithLabelValues(method, server, tool, outcome).Inc()
	}
	if refused != "" {
		m.refusals.WithLabelValues(refused, server, tool).Inc()
	}
}

// OK reports whether outcome counts as a success.
func OK(outcome string) bool {
	return outcome == "ok" || outcome == "ok, cut to max_result_bytes"
}

// bound returns tool, or Other once MaxTools distinct names, or
// MaxToolsPerServer of server's, are in use.
func (m *Metrics) bound(server, tool string) string {
	if tool == "" || tool == Other {
		return tool
	}
	k := toolKey{server, tool}
	m.mu.RLock()
	_, known := m.tools[k]
	full := len(m.tools) >= MaxTools || m.perServer[server] >= MaxToolsPerServer
	m.mu.RUnlock()
	if known {
		return tool
	}
	if full {
		return Other
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, known := m.tools[k]; known {
		return tool
	}
	if len(m.tools) >= MaxTools || m.perServer[server] >= MaxToolsPerServer {
		return Other
	}
	m.tools[k] = struct{}{}
	m.perServer[server]++
	return tool
}

// gauges reads src at scrape time: nothing is kept between scrapes, so
// state transitions need no hook.
type gauges struct{ src Source }

var (
	descState = prometheus.NewDesc("manifold_upstream_state",
		"1 for the upstream's current state (starting, up, restarting, idle, failed, stopped), 0 for the others.",
		[]string{"server", "state"}, nil)
	descRestarts = prometheus.NewDesc("manifold_upstream_restarts_total",
		"Times the upstream exited and was restarted (since it was configured; a reload that changes it starts again at 0).",
		[]string{"server"}, nil)
	descEra = prometheus.NewDesc("manifold_upstream_era",
		"1 while the upstream runs, labelled with its protocol era (modern or legacy) and where the era came from (probe, cache, pin).",
		[]string{"server", "era", "source"}, nil)
	descProbe = prometheus.NewDesc("manifold_upstream_probe_seconds",
		"What the last era probe of the upstream cost.",
		[]string{"server"}, nil)
	descSessions = prometheus.NewDesc("manifold_sessions",
		"Client sessions open, by transport (stdio, http).",
		[]string{"transport"}, nil)
	descResume = prometheus.NewDesc("manifold_http_resume_bytes",
		"Bytes the initialize era's HTTP streams keep for resumption, records counted, by queue: open (calls in flight, and streams whose client dropped) and delivered (answers written to a client still connected, at most a sixteenth of the bound, dropped first).",
		[]string{"queue"}, nil)
	descResumeMax = prometheus.NewDesc("manifold_http_resume_max_bytes",
		"The bound of manifold_http_resume_bytes, both queues together ([http] max_event_bytes).",
		nil, nil)
)

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descRestarts, descEra, descProbe, descSessions, descResume, descResumeMax} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	if g.src.Upstreams != nil {
		for _, u := range g.src.Upstreams() {
			for _, st := range States {
				v := 0.0
				if st == u.State {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, u.Name, st)
			}
			ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(u.Restarts), u.Name)
			if u.Era != "" {
				ch <- prometheus.MustNewConstMetric(descEra, prometheus.GaugeValue, 1, u.Name, u.Era, u.EraSource)
			}
			if u.ProbeSeconds >= 0 {
				ch <- prometheus.MustNewConstMetric(descProbe, prometheus.GaugeValue, u.ProbeSeconds, u.Name)
			}
		}
	}
	if g.src.Sessions != nil {
		n := g.src.Sessions()
		for _, tr := range []string{"stdio", "http"} {
			ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n[tr]), tr)
		}
	}
	if g.src.Resume != nil {
		if open, delivered, max, ok := g.src.Resume(); ok {
			ch <- prometheus.MustNewConstMetric(descResume, prometheus.GaugeValue, float64(open), "open")
			ch <- prometheus.MustNewConstMetric(descResume, prometheus.GaugeValue, float64(delivered), "delivered")
			ch <- prometheus.MustNewConstMetric(descResumeMax, prometheus.GaugeValue, float64(max))
		}
	}
}
