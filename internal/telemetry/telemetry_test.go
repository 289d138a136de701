package telemetry

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
)

// series counts the series of the metric family name.
func series(t *testing.T, m *Metrics, name string) []*dto.Metric {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestToolLabelsBounded: calls under 10,000 distinct tool names leave at
// most MaxToolsPerServer+1 tool label values for one server (a hostile
// upstream that lists 10,000 tools), and at most MaxTools+1 in all across
// many servers, however the caller bounded them.
func TestToolLabelsBounded(t *testing.T) {
	const calls = 10000
	tests := []struct {
		name    string
		server  func(i int) string
		maxSeen int // distinct tool label values other than Other
	}{
		{name: "one hostile server", server: func(int) string { return "srv" }, maxSeen: MaxToolsPerServer},
		{name: "many servers", server: func(i int) string { return fmt.Sprintf("srv%d", i%100) }, maxSeen: MaxTools},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Source{})
			for i := range calls {
				m.Request("tools/call", tt.server(i), fmt.Sprintf("hostile_%d", i), "ok", "", time.Millisecond)
			}
			got := series(t, m, "manifold_requests_total")
			tools := map[string]bool{}
			var other float64
			for _, s := range got {
				l := labels(s)
				if l["tool"] == Other {
					other += s.GetCounter().GetValue()
					continue
				}
				tools[l["tool"]] = true
			}
			if len(tools) != tt.maxSeen {
				t.Errorf("%d distinct tool labels, want %d", len(tools), tt.maxSeen)
			}
			if want := float64(calls - tt.maxSeen); other != want {
				t.Errorf("calls counted under %q = %v, want %v", Other, other, want)
			}
			if n, max := len(series(t, m, "manifold_request_duration_seconds")), len(got); n != max {
				t.Errorf("duration histogram has %d series, want %d as the counter", n, max)
			}
			if len(got) > MaxTools+100 { // + one Other series per server
				t.Errorf("manifold_requests_total has %d series, want at most %d", len(got), MaxTools+100)
			}
		})
	}
}

// TestRequestCounts: one request of each kind lands in the right series,
// errors and refusals only for what is not ok, and the duration in the
// right bucket.
func TestRequestCounts(t *testing.T) {
	m := New(Source{})
	m.Request("tools/call", "a", "a__x", "ok", "", 3*time.Millisecond)
	m.Request("tools/call", "a", "a__x", "ok, cut to max_result_bytes", "", 3*time.Millisecond)
	m.Request("tools/call", "a", "a__x", "tool error", "", 3*time.Millisecond)
	m.Request("tools/call", "a", "a__x", "rate limited", "rate_limit", 0)
	m.Request("tools/call", Other, Other, "hidden", "policy", 0)

	count := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range series(t, m, name) {
			l := labels(s)
			k := strings.Join([]string{l["reason"], l["server"], l["tool"], l["outcome"]}, "|")
			out[k] = s.GetCounter().GetValue()
		}
		return out
	}
	if diff := cmp.Diff(map[string]float64{
		"|a|a__x|ok": 1, "|a|a__x|ok, cut to max_result_bytes": 1, "|a|a__x|tool error": 1,
		"|a|a__x|rate limited": 1, "|other|other|hidden": 1,
	}, count("manifold_requests_total")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{
		"|a|a__x|tool error": 1, "|a|a__x|rate limited": 1, "|other|other|hidden": 1,
	}, count("manifold_errors_total")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{
		"rate_limit|a|a__x|": 1, "policy|other|other|": 1,
	}, count("manifold_refusals_total")); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
}

// TestBuckets: the histogram has the documented buckets, and a 3 ms call is
// counted from the 5 ms bucket up, not below.
func TestBuckets(t *testing.T) {
	m := New(Source{})
	m.Request("tools/call", "a", "a__x", "ok", "", 3*time.Millisecond)
	h := series(t, m, "manifold_request_duration_seconds")
	if len(h) != 1 {
		t.Fatalf("got %d histogram series, want 1", len(h))
	}
	var bounds []float64
	var cumul []uint64
	for _, b := range h[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		cumul = append(cumul, b.GetCumulativeCount())
	}
	if diff := cmp.Diff(Buckets, bounds); diff != "" {
		t.Errorf("bucket bounds (-want +got):\n%s", diff)
	}
	want := []uint64{0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	if diff := cmp.Diff(want, cumul); diff != "" {
		t.Errorf("cumulative counts (-want +got):\n%s", diff)
	}
}

// TestGauges: the upstreams' state is one-hot, restarts and era are read at
// scrape time, and the sessions are per transport.
func TestGauges(t *testing.T) {
	m := New(Source{
		Upstreams: func() []Upstream {
			return []Upstream{
				{Name: "a", State: "up", Restarts: 2, Era: "legacy", EraSource: "probe", ProbeSeconds: 0.25},
				{Name: "b", State: "failed", ProbeSeconds: -1},
				{Name: "c", State: "misconfigured", ProbeSeconds: -1},
			}
		},
		Sessions: func() map[string]int { return map[string]int{"http": 3} },
		Resume:   func() (int, int, int, bool) { return 4000, 600, 1 << 20, true },
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, line := range []string{
		`manifold_upstream_state{server="a",state="up"} 1`,
		`manifold_upstream_state{server="a",state="failed"} 0`,
		`manifold_upstream_state{server="b",state="failed"} 1`,
		`manifold_upstream_state{server="c",state="misconfigured"} 1`,
		`manifold_upstream_restarts_total{server="a"} 2`,
		`manifold_upstream_era{era="legacy",server="a",source="probe"} 1`,
		`manifold_upstream_probe_seconds{server="a"} 0.25`,
		`manifold_sessions{transport="http"} 3`,
		`manifold_sessions{transport="stdio"} 0`,
		`manifold_http_resume_bytes{queue="open"} 4000`,
		`manifold_http_resume_bytes{queue="delivered"} 600`,
		`manifold_http_resume_max_bytes 1.048576e+06`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(body, `manifold_upstream_probe_seconds{server="b"}`) || strings.Contains(body, `manifold_upstream_era{era="",`) {
		t.Errorf("/metrics has a probe or era for b, which has none:\n%s", body)
	}
}

// TestNilMetrics: a nil *Metrics (metrics off) records nothing and does not
// allocate.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	if n := testing.AllocsPerRun(100, func() { m.Request("tools/call", "a", "a__x", "ok", "", time.Millisecond) }); n != 0 {
		t.Errorf("Request on nil Metrics allocates %v times per call", n)
	}
}

func BenchmarkRequest(b *testing.B) {
	m := New(Source{})
	for b.Loop() {
		m.Request("tools/call", "a", "a__x", "ok", "", time.Millisecond)
	}
}
