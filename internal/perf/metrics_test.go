package perf

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkToolsCallMetrics alternates a call through a manifold with
// metrics off and one through a manifold with [telemetry] metrics on (the
// same single fixture upstream), and reports both p50 latencies and their
// ratio on/off: the cost of counting on the call hot path.
func BenchmarkToolsCallMetrics(b *testing.B) {
	offOn(b, "[telemetry]\nmetrics = true\n")
}

// BenchmarkToolsCallTraces is BenchmarkToolsCallMetrics with [telemetry]
// traces on instead, exporting every span (traces_ratio 1) to an OTLP
// endpoint on loopback that reads and drops them: the cost of the spans,
// of passing the trace context upstream and of the export.
func BenchmarkToolsCallTraces(b *testing.B) {
	var posts atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		posts.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	offOn(b, "[telemetry]\ntraces = "+strconv.Quote("http://"+ln.Addr().String())+"\n")
	b.ReportMetric(float64(posts.Load()), "otlp-posts")
}

// offOn alternates a call through a manifold without telemetry and one
// through a manifold whose config adds the table telemetry, and reports both
// p50 latencies and their ratio on/off.
func offOn(b *testing.B, telemetry string) {
	off := proxied(b, 1)
	path := proxyConfig(b, 1, "legacy")
	cfg, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	// After the server tables: a table header ends the top level.
	if err := os.WriteFile(path, append(cfg, "\n"+telemetry...), 0o644); err != nil {
		b.Fatal(err)
	}
	on := connect(b, bins.manifold, "serve", "--config", path)
	ctx := context.Background()
	for range 50 {
		for _, c := range []*conn{off, on} {
			if err := call(ctx, c, "s0__echo"); err != nil {
				b.Fatal(err)
			}
		}
	}
	var offL, onL []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := call(ctx, off, "s0__echo"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := call(ctx, on, "s0__echo"); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		offL = append(offL, t1.Sub(t0))
		onL = append(onL, t2.Sub(t1))
	}
	b.StopTimer()
	po, pn := p50(offL), p50(onL)
	b.ReportMetric(float64(po.Microseconds()), "off-p50-µs")
	b.ReportMetric(float64(pn.Microseconds()), "on-p50-µs")
	b.ReportMetric(float64(pn)/float64(po), "p50-ratio")
}
