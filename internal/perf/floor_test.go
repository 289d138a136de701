package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rounds is the number of alternating rounds of BenchmarkFloor.
var rounds = flag.Int("rounds", 5, "rounds of BenchmarkFloor, alternating which side goes first")

// manifoldBin, if set, is the manifold binary the benchmarks run instead of
// the one built from this tree: a build of another commit, for a
// before/after comparison.
var manifoldBin = flag.String("manifold", "", "manifold `binary` to benchmark instead of building ./cmd/manifold")

// againstBin, if set, is a manifold binary (a build of another commit)
// that takes the direct server's place in BenchmarkFloor: each case then
// alternates that build and this one in one run, behind the same fixtures,
// and its ratios are this build's over that one's (issue 41: "BenchmarkFloor
// ratios, alternated old binary against new in one run"). The -floor cases,
// which measure the relay, are left out.
var againstBin = flag.String("against", "", "manifold `binary` that takes the direct side's place in BenchmarkFloor: ratios are then new/old, alternated in one run")

// side is one end of a comparison: a client session and, for the proxy, the
// pid whose memory is read.
type side struct {
	cs       *mcp.ClientSession
	pid      int
	tool     string
	progress bool // each call asks for progress (a progress token)
	big      int  // each call asks the big tool for a text of this many bytes
	args     int  // each call sends the args tool a text of this many bytes, which it answers with
}

func (s side) call(ctx context.Context) error {
	switch {
	case s.progress:
		return callProgress(ctx, s.cs, s.tool)
	case s.big > 0:
		return callBig(ctx, s.cs, s.tool, s.big)
	case s.args > 0:
		return callArgs(ctx, s.cs, s.tool, s.args)
	}
	return call(ctx, &conn{cs: s.cs}, s.tool)
}

// callBig calls the fixture's big tool for a text of n bytes, and checks
// that all of it came.
func callBig(ctx context.Context, cs *mcp.ClientSession, tool string, n int) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"bytes": n}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("%s: unexpected result %+v", tool, res)
	}
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || len(text.Text) != n {
		return fmt.Errorf("%s: the result is not a text of %d bytes", tool, n)
	}
	return nil
}

// callArgs sends the fixture's args tool a text of n bytes as its
// argument, and checks that the arguments came back whole: a large request
// and a large answer.
func callArgs(ctx context.Context, cs *mcp.ClientSession, tool string, n int) error {
	text := strings.Repeat("x", n)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("%s: unexpected result %+v", tool, res)
	}
	if got, ok := res.Content[0].(*mcp.TextContent); !ok || got.Text != `{"text":"`+text+`"}` {
		return fmt.Errorf("%s: the arguments did not come back whole", tool)
	}
	return nil
}

// progressTokens numbers the progress tokens of the calls that ask for
// progress.
var progressTokens atomic.Int64

// callProgress is call with a progress token, as Claude Code sends with
// every call (the echo tool reports no progress).
func callProgress(ctx context.Context, cs *mcp.ClientSession, tool string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(`{"message":"benchmark payload"}`),
		Meta: mcp.Meta{"progressToken": progressTokens.Add(1)}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("%s: unexpected result %+v", tool, res)
	}
	return nil
}

// floorCase is one transport and protocol version of BenchmarkFloor: how
// to start the direct server and the proxy in front of the same server.
type floorCase struct {
	name    string
	version string
	http    bool
	era     string // the fixture's -era, direct and upstream
	relay   bool   // the floor: testdata/relay in front of one fixture, not Manifold
	// upEra, if set, is the upstreams' -era instead of era: the bridge, a
	// client of 2026-07-28 through Manifold to servers of the initialize
	// era, against the same client directly to a modern server (a modern
	// client cannot reach a legacy server directly).
	upEra string
	// caps makes the client declare sampling and elicitation, as VS Code
	// does, on both sides.
	caps bool
	// progress makes every call ask for progress, as Claude Code's do, on
	// both sides.
	progress bool
	// big makes every call ask the fixture's big tool for a text of this
	// many bytes, as a tool that reads a file returns, instead of the echo.
	big int
	// args makes every call send the fixture's args tool a text of this
	// many bytes, as a tool that writes a file is sent; it answers with
	// its arguments.
	args int
}

