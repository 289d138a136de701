package perf

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The catalog of issue 16's list target: 1,000 tools from 20 upstreams, each
// a fixture serving echo and 49 generated tools (t0 … t48, a one-line
// description and an empty object schema each).
const (
	listUpstreams = 20
	listPerServer = 50
)

// manyArgs are the fixture arguments of one upstream of that catalog.
func manyArgs(name string, tools int) []string {
	return []string{"-name", name, "-tools", "echo", "-many", fmt.Sprint(tools - 1)}
}

// writeConfig writes a proxy.toml whose servers s0, s1, ... run the fixture
// with args[i], with catalog.mode "full" (every tool listed to every client,
// whatever the catalog's size), and returns its path.
func writeConfig(tb testing.TB, args [][]string) string {
	tb.Helper()
	var cfg strings.Builder
	cfg.WriteString("log_level = \"error\"\n")
	for i, a := range args {
		q := make([]string, len(a))
		for j, s := range a {
			q[j] = fmt.Sprintf("%q", s)
		}
		fmt.Fprintf(&cfg, "[servers.s%d]\ncommand = %q\nargs = [%s]\n", i, bins.fixture, strings.Join(q, ", "))
	}
	cfg.WriteString("[catalog]\nmode = \"full\"\n")
	path := filepath.Join(tb.TempDir(), "proxy.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// listConfig is the 20 × 50 catalog's config.
func listConfig(tb testing.TB) string {
	args := make([][]string, listUpstreams)
	for i := range args {
		args[i] = manyArgs(fmt.Sprintf("s%d", i), listPerServer)
	}
	return writeConfig(tb, args)
}

// listAll lists every tool of cs, page after page, and returns their names
// and the number of pages.
func listAll(ctx context.Context, cs *mcp.ClientSession) ([]string, int, error) {
	var names []string
	params := &mcp.ListToolsParams{}
	for pages := 1; ; pages++ {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, pages, err
		}
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		if res.NextCursor == "" {
			return names, pages, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// listSide is one session whose full tools/list is timed.
type listSide struct {
	name  string
	pid   int
	want  int                                     // tools in a complete list
	list  func(context.Context) error             // one full list, undecoded where it can be
	names func(context.Context) ([]string, error) // one full list, decoded
	raw   func(context.Context) ([]byte, error)   // the first page's answer as it came (wire clients)
}

func sdkSide(name string, cs *mcp.ClientSession, pid, want int) listSide {
	names := func(ctx context.Context) ([]string, error) {
		n, _, err := listAll(ctx, cs)
		return n, err
	}
	return listSide{name: name, pid: pid, want: want, names: names,
		list: func(ctx context.Context) error { _, err := names(ctx); return err }}
}

func wireSide(name string, w *wire, pid, want int) listSide {
	return listSide{name: name, pid: pid, want: want,
		list: func(ctx context.Context) error { _, err := w.listTools(ctx); return err },
		names: func(ctx context.Context) ([]string, error) {
			pages, err := w.listTools(ctx)
			if err != nil {
				return nil, err
			}
			return toolNames(pages)
		},
		raw: func(ctx context.Context) ([]byte, error) { return w.call(ctx, "tools/list", `{}`) }}
}

// listSides starts the four sides of BenchmarkToolsList1000 for a client
// (wire or go-sdk): the fixture serving all 1,000 tools itself, over stdio
// and HTTP, and Manifold in front of the 20 upstreams, over stdio and HTTP.
// Each is listed until its list is complete before it is returned.
func listSides(tb testing.TB, client string) []listSide {
	tb.Helper()
	if bins.err != nil {
		tb.Fatal(bins.err)
	}
	version := "2025-11-25"
	n := listUpstreams * listPerServer
	one := manyArgs("s0", n)
	if client == "wire-2026" {
		// Both sides at 2026-07-28: the fixture serves it (and only it),
		// and so does the proxy, in front of the same upstreams.
		version, client = modernVersion, "wire"
		one = append(one, "-era", "modern")
	}
	cfg := listConfig(tb)
	durl, dpid := startServing(tb, bins.fixture, append(one, "-http", "127.0.0.1:0")...)
	purl, ppid := startServing(tb, bins.manifold, "serve", "--config", cfg, "--http", "127.0.0.1:0")
	var sides []listSide
	if client == "wire" {
		d := startWire(tb, version, bins.fixture, one...)
		p := startWire(tb, version, bins.manifold, "serve", "--config", cfg)
		sides = []listSide{
			wireSide("direct-stdio", d, d.cmd.Process.Pid, n),
			wireSide("proxy-stdio", p, p.cmd.Process.Pid, n),
			wireSide("direct-http", dialWire(tb, version, durl), dpid, n),
			wireSide("proxy-http", dialWire(tb, version, purl), ppid, n),
		}
	} else {
		d := connectAt(tb, version, bins.fixture, one...)
		p := connectAt(tb, version, bins.manifold, "serve", "--config", cfg)
		sides = []listSide{
			sdkSide("direct-stdio", d.cs, d.cmd.Process.Pid, n),
			sdkSide("proxy-stdio", p.cs, p.cmd.Process.Pid, n),
			sdkSide("direct-http", connectURL(tb, version, durl, false), dpid, n),
			sdkSide("proxy-http", connectURL(tb, version, purl, false), ppid, n),
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range sides {
		if err := waitComplete(ctx, s); err != nil {
			tb.Fatalf("%s %s: %v", client, s.name, err)
		}
	}
	return sides
}

// waitComplete lists s until the list has all its tools. The proxy's first
// list waits for its upstreams' start only up to a bound, which 20 of them
// starting at once can pass on a loaded machine.
func waitComplete(ctx context.Context, s listSide) error {
	for {
		names, err := s.names(ctx)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if len(names) == s.want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tools/list has %d tools, want %d: %w", len(names), s.want, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// BenchmarkToolsList1000 is issue 16's list measurement: a client lists
// 1,000 tools (every page) on one session, directly from one fixture
// that serves them all and through the manifold binary in front of 20
// fixtures of 50 tools each, over stdio and over streamable HTTP, at
// 2025-11-25. Each of -rounds rounds lists b.N times on each of the four
// sessions, one list at a time, round-robin (so that all four see the same
// machine state). It reports, per side, the medians over the rounds of the
// p50 and p99 latency in ms; the ratios proxy/direct of the p50 per
// transport; the proxy's CPU time per list in µs (far less sensitive to the
// machine's load than latency); and the load average. Nothing is asserted
// on time. Clients (listClients): "wire" writes the request and times it
// to the last byte of the answer, undecoded (the server's and the proxy's
// share, the measure); "wire-2026" is the same at 2026-07-28 on
// both sides (each request carries its _meta and, over HTTP, its headers;
// the direct fixture serves that version only); "go-sdk" is the SDK's
// client, whose decoding of 1,000 tools (their schemas) is most of its time
// and the same for both.
//
//	nice -n 10 go test ./internal/perf/ -run '^$' -bench BenchmarkToolsList1000 -benchtime 100x -args -rounds=5
func BenchmarkToolsList1000(b *testing.B) {
	for _, client := range listClients {
		b.Run(client, func(b *testing.B) { list1000(b, client) })
	}
}

// listClients are the clients of BenchmarkToolsList1000: the wire client at
// 2025-11-25 and at 2026-07-28, and the go-sdk client at 2025-11-25 (at
// 2026-07-28 it keeps a list for its ttlMs, which Manifold's lists carry,
// and would time its cache).
var listClients = []string{"wire", "wire-2026", "go-sdk"}

func list1000(b *testing.B, client string) {
	sides := listSides(b, client)
	ctx := context.Background()
	for range 20 { // warm up
		for _, s := range sides {
			if err := s.list(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	p50s := make([][]time.Duration, len(sides))
	p99s := make([][]time.Duration, len(sides))
	cpu0 := make([]int64, len(sides))
	for i, s := range sides {
		var err error
		if cpu0[i], err = cpuNS(s.pid); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range *rounds {
		lat := make([][]time.Duration, len(sides))
		for range b.N {
			for i, s := range sides {
				t0 := time.Now()
				if err := s.list(ctx); err != nil {
					b.Fatal(err)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}
		for i := range sides {
			slices.Sort(lat[i])
			p50s[i] = append(p50s[i], quantile(lat[i], 0.5))
			p99s[i] = append(p99s[i], quantile(lat[i], 0.99))
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	p50 := map[string]time.Duration{}
	for i, s := range sides {
		p50[s.name] = med(p50s[i])
		b.ReportMetric(ms(p50[s.name]), s.name+"-p50-ms")
		b.ReportMetric(ms(med(p99s[i])), s.name+"-p99-ms")
		if strings.HasPrefix(s.name, "proxy") {
			cpu1, err := cpuNS(s.pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpu1-cpu0[i])/1e3/float64(*rounds*b.N), s.name+"-cpu-µs/list")
		}
	}
	b.ReportMetric(float64(p50["proxy-stdio"])/float64(p50["direct-stdio"]), "stdio-p50-ratio")
	b.ReportMetric(float64(p50["proxy-http"])/float64(p50["direct-http"]), "http-p50-ratio")
	if la, err := loadAverage(); err == nil {
		b.ReportMetric(la, "loadavg")
	}
}

// TestToolsList1000Measurable checks BenchmarkToolsList1000's measurement,
// without timing anything: every side lists exactly the 1,000 tools it
// should (through the proxy, each upstream's 50 under its prefix), and the
// proxy's CPU time can be read.
func TestToolsList1000Measurable(t *testing.T) {
	t.Parallel()
	for _, client := range listClients {
		t.Run(client, func(t *testing.T) {
			t.Parallel() // nothing is timed: the clients need not wait for each other
			checkList1000(t, client)
		})
	}
}

func checkList1000(t *testing.T, client string) {
	for _, s := range listSides(t, client) {
		names, err := s.names(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.raw != nil {
			// The answer is of the version asked: only a 2026-07-28 result
			// says what it is (resultType).
			page, err := s.raw(t.Context())
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if modern := bytes.Contains(page, []byte(`"resultType":"complete"`)); modern != (client == "wire-2026") {
				t.Errorf("%s: a first page with resultType %v, want %v: %.300s", s.name, modern, !modern, page)
			}
		}
		var want []string
		if strings.HasPrefix(s.name, "proxy") {
			for i := range listUpstreams {
				want = append(want, fmt.Sprintf("s%d__echo", i))
				for j := range listPerServer - 1 {
					want = append(want, fmt.Sprintf("s%d__t%d", i, j))
				}
			}
			if ns, err := cpuNS(s.pid); err != nil || ns <= 0 {
				t.Errorf("%s: CPU time = %d ns, %v", s.name, ns, err)
			}
		} else {
			want = append(want, "echo")
			for j := range listUpstreams*listPerServer - 1 {
				want = append(want, fmt.Sprintf("t%d", j))
			}
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s: %d tools, not the %d expected (first %q)", s.name, len(names), len(want), names[:min(3, len(names))])
		}
	}
}
