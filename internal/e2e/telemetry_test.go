package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
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
		"method=tools/list,outcome=ok,server=,tool=":                1, // lists by method alone
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
	// The session's answers were delivered: their streams are in the
	// delivered queue, within a sixteenth of the default bound.
	if got, max := counts(fams, "manifold_http_resume_bytes"), counts(fams, "manifold_http_resume_max_bytes")[""]; got["queue=delivered"] <= 0 || got["queue=delivered"] > max/16 || got["queue=open"] < 0 || max != 10<<20 {
		t.Errorf("manifold_http_resume_bytes = %v, max %v; want delivered bytes within a sixteenth of 10 MiB", got, max)
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
	if fams["manifold_http_resume_bytes"] != nil || fams["manifold_http_resume_max_bytes"] != nil {
		t.Error("a proxy over stdio reports an HTTP event store")
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

// otlpSpan is one span an OTLP receiver got, with its service.name.
type otlpSpan struct {
	service string
	*tracepb.Span
}

func (s otlpSpan) attr(k string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == k {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func (s otlpSpan) hasAttr(k string) bool {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == k {
			return true
		}
	}
	return false
}

// otlpReceiver is an OTLP/HTTP traces endpoint on loopback: it decodes
// each POST /v1/traces (protobuf, the exporters' default) and keeps the
// spans.
type otlpReceiver struct {
	url string // base URL, http://127.0.0.1:PORT
	mu  sync.Mutex
	got []otlpSpan // guarded by mu
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ex coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			t.Errorf("OTLP receiver: %s body (%s) does not decode as ExportTraceServiceRequest: %v", req.Header.Get("Content-Type"), req.Header.Get("Content-Encoding"), err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.GetResourceSpans() {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					r.got = append(r.got, otlpSpan{service, sp})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	r.url = serveLoopback(t, mux)
	return r
}

// span waits for the span of service named name in trace traceID.
func (r *otlpReceiver) span(t *testing.T, service, name string, traceID []byte) otlpSpan {
	t.Helper()
	var found otlpSpan
	waitFor(t, 30*time.Second, fmt.Sprintf("span %q of %s in trace %x", name, service, traceID), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.got {
			if s.service == service && s.GetName() == name && bytes.Equal(s.GetTraceId(), traceID) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

func (r *otlpReceiver) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.got {
		fmt.Fprintf(&b, "%s %q trace %x span %x parent %x kind %v\n", s.service, s.GetName(), s.GetTraceId(), s.GetSpanId(), s.GetParentSpanId(), s.GetKind())
	}
	return b.String()
}

// traceparent builds a W3C traceparent of a fresh trace, sampled, and
// returns it with its trace and parent span ids.
func traceparent(t *testing.T) (tp string, traceID, spanID []byte) {
	t.Helper()
	traceID, spanID = make([]byte, 16), make([]byte, 8)
	if _, err := rand.Read(traceID); err != nil {
		t.Fatal(err)
	}
	if _, err := rand.Read(spanID); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("00-%x-%x-01", traceID, spanID), traceID, spanID
}

// headerRemote serves an MCP server over streamable HTTP on loopback with
// the tool "where", and records the traceparent header of every POST that
// carries a tools/call.
func headerRemote(t *testing.T) (url string, seen func() []string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var got []string
	base := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				mu.Lock()
				got = append(got, r.Header.Get("traceparent"))
				mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	return base + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// headerTransport adds a traceparent header to every request.
type headerTransport struct{ traceparent string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", h.traceparent)
	return http.DefaultTransport.RoundTrip(r)
}

// TestTelemetryTraces serves a traced fixture (-trace: it exports a span per
// request, child of its params._meta.traceparent) and a remote upstream over
// HTTP with [telemetry] traces pointed at an in-test OTLP receiver, and
// calls with a traceparent of the client's. The receiver gets, in the
// client's trace: manifold's SERVER span "tools/call alpha__echo" (the MCP
// semantic conventions' name and attributes) as the child of the client's
// span, its CLIENT span "tools/call echo" under it, and the fixture's span
// under that. A failing call's spans carry error.type; an unknown tool's the
// JSON-RPC code. The remote upstream receives the trace context in the
// traceparent header; a traceparent header on the client's HTTP request is
// followed when _meta has none.
func TestTelemetryTraces(t *testing.T) {
	t.Parallel()
	rcv := startOTLPReceiver(t)
	remote, remoteSeen := headerRemote(t)
	cfg := writeConfig(t, "[telemetry]\ntraces = "+tomlStr(rcv.url)+"\n\n[servers.remote]\nurl = "+tomlStr(remote)+"\n"+
		fixture("alpha", []string{"-tools", "echo,fail", "-trace", rcv.url + "/v1/traces"}))
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	listTools(ctx, t, cs)
	defer func() {
		if t.Failed() {
			t.Logf("spans received:\n%s", rcv.dump())
		}
	}()

	// A call with the client's trace context in params._meta.
	tp, traceID, clientSpan := traceparent(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"traceparent": tp}})
	if err != nil || res.IsError {
		t.Fatalf("alpha__echo: %v %v", err, res)
	}
	server := rcv.span(t, "manifold", "tools/call alpha__echo", traceID)
	if !bytes.Equal(server.GetParentSpanId(), clientSpan) || server.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("manifold's span: parent %x kind %v, want the client's span %x, SERVER", server.GetParentSpanId(), server.GetKind(), clientSpan)
	}
	wantAttrs := map[string]string{
		"mcp.method.name":       "tools/call",
		"gen_ai.tool.name":      "alpha__echo",
		"gen_ai.operation.name": "execute_tool",
		"network.transport":     "tcp",
		"mcp.protocol.version":  protocolVersion,
	}
	for k, want := range wantAttrs {
		if got := server.attr(k); got != want {
			t.Errorf("manifold's span: %s = %q, want %q", k, got, want)
		}
	}
	if sid := server.attr("mcp.session.id"); sid == "" || sid == cs.ID() {
		t.Errorf("manifold's span: mcp.session.id = %q, want the session id %q hashed", sid, cs.ID())
	}
	if server.hasAttr("error.type") {
		t.Errorf("manifold's span of a call that succeeded has error.type %q", server.attr("error.type"))
	}
	client := rcv.span(t, "manifold", "tools/call echo", traceID)
	if !bytes.Equal(client.GetParentSpanId(), server.GetSpanId()) || client.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || client.attr("manifold.upstream") != "alpha" {
		t.Errorf("manifold's upstream span: parent %x kind %v upstream %q, want %x CLIENT alpha", client.GetParentSpanId(), client.GetKind(), client.attr("manifold.upstream"), server.GetSpanId())
	}
	up := rcv.span(t, "fixture-alpha", "tools/call echo", traceID)
	if !bytes.Equal(up.GetParentSpanId(), client.GetSpanId()) {
		t.Errorf("the fixture's span: parent %x, want manifold's upstream span %x", up.GetParentSpanId(), client.GetSpanId())
	}

	// A tool error: error.type on both sides.
	tp, traceID, _ = traceparent(t)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__fail", Meta: mcp.Meta{"traceparent": tp}}); err != nil || !res.IsError {
		t.Fatalf("alpha__fail: %v %v, want an isError result", err, res)
	}
	failed := rcv.span(t, "manifold", "tools/call alpha__fail", traceID)
	if failed.attr("error.type") != "tool_error" || failed.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("manifold's span of a failing call: error.type %q status %v, want tool_error, ERROR", failed.attr("error.type"), failed.GetStatus().GetCode())
	}
	if up := rcv.span(t, "fixture-alpha", "tools/call fail", traceID); up.attr("error.type") != "tool_error" {
		t.Errorf("the fixture's span of a failing call: error.type %q", up.attr("error.type"))
	}

	// An unknown tool: the JSON-RPC error's code.
	tp, traceID, _ = traceparent(t)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__nope", Meta: mcp.Meta{"traceparent": tp}}); err == nil {
		t.Fatal("alpha__nope answered")
	}
	unknown := rcv.span(t, "manifold", "tools/call alpha__nope", traceID)
	if unknown.attr("error.type") != "-32602" || unknown.attr("rpc.response.status_code") != "-32602" {
		t.Errorf("manifold's span of an unknown tool: error.type %q rpc.response.status_code %q, want -32602", unknown.attr("error.type"), unknown.attr("rpc.response.status_code"))
	}

	// A remote upstream gets the trace context in its HTTP headers.
	tp, traceID, _ = traceparent(t)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "remote__where", Meta: mcp.Meta{"traceparent": tp}}); err != nil || res.IsError {
		t.Fatalf("remote__where: %v %v", err, res)
	}
	rc := rcv.span(t, "manifold", "tools/call where", traceID)
	want := fmt.Sprintf("00-%x-%x-01", traceID, rc.GetSpanId())
	if seen := remoteSeen(); !slices.Contains(seen, want) {
		t.Errorf("the remote upstream got traceparent headers %q, want %q (manifold's upstream span)", seen, want)
	}

	// Without _meta, the traceparent header of the client's HTTP request.
	tp, traceID, clientSpan = traceparent(t)
	hc := mcp.NewClient(&mcp.Implementation{Name: "e2e-traced", Version: "0"}, nil)
	hcs, err := hc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.endpoint(), HTTPClient: &http.Client{Transport: headerTransport{tp}, Timeout: testTimeout}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hcs.Close()
	if res := call(ctx, t, hcs, "alpha__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Fatalf("alpha__echo: %s", text(res))
	}
	if s := rcv.span(t, "manifold", "tools/call alpha__echo", traceID); !bytes.Equal(s.GetParentSpanId(), clientSpan) {
		t.Errorf("manifold's span of a call whose HTTP request had a traceparent header: parent %x, want %x", s.GetParentSpanId(), clientSpan)
	}
	// A list is a span too, named by the method.
	if _, err := hcs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if s := rcv.span(t, "manifold", "tools/list", traceID); s.attr("mcp.method.name") != "tools/list" {
		t.Errorf("tools/list span: mcp.method.name %q", s.attr("mcp.method.name"))
	}
}

