package perf

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/internal/perf/outside"
)

var (
	outsideCalls = flag.Int("outside-calls", outside.Outside.Calls, "sequential calls per session of BenchmarkOutside")
	outsideFor   = flag.Duration("outside-for", outside.Outside.For, "how long BenchmarkOutside's 8 workers call, per session")
)

// outsideVersions are the clients of BenchmarkOutside: the outside
// measurement's, and one of 2026-07-28 (to a fixture of that era, directly
// and behind Manifold).
var outsideVersions = []struct{ version, era string }{
	{"2025-11-25", "legacy"},
	{"2026-07-28", "modern"},
}

// outsideTargets starts what BenchmarkOutside measures: the fixture over
// stdio (a process per session) and over its default streamable HTTP
// handler, and Manifold in front of one fixture over stdio (a process per
// session) and over HTTP (manifold serve --http). The HTTP servers run
// until the test's cleanup.
func outsideTargets(tb testing.TB, era string) []outside.Target {
	tb.Helper()
	if bins.err != nil {
		tb.Fatal(bins.err)
	}
	fixture := []string{bins.fixture, "-name", "s0", "-era", era}
	cfg := proxyConfig(tb, 1, era)
	serve := func(command ...string) *outside.Server {
		s, err := outside.Serve(command, "http://127.0.0.1:{port}/mcp")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Stop)
		return s
	}
	dh := serve(append(fixture, "-http", "127.0.0.1:{port}")...)
	mh := serve(bins.manifold, "serve", "--config", cfg, "--http", "127.0.0.1:{port}")
	return []outside.Target{
		{Name: outside.Direct, Transport: outside.Stdio, Command: fixture, Tool: "echo"},
		{Name: "manifold", Transport: outside.Stdio, Command: []string{bins.manifold, "serve", "--config", cfg}, Tool: "s0__echo"},
		{Name: outside.Direct, Transport: outside.HTTP, URL: dh.URL, PID: dh.PID(), Tool: "echo"},
		{Name: "manifold", Transport: outside.HTTP, URL: mh.URL, PID: mh.PID(), Tool: "s0__echo"},
	}
}

// BenchmarkOutside is the outside measurement of issue 42, in the
// repository: a go-sdk client (empty capabilities, an http.Transport
// keeping up to 512 idle connections per host) makes per session 20
// warm-up calls, -outside-calls sequential calls of the fixture's echo
// (500) and then has 8 workers share the session for -outside-for (4.5 s);
// the direct baselines are the fixture over stdio and over its default
// (stateful) streamable HTTP handler, against Manifold in front of one
// fixture over stdio and over HTTP (manifold serve --http). Each of
// -rounds rounds measures the four in turn, a new session each (over
// stdio a new process), the order reversed every other round. It reports
// the medians over the rounds of the ratios Manifold/direct of p50 and of
// throughput at the same transport, with their spread (-min, -max), and
// per call (both phases): the CPU time of Manifold's process, of it with
// its server, of the direct server, of the client, and the read and write
// system calls and voluntary context switches of Manifold's and of the
// direct server's process; and
// the load average at the end. The table of all figures is printed (the
// rounds are logged with -test.v). Unlike
// BenchmarkFloor, calls are not alternated one by one between the sides:
// each side has the machine to itself for its session, as an outside
// client measuring one endpoint after another has. b.N is not used: run
// it with -benchtime 1x.
//
//	nice -n 10 go test ./internal/perf/ -run '^$' -bench BenchmarkOutside -benchtime 1x -args -rounds=5
func BenchmarkOutside(b *testing.B) {
	for _, v := range outsideVersions {
		b.Run(v.version, func(b *testing.B) {
			targets := outsideTargets(b, v.era)
			o := outside.Outside
			o.Version, o.Calls, o.For = v.version, *outsideCalls, *outsideFor
			var logf func(string, ...any)
			if testing.Verbose() {
				logf = b.Logf
			}
			res, err := outside.Rounds(context.Background(), targets, o, *rounds, logf)
			if err != nil {
				b.Fatal(err)
			}
			rows, err := outside.Summarize(targets, res)
			if err != nil {
				b.Fatal(err)
			}
			// On stdout: a benchmark's log keeps only its first lines.
			fmt.Printf("BenchmarkOutside/%s, %d rounds:\n", v.version, *rounds)
			outside.Print(os.Stdout, rows)
			direct := map[string]outside.Row{}
			for _, r := range rows {
				if r.Name == outside.Direct {
					direct[r.Transport] = r
				}
			}
			for _, r := range rows {
				if r.Name == outside.Direct {
					continue
				}
				d, t := direct[r.Transport], r.Transport
				report := func(s outside.Spread, unit string) {
					b.ReportMetric(s.Median, unit)
					b.ReportMetric(s.Min, unit+"-min")
					b.ReportMetric(s.Max, unit+"-max")
				}
				report(r.P50Ratio, t+"-p50-ratio")
				report(r.ThroughputRatio, t+"-throughput-ratio")
				b.ReportMetric(d.P50.Median, t+"-direct-p50-µs")
				b.ReportMetric(r.CPU.Median, t+"-proxy-cpu-µs/call")
				b.ReportMetric(r.TreeCPU.Median, t+"-proxy+server-cpu-µs/call")
				b.ReportMetric(d.CPU.Median, t+"-direct-cpu-µs/call")
				b.ReportMetric(r.ClientCPU.Median, t+"-proxy-client-cpu-µs/call")
				b.ReportMetric(d.ClientCPU.Median, t+"-direct-client-cpu-µs/call")
				b.ReportMetric(r.Reads.Median+r.Writes.Median, t+"-proxy-syscalls/call")
				b.ReportMetric(d.Reads.Median+d.Writes.Median, t+"-direct-syscalls/call")
				b.ReportMetric(r.Voluntary.Median, t+"-proxy-vcsw/call")
				b.ReportMetric(d.Voluntary.Median, t+"-direct-vcsw/call")
			}
			if la, err := loadAverage(); err == nil {
				b.ReportMetric(la, "loadavg")
			}
		})
	}
}

// TestOutsideMeasurable checks BenchmarkOutside's measurement itself, for
// each client version, with one tiny round and nothing timed: every
// target answers at the version, sequentially and from 8 workers, and
// every figure of the table is there.
func TestOutsideMeasurable(t *testing.T) {
	t.Parallel()
	for _, v := range outsideVersions {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			targets := outsideTargets(t, v.era)
			o := outside.Options{Version: v.version, Warmup: 2, Calls: 5, Workers: 8, For: 50 * time.Millisecond}
			res, err := outside.Rounds(t.Context(), targets, o, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range res[0] {
				if m.P50 <= 0 || m.Throughput <= 0 || m.Calls < o.Calls {
					t.Errorf("%s %s: %+v", targets[i].Name, targets[i].Transport, m)
				}
			}
			rows, err := outside.Summarize(targets, res)
			if err != nil {
				t.Fatal(err)
			}
			var table strings.Builder
			outside.Print(&table, rows)
			if got := strings.Count(table.String(), "\n"); got != 2+len(targets) {
				t.Errorf("the table has %d lines, want %d:\n%s", got, 2+len(targets), table.String())
			}
		})
	}
}
