package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url and parses it with the Prometheus text parser.
func scrape(ctx context.Context, t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// counts maps each series of the family name, by its labels written
// k=v,k=v in the order of the label names, to its value (a histogram's count).
func counts(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		k := strings.Join(ls, ",")
		switch {
		case m.Counter != nil:
			out[k] = m.GetCounter().GetValue()
		case m.Gauge != nil:
			out[k] = m.GetGauge().GetValue()
		case m.Histogram != nil:
			out[k] = float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// TestTelemetryMetricsHTTP serves the fixture over HTTP with metrics on and
// makes calls of every outcome: ok, tool error, rate limited, denied by
// policy (hidden) and 40 distinct unknown names. The scrape of /metrics,
// parsed with the Prometheus parser, counts each per label, under the
// exposed names only: no unknown name becomes a label.
func TestTelemetryMetricsHTTP(t *testing.T) {
	t.Parallel()
	const rules = "[rules.slow]\nmatch = \"alpha__echo\"\nrate = \"3/minute\"\n\n[rules.no_link]\nmatch = \"alpha__link\"\ndeny = true\n"
	cfg := policyConfig(t, "policy_files = [\"policy/*.toml\"]\n\n[telemetry]\nmetrics = true\n"+fixture("alpha", []string{"-tools", "echo,fail,link"}),
		map[string]string{"policy/rules.toml": rules})
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	listTools(ctx, t, cs)

	for i := range 4 { // the 4th is over the rate
		res := call(ctx, t, cs, "alpha__echo", map[string]any{"message": "hi"})
		if res.IsError != (i == 3) {
			t.Fatalf("alpha__echo call %d: isError = %v (%s)", i+1, res.IsError, text(res))
		}
	}
	for range 2 {
		if res := call(ctx, t, cs, "alpha__fail", map[string]any{}); !res.IsError {
			t.Fatalf("alpha__fail did not fail: %s", text(res))
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__link"}); err == nil {
		t.Fatal("alpha__link (denied) answered")
	}
	const unknown = 40
	for i := range unknown {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("hostile_%d", i)}); err == nil {
			t.Fatalf("unknown tool hostile_%d answered", i)
		}
	}

	fams := scrape(ctx, t, "http://"+hp.addr+"/metrics")
	const call = "method=tools/call,"
	if diff := cmp.Diff(map[string]float64{
		call + "outcome=ok,server=alpha,tool=alpha__echo":           3,
		call + "outcome=rate limited,server=alpha,tool=alpha__echo": 1,
		call + "outcome=tool error,server=alpha,tool=alpha__fail":   2,
		call + "outcome=hidden,server=alpha,tool=other":             1,
		call + "outcome=unknown tool,server=other,tool=other":       unknown,
	}, counts(fams, "manifold_requests_total")); diff != "" {
		t.Errorf("manifold_requests_total (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{
		call + "outcome=rate limited,server=alpha,tool=alpha__echo": 1,
		call + "outcome=tool error,server=alpha,tool=alpha__fail":   2,
		call + "outcome=hidden,server=alpha,tool=other":             1,
		call + "outcome=unknown tool,server=other,tool=other":       unknown,
	}, counts(fams, "manifold_errors_total")); diff != "" {
		t.Errorf("manifold_errors_total (-want +got):\n%s", diff)
	}
	if got := counts(fams, "manifold_request_duration_seconds")[call+"outcome=ok,server=alpha,tool=alpha__echo"]; got != 3 {
		t.Errorf("duration histogram of alpha__echo ok has %v samples, want 3", got)
	}
	if diff := cmp.Diff(map[string]float64{
		"reason=rate_limit,server=alpha,tool=alpha__echo": 1,
		"reason=policy,server=alpha,tool=other":           1,
	}, counts(fams, "manifold_refusals_total")); diff != "" {
		t.Errorf("manifold_refusals_total (-want +got):\n%s", diff)
	}
	gauges := counts(fams, "manifold_upstream_state")
	if gauges["server=alpha,state=up"] != 1 || gauges["server=alpha,state=failed"] != 0 {
		t.Errorf("manifold_upstream_state = %v, want alpha up", gauges)
	}
	if got := counts(fams, "manifold_upstream_restarts_total")["server=alpha"]; got != 0 {
		t.Errorf("manifold_upstream_restarts_total{server=alpha} = %v, want 0", got)
	}
	if got := counts(fams, "manifold_sessions"); got["transport=http"] != 1 || got["transport=stdio"] != 0 {
		t.Errorf("manifold_sessions = %v, want 1 http session", got)
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "hostile") {
					t.Fatalf("%s has the client's unknown name %q as a label", name, l.GetValue())
				}
			}
		}
	}
}