// TestTelemetryTracesStdio: over stdio (the lean path of tools/call) the
// span carries the request's JSON-RPC id and network.transport pipe, and the
// fixture's span is its grandchild, through the _meta manifold sends.
func TestTelemetryTracesStdio(t *testing.T) {
	t.Parallel()
	rcv := startOTLPReceiver(t)
	sp := startStdio(t, writeConfig(t, "[telemetry]\ntraces = "+tomlStr(rcv.url)+"\n"+
		fixture("alpha", []string{"-tools", "echo", "-trace", rcv.url + "/v1/traces"})))
	ctx := testCtx(t)
	defer func() {
		if t.Failed() {
			t.Logf("spans received:\n%s", rcv.dump())
		}
	}()
	tp, traceID, clientSpan := traceparent(t)
	res, err := sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"traceparent": tp}})
	if err != nil || res.IsError {
		t.Fatalf("alpha__echo: %v %v", err, res)
	}
	server := rcv.span(t, "manifold", "tools/call alpha__echo", traceID)
	if !bytes.Equal(server.GetParentSpanId(), clientSpan) {
		t.Errorf("manifold's span: parent %x, want %x", server.GetParentSpanId(), clientSpan)
	}
	if server.attr("network.transport") != "pipe" || server.attr("jsonrpc.request.id") == "" || server.hasAttr("mcp.session.id") {
		t.Errorf("manifold's span over stdio: network.transport %q jsonrpc.request.id %q mcp.session.id %q, want pipe, the id, none",
			server.attr("network.transport"), server.attr("jsonrpc.request.id"), server.attr("mcp.session.id"))
	}
	client := rcv.span(t, "manifold", "tools/call echo", traceID)
	up := rcv.span(t, "fixture-alpha", "tools/call echo", traceID)
	if !bytes.Equal(client.GetParentSpanId(), server.GetSpanId()) || !bytes.Equal(up.GetParentSpanId(), client.GetSpanId()) {
		t.Errorf("span tree: client span's parent %x (want %x), fixture span's parent %x (want %x)",
			client.GetParentSpanId(), server.GetSpanId(), up.GetParentSpanId(), client.GetSpanId())
	}
}