var floorCases = []floorCase{
	{name: "stdio", version: "2025-11-25", era: "legacy"},
	{name: "stdio-floor", version: "2025-11-25", era: "legacy", relay: true},
	{name: "stdio-2026", version: "2026-07-28", era: "modern"},
	{name: "http", version: "2025-11-25", http: true, era: "legacy"},
	{name: "http-floor", version: "2025-11-25", http: true, era: "legacy", relay: true},
	{name: "http-2026", version: "2026-07-28", http: true, era: "modern"},
	{name: "stdio-2026-bridge", version: "2026-07-28", era: "modern", upEra: "legacy"},
	{name: "http-2026-bridge", version: "2026-07-28", http: true, era: "modern", upEra: "legacy"},
	{name: "http-caps", version: "2025-11-25", http: true, era: "legacy", caps: true},
	{name: "stdio-progress", version: "2025-11-25", era: "legacy", progress: true},
	{name: "http-progress", version: "2025-11-25", http: true, era: "legacy", progress: true},
	{name: "http-2026-progress", version: "2026-07-28", http: true, era: "modern", progress: true},
	{name: "stdio-100k", version: "2025-11-25", era: "legacy", big: 100 << 10},
	{name: "http-100k", version: "2025-11-25", http: true, era: "legacy", big: 100 << 10},
	{name: "stdio-100k-args", version: "2025-11-25", era: "legacy", args: 100 << 10},
	{name: "http-100k-args", version: "2025-11-25", http: true, era: "legacy", args: 100 << 10},
}

// BenchmarkFloor is the measurement of issue 16 in one run: for each
// transport (stdio, streamable HTTP) and protocol era, the same client calls
// the fixture directly and through Manifold (three fixture upstreams, calls
// to one), at the same protocol version on both sides. Each of -rounds
// rounds has a sequential phase (b.N calls on each side, one at a time,
// alternating call by call) and a phase of 8 calls in flight (b.N calls on
// each side, one side after the other, the first side alternating from round
// to round). It reports the medians over the rounds of the ratios
// proxy/direct of p50 and p99 latency and of throughput, with their spread
// (-min, -max), the proxy's RSS idle (connected, before any call) and the
// highest RSS sampled under load, and the 1-minute load average at the
// end, and the CPU time the proxy process spent per call (both phases),
// which depends far less on the load than latency does. The -100k cases
// call the fixture's big tool for a text of 100 KiB instead of the echo, as
// a tool that reads a file answers; the -100k-args cases send a text of
// 100 KiB to the args tool, which answers with it. Nothing is asserted on
// time.
//
//	nice -n 10 go test -run '^$' -bench BenchmarkFloor -benchtime 400x ./internal/perf/
func BenchmarkFloor(b *testing.B) {
	for _, fc := range floorCases {
		if *againstBin != "" && fc.relay {
			continue
		}
		b.Run(fc.name, func(b *testing.B) { floor(b, fc) })
	}
}