// TestTelemetryOffByDefault: without [telemetry], GET /metrics is 404.
func TestTelemetryOffByDefault(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo"})))
	req, err := http.NewRequestWithContext(testCtx(t), "GET", "http://"+hp.addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics with metrics off: %s, want 404 Not Found", resp.Status)
	}
}

// TestTelemetryMetricsStdio: in stdio mode, metrics = "ADDR" serves
// /metrics on a listener of its own, counting the stdio client's calls and
// session; a Host header that is not loopback is refused there as on the
// MCP listener.
func TestTelemetryMetricsStdio(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	sp := startStdio(t, writeConfig(t, "[telemetry]\nmetrics = "+tomlStr(addr)+"\n"+fixture("alpha", []string{"-tools", "echo"})))
	ctx := testCtx(t)
	if res := call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Fatalf("alpha__echo: %s", text(res))
	}
	var fams map[string]*dto.MetricFamily
	waitFor(t, 10*time.Second, "the metrics listener", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	fams = scrape(ctx, t, "http://"+addr+"/metrics")
	if got := counts(fams, "manifold_requests_total")["method=tools/call,outcome=ok,server=alpha,tool=alpha__echo"]; got != 1 {
		t.Errorf("alpha__echo ok = %v, want 1; all: %v", got, counts(fams, "manifold_requests_total"))
	}
	if got := counts(fams, "manifold_sessions"); got["transport=stdio"] != 1 || got["transport=http"] != 0 {
		t.Errorf("manifold_sessions = %v, want 1 stdio session", got)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("GET /metrics with Host evil.example: %s, want it refused", resp.Status)
	}
}

// TestTelemetryJSONLogs: with log_format = "json", every line manifold
// writes to stderr in serve is a JSON object with time, level and msg, and
// none shows a secret of the config (an env value the fixture prints, a
// query value in a URL that fails), though both are logged.
func TestTelemetryJSONLogs(t *testing.T) {
	t.Parallel()
	const envSecret, querySecret = "jS3cr3t-env-value-of-json", "jS3cr3t-query-value-of-json"
	remote := "http://" + freePort(t) + "/mcp?api_key=" + querySecret
	cfg := writeConfig(t, "log_format = \"json\"\nlog_level = \"debug\"\n\n[servers.remote]\nurl = "+tomlStr(remote)+"\nstartup_timeout = \"2s\"\n"+
		fixture("local", []string{"-leak", "-tools", "echo"}, `env = { API_SECRET = "`+envSecret+`" }`))
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	if res := call(ctx, t, cs, "local__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Fatalf("local__echo: %s", text(res))
	}
	waitFor(t, 20*time.Second, "the remote server's failure and the fixture's leak in the log", func() bool {
		s := hp.stderr.String()
		return strings.Contains(s, "api_key=[redacted]") && strings.Contains(s, "API_SECRET=[redacted]")
	})
	log := hp.stderr.String()
	assertNoneOf(t, "the JSON log", log, []string{envSecret, querySecret})
	n := 0
	for line := range strings.Lines(log) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line %d is not JSON (%v): %q", n+1, err, line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line %d has no %q: %q", n+1, k, line)
			}
		}
		n++
	}
	if !strings.Contains(log, `"msg":"manifold: serving MCP on http://`) {
		t.Errorf("the JSON log does not say where it serves:\n%s", log)
	}
}