// TestTelemetryHostileToolNames: an upstream that lists 10,000 tools, of
// which a client calls 300, leaves at most telemetry's per-server bound
// (250) of tool label values, the rest counted as "other"; lists are
// counted per method.
func TestTelemetryHostileToolNames(t *testing.T) {
	t.Parallel()
	const listed, called, bound = 10000, 300, 250
	hp := startHTTP(t, writeConfig(t, "[telemetry]\nmetrics = true\n"+fixture("hostile", []string{"-tools", "echo", "-many", strconv.Itoa(listed)})))
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	listTools(ctx, t, cs) // a catalog this large is served as a search surface; the tools are called by name
	for i := range called {
		if res := call(ctx, t, cs, fmt.Sprintf("hostile__t%d", i), map[string]any{}); res.IsError {
			t.Fatalf("hostile__t%d: %s", i, text(res))
		}
	}
	fams := scrape(ctx, t, "http://"+hp.addr+"/metrics")
	tools := map[string]bool{}
	var other float64
	for k, v := range counts(fams, "manifold_requests_total") {
		if !strings.HasPrefix(k, "method=tools/call,") {
			continue
		}
		if strings.HasSuffix(k, ",tool=other") {
			other += v
			continue
		}
		tools[k] = true
	}
	if len(tools) != bound || other != called-bound {
		t.Errorf("manifold_requests_total: %d tool series and %v calls under other, want %d and %d", len(tools), other, bound, called-bound)
	}
	if n := len(fams["manifold_request_duration_seconds"].GetMetric()); n > bound+10 {
		t.Errorf("manifold_request_duration_seconds has %d series, want at most %d", n, bound+10)
	}
	lists := map[string]float64{}
	for k, v := range counts(fams, "manifold_requests_total") {
		if strings.Contains(k, "/list,") {
			lists[k] = v
		}
	}
	if diff := cmp.Diff(map[string]float64{"method=tools/list,outcome=ok,server=,tool=": 1}, lists); diff != "" {
		t.Errorf("list requests in manifold_requests_total (-want +got):\n%s", diff)
	}
}