func floor(b *testing.B, fc floorCase) {
	d, p := fc.start(b)
	idle, err := readStatus(p.pid)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range 50 { // warm up both paths
		for _, s := range []side{d, p} {
			if err := s.call(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	var p50s, p99s, tputs []float64
	var dp50, pp50 []time.Duration
	var peak memory // the reading of highest VmRSS under load, all rounds
	cpu0, err := cpuNS(p.pid)
	if err != nil {
		b.Fatal(err)
	}
	dcpu0, err := cpuNS(d.pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for r := range *rounds {
		first, second := d, p
		if r%2 == 1 {
			first, second = p, d
		}
		lat := map[*mcp.ClientSession][]time.Duration{}
		for range b.N {
			for _, s := range []side{first, second} {
				t0 := time.Now()
				if err := s.call(ctx); err != nil {
					b.Fatal(err)
				}
				lat[s.cs] = append(lat[s.cs], time.Since(t0))
			}
		}
		dl, pl := lat[d.cs], lat[p.cs]
		slices.Sort(dl)
		slices.Sort(pl)
		p50s = append(p50s, float64(quantile(pl, 0.5))/float64(quantile(dl, 0.5)))
		p99s = append(p99s, float64(quantile(pl, 0.99))/float64(quantile(dl, 0.99)))
		dp50, pp50 = append(dp50, quantile(dl, 0.5)), append(pp50, quantile(pl, 0.5))

		tput := map[*mcp.ClientSession]float64{}
		for _, s := range []side{first, second} {
			var stop func() memory
			if s.pid == p.pid {
				stop = sampleMemory(p.pid, readStatus)
			}
			t, err := parallel8(ctx, s, b.N)
			if stop != nil {
				if m := stop(); m.rss > peak.rss {
					peak = m
				}
			}
			if err != nil {
				b.Fatal(err)
			}
			tput[s.cs] = t
		}
		tputs = append(tputs, tput[p.cs]/tput[d.cs])
	}
	b.StopTimer()
	cpu1, err := cpuNS(p.pid)
	if err != nil {
		b.Fatal(err)
	}
	// CPU time per call is far less sensitive to the machine's load than
	// latency: the before/after figure of a change to the hot path.
	b.ReportMetric(float64(cpu1-cpu0)/1e3/float64(2**rounds*b.N), "proxy-cpu-µs/call")
	if *againstBin != "" {
		// The direct side is the other build: its CPU per call, read the
		// same way, is the before of this build's after.
		dcpu1, err := cpuNS(d.pid)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(dcpu1-dcpu0)/1e3/float64(2**rounds*b.N), "against-cpu-µs/call")
	}
	report := func(vals []float64, unit string) {
		slices.Sort(vals)
		b.ReportMetric(vals[len(vals)/2], unit)
		b.ReportMetric(vals[0], unit+"-min")
		b.ReportMetric(vals[len(vals)-1], unit+"-max")
	}
	report(p50s, "p50-ratio")
	report(p99s, "p99-ratio")
	report(tputs, "throughput-ratio")
	slices.Sort(dp50)
	slices.Sort(pp50)
	b.ReportMetric(float64(dp50[len(dp50)/2].Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(pp50[len(pp50)/2].Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64(idle.rss)/1024, "rss-idle-MB")
	b.ReportMetric(float64(peak.rss)/1024, "rss-load-MB")
	if la, err := loadAverage(); err == nil {
		b.ReportMetric(la, "loadavg")
	}
}

// quantile returns the q-quantile of sorted d.
func quantile(d []time.Duration, q float64) time.Duration {
	return d[min(len(d)-1, int(float64(len(d))*q))]
}

// parallel8 makes n calls on s with 8 in flight and returns the calls per
// second.
func parallel8(ctx context.Context, s side, n int) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := s.call(ctx); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// cpuNS returns the CPU time pid's threads have run, in nanoseconds (the
// first field of /proc/PID/task/*/schedstat).
func cpuNS(pid int) (int64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, t.Name(), err)
		}
		sum += n
	}
	return sum, nil
}

func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("empty /proc/loadavg")
	}
	return strconv.ParseFloat(f[0], 64)
}

