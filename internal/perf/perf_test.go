package perf

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bins holds the binaries built once by TestMain.
var bins struct {
	manifold, fixture, relay string
	err                      error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "manifold-perf-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.err = build(dir)
	// The proxies' caches (catalogs, protocol eras, status files) go
	// under the run's folder: not the user's ~/.cache, whose era file,
	// thousands of entries on a machine that runs the tests, a proxy reads
	// before its first server starts. (After the build: go's own cache
	// is under XDG_CACHE_HOME too.)
	if err := os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	flag.Parse()
	if *manifoldBin != "" {
		bins.manifold = *manifoldBin
	}
	if bins.err == nil && *installed {
		bins.manifold, bins.err = install(bins.manifold, filepath.Join(dir, "installed"))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	bins.manifold = filepath.Join(dir, "manifold")
	bins.fixture = filepath.Join(dir, "fixture")
	bins.relay = filepath.Join(dir, "relay")
	// The three at once: on a cold build cache each has packages of its
	// own to compile.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error // guarded by mu
	)
	for out, pkg := range map[string]string{bins.manifold: "./cmd/manifold", bins.fixture: "./testdata/fixture", bins.relay: "./testdata/relay"} {
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Dir = root
			// Static, as the README builds them: no dynamic loader and C
			// library to map and link at each start.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("go build %s: %v\n%s", pkg, err, b))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// installed, when set, has the benchmarks run a copy of the manifold
// binary written as install(1) and cp(1) write one, not the file itself:
// the file pages a process maps depend on how the file came into the page
// cache. Since Linux 6.18 a fault of a file mapping maps the whole large
// folio it falls in, and the linker's output (written through a mapping)
// is cached partly in folios of up to 2 MB. Measured with one build
// (BenchmarkProxyMemory/stdio, idle): 15.3 MB as the linker wrote it, 12.9
// MB for its copy, 29.4 MB for a copy written 4 MB at a time (dd bs=4M).
// A comparison of two builds is one of their code only with both copied.
var installed = flag.Bool("installed", true, "run a copy of the manifold binary, written as install(1) writes one, so that the file pages it maps do not depend on how the file was written (see install)")

// install copies the binary bin to dst, executable, and returns dst.
func install(bin, dst string) (string, error) {
	in, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", fmt.Errorf("copying %s: %w", bin, err)
	}
	return dst, out.Close()
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// conn is one client session to a server process.
type conn struct {
	cs  *mcp.ClientSession
	cmd *exec.Cmd
}

func connect(tb testing.TB, name string, args ...string) *conn {
	tb.Helper()
	return connectAt(tb, "2025-11-25", name, args...)
}

// connectAt is connect for a client that offers version: "2026-07-28"
// opens with server/discover and speaks that era when the server does.
func connectAt(tb testing.TB, version, name string, args ...string) *conn {
	tb.Helper()
	if bins.err != nil {
		tb.Fatal(bins.err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stderr = nil // discard: the benchmark measures the wire, not the logs
	c := mcp.NewClient(&mcp.Implementation{Name: "perf", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tb.Fatalf("connect %s: %v", name, err)
	}
	tb.Cleanup(func() { cs.Close() })
	return &conn{cs: cs, cmd: cmd}
}

// proxied starts manifold with n fixture upstreams (prefixes s0, s1, ...).
func proxied(tb testing.TB, n int) *conn {
	tb.Helper()
	return connect(tb, bins.manifold, "serve", "--config", proxyConfig(tb, n, "legacy"))
}

// proxyConfig writes a config of n fixture upstreams of the given era
// (the fixture's -era: legacy, dual or modern).
func proxyConfig(tb testing.TB, n int, era string) string {
	tb.Helper()
	var cfg strings.Builder
	cfg.WriteString("log_level = \"error\"\n")
	for i := range n {
		fmt.Fprintf(&cfg, "[servers.s%d]\ncommand = %q\nargs = [\"-name\", \"s%d\", \"-era\", %q]\n", i, bins.fixture, i, era)
	}
	path := filepath.Join(tb.TempDir(), "proxy.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func direct(tb testing.TB) *conn {
	return connect(tb, bins.fixture, "-name", "s0")
}

func call(ctx context.Context, c *conn, tool string) error {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(`{"message":"benchmark payload"}`)})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("%s: unexpected result %+v", tool, res)
	}
	return nil
}

func p50(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkToolsCallSequential alternates one direct and one proxied call per
// iteration (so both see the same machine state) and reports their p50
// latencies and the ratio proxied/direct.
func BenchmarkToolsCallSequential(b *testing.B) {
	alternate(b, direct(b), proxied(b, 1))
}

// alternate is the loop of BenchmarkToolsCallSequential: echo on d and
// s0__echo on p, one each per iteration, after a warm-up of both.
func alternate(b *testing.B, d, p *conn) {
	ctx := context.Background()
	for range 50 { // warm up both paths
		if err := call(ctx, d, "echo"); err != nil {
			b.Fatal(err)
		}
		if err := call(ctx, p, "s0__echo"); err != nil {
			b.Fatal(err)
		}
	}
	var dl, pl []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := call(ctx, d, "echo"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := call(ctx, p, "s0__echo"); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		dl = append(dl, t1.Sub(t0))
		pl = append(pl, t2.Sub(t1))
	}
	b.StopTimer()
	dp, pp := p50(dl), p50(pl)
	b.ReportMetric(float64(dp.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(pp.Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64(pp)/float64(dp), "p50-ratio")
}

// BenchmarkToolsCallModern is BenchmarkToolsCallSequential for a client of
// 2026-07-28: through Manifold to a server of the initialize era (the
// modern face in front of a legacy upstream) and to a modern one, each
// against the same client directly to a modern server (a direct connection
// of the same era; a modern client cannot reach a legacy server directly).
func BenchmarkToolsCallModern(b *testing.B) {
	const modern = "2026-07-28"
	for _, upstreamEra := range []string{"legacy", "modern"} {
		b.Run(upstreamEra+"-server", func(b *testing.B) {
			d := connectAt(b, modern, bins.fixture, "-name", "s0", "-era", "modern")
			p := connectAt(b, modern, bins.manifold, "serve", "--config", proxyConfig(b, 1, upstreamEra))
			for _, c := range []*conn{d, p} {
				if v := c.cs.InitializeResult().ProtocolVersion; v != modern {
					b.Fatalf("negotiated %s, want %s", v, modern)
				}
			}
			alternate(b, d, p)
		})
	}
}

// BenchmarkToolsCallParallel8 keeps 8 calls in flight, first on the direct
// connection then through the proxy, b.N calls each, and reports the throughput
// of each and the ratio proxied/direct.
func BenchmarkToolsCallParallel8(b *testing.B) {
	d, p := direct(b), proxied(b, 1)
	ctx := context.Background()
	run := func(c *conn, tool string) (float64, time.Duration) {
		var next atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex
		var lat []time.Duration
		var firstErr error
		start := time.Now()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for next.Add(1) <= int64(b.N) {
					t0 := time.Now()
					if err := call(ctx, c, tool); err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
		return float64(b.N) / time.Since(start).Seconds(), p50(lat)
	}
	for range 50 {
		if err := call(ctx, p, "s0__echo"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	dt, dp := run(d, "echo")
	pt, pp := run(p, "s0__echo")
	b.StopTimer()
	b.ReportMetric(dt, "direct-calls/s")
	b.ReportMetric(pt, "proxy-calls/s")
	b.ReportMetric(pt/dt, "throughput-ratio")
	b.ReportMetric(float64(pp)/float64(dp), "p50-ratio")
}

// BenchmarkProxyRSS reports the proxy's resident memory with three upstreams
// after b.N calls spread over them.
func BenchmarkProxyRSS(b *testing.B) {
	p := proxied(b, 3)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if err := call(ctx, p, fmt.Sprintf("s%d__echo", i%3)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	m, err := readStatus(p.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(m.rss)/1024, "proxy-RSS-MB")
}

// TestProxyRSSIsMeasurable checks the measurement itself: the proxy with three
// upstreams answers every server's tool, and its RSS can be read and is
// non-zero. (The figure is reported by BenchmarkProxyRSS, never asserted.)
func TestProxyRSSIsMeasurable(t *testing.T) {
	p := proxied(t, 3)
	for i := range 3 {
		if err := call(t.Context(), p, fmt.Sprintf("s%d__echo", i)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := readStatus(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if m.rss <= 0 {
		t.Fatalf("VmRSS = %d kB", m.rss)
	}
}
