package perf

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkToolsCallMetrics alternates a call through a manifold with
// metrics off and one through a manifold with [telemetry] metrics on (the
// same single fixture upstream), and reports both p50 latencies and their
// ratio on/off: the cost of counting on the call hot path.
func BenchmarkToolsCallMetrics(b *testing.B) {
	off := proxied(b, 1)
	path := proxyConfig(b, 1, "legacy")
	cfg, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("[telemetry]\nmetrics = true\n"), cfg...), 0o644); err != nil {
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