// start starts the direct server and the proxy of fc and connects a client
// to each.
func (fc floorCase) start(b testing.TB) (direct, proxy side) {
	if bins.err != nil {
		b.Fatal(bins.err)
	}
	// The proxy: Manifold with three fixtures, or the relay with one.
	upEra := fc.era
	if fc.upEra != "" {
		upEra = fc.upEra
	}
	dtool := "echo"
	switch {
	case fc.big > 0:
		dtool = "big"
	case fc.args > 0:
		dtool = "args"
	}
	bin, args, tool := bins.manifold, []string{"serve", "--config", proxyConfig(b, 3, upEra)}, "s0__"+dtool
	if fc.relay {
		bin, args, tool = bins.relay, []string{"--", bins.fixture, "-name", "s0", "-era", fc.era}, dtool
	}
	// The direct side: the fixture, or with -against the other build of
	// Manifold in front of the same fixtures (a client of 2026-07-28 then
	// reaches the bridge's legacy upstreams through it too).
	dbin, dargs, dname := bins.fixture, []string{"-name", "s0", "-era", fc.era}, dtool
	if *againstBin != "" && !fc.relay {
		dbin, dargs, dname = *againstBin, []string{"serve", "--config", proxyConfig(b, 3, upEra)}, tool
	}
	if !fc.http {
		d := connectAt(b, fc.version, dbin, dargs...)
		p := connectAt(b, fc.version, bin, args...)
		direct, proxy = side{d.cs, d.cmd.Process.Pid, dname, fc.progress, fc.big, fc.args}, side{p.cs, p.cmd.Process.Pid, tool, fc.progress, fc.big, fc.args}
	} else {
		dhttp := []string{"-http", "127.0.0.1:0"}
		if dbin != bins.fixture {
			dhttp = []string{"--http", "127.0.0.1:0"}
		}
		durl, dpid := startServing(b, dbin, append(dargs, dhttp...)...)
		if fc.relay {
			args = append([]string{"-http", "127.0.0.1:0"}, args...)
		} else {
			args = append(args, "--http", "127.0.0.1:0")
		}
		purl, ppid := startServing(b, bin, args...)
		direct = side{connectURL(b, fc.version, durl, fc.caps), dpid, dname, fc.progress, fc.big, fc.args}
		proxy = side{connectURL(b, fc.version, purl, fc.caps), ppid, tool, fc.progress, fc.big, fc.args}
	}
	for _, s := range []side{direct, proxy} {
		if v := s.cs.InitializeResult().ProtocolVersion; v != fc.version {
			b.Fatalf("negotiated %s, want %s", v, fc.version)
		}
	}
	// Idle means connected, listed and every upstream up (on the other
	// build too, with -against).
	for _, s := range []side{direct, proxy} {
		if s.pid == proxy.pid || *againstBin != "" {
			if _, err := s.cs.ListTools(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	return direct, proxy
}

var servingURL = regexp.MustCompile(`serving MCP on (http://\S+/mcp)`)

// startServing starts a process that serves MCP over HTTP and says where on
// stderr (the fixture's -http, manifold serve --http), and returns the URL
// and its pid. At cleanup its stdin is closed (the fixture ends), then it
// gets SIGTERM (manifold), then SIGKILL.
func startServing(tb testing.TB, name string, args ...string) (string, int) {
	tb.Helper()
	p, err := startPiped((*exec.Cmd).StderrPipe, name, args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.stop(time.Second) })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(p.out)
		for sc.Scan() {
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, p.out)
	}()
	select {
	case u := <-found:
		return u, p.cmd.Process.Pid
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s did not say where it serves within 30s", name)
		return "", 0
	}
}

// connectURL connects a client of version to a streamable HTTP endpoint,
// over an HTTP client that keeps enough idle connections for 8 calls in
// flight (the default keeps 2, and would open a connection per call).
func connectURL(tb testing.TB, version, url string, caps bool) *mcp.ClientSession {
	tb.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	var opts *mcp.ClientOptions
	if caps { // declared by having handlers; never asked by the benchmark's tool
		opts = &mcp.ClientOptions{
			//lint:ignore SA1019 clients of the initialize era still declare sampling (VS Code does)
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, fmt.Errorf("the benchmark's client does not sample")
			},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "perf", Version: "0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tb.Fatalf("connect %s: %v", url, err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestFloorMeasurable checks BenchmarkFloor's measurement itself, for every
// case, without timing anything: both sides answer at the same protocol
// version, sequentially and 8 in flight, and the proxy's RSS and CPU time
// can be read.
func TestFloorMeasurable(t *testing.T) {
	t.Parallel()
	for _, fc := range floorCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel() // nothing is timed: the cases need not wait for each other
			d, p := fc.start(t)
			for _, s := range []side{d, p} {
				if err := s.call(t.Context()); err != nil {
					t.Fatal(err)
				}
				if _, err := parallel8(t.Context(), s, 16); err != nil {
					t.Fatal(err)
				}
			}
			if m, err := readStatus(p.pid); err != nil || m.rss <= 0 {
				t.Errorf("VmRSS = %d kB, %v", m.rss, err)
			}
			if ns, err := cpuNS(p.pid); err != nil || ns <= 0 {
				t.Errorf("CPU time = %d ns, %v", ns, err)
			}
		})
	}
}
