package perf

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// coldCase is one set of upstreams for BenchmarkColdStart.
type coldCase struct {
	name      string
	upstreams [][]string // fixture arguments, one per upstream
}

var coldCases = []coldCase{
	{"3-upstreams", [][]string{{"-name", "s0"}, {"-name", "s1"}, {"-name", "s2"}}},
	{"20x50-tools", func() [][]string {
		a := make([][]string, listUpstreams)
		for i := range a {
			a[i] = manyArgs(fmt.Sprintf("s%d", i), listPerServer)
		}
		return a
	}()},
	// One upstream that takes 300 ms before it serves: the proxy's start
	// is then bound by it, and the difference is the proxy's own.
	{"slow-upstream", [][]string{{"-name", "s0"}, {"-name", "s1"}, {"-name", "s2", "-mode", "slowstart", "-delay", "300ms"}}},
}

// kinds returns the upstreams' distinct commands (the arguments but the
// name), each once: the ones whose direct start is measured.
func (cc coldCase) kinds() [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, a := range cc.upstreams {
		var rest []string
		for i := 0; i < len(a); i++ {
			if a[i] == "-name" {
				i++
				continue
			}
			rest = append(rest, a[i])
		}
		if k := strings.Join(rest, " "); !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}

// startToList execs name with args, initializes a session over stdio,
// lists tools until the list has want tools, and returns the time from
// exec to that answer, the names listed and the CPU time the process had
// run by then (its threads', read right after the answer); the process is
// then stopped (not timed). The client is the wire client: its own cost is
// a few microseconds.
func startToList(ctx context.Context, want int, name string, args ...string) (time.Duration, []string, time.Duration, error) {
	p, err := startPiped((*exec.Cmd).StdoutPipe, name, args...)
	if err != nil {
		return 0, nil, 0, err
	}
	defer p.stop(0)
	at, names, err := listOn(ctx, p, want)
	if err != nil {
		return 0, nil, 0, err
	}
	cpu, err := cpuNS(p.cmd.Process.Pid)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("CPU time: %w", err)
	}
	return at.Sub(p.start), names, time.Duration(cpu), nil
}

// listOn is startToList's client on the started server p: it initializes
// a session and lists tools until the list has want tools, and returns
// when that answer came and the names listed. It does not stop p.
func listOn(ctx context.Context, p piped, want int) (time.Time, []string, error) {
	w := p.wire("2025-11-25")
	if err := w.initialize(ctx); err != nil {
		return time.Time{}, nil, err
	}
	for {
		pages, err := w.listTools(ctx)
		if err != nil {
			return time.Time{}, nil, fmt.Errorf("tools/list: %w", err)
		}
		at := time.Now()
		// Decoding is not timed: a client that lists once decodes once,
		// the same for the proxy and the direct server.
		names, err := toolNames(pages)
		if err != nil {
			return time.Time{}, nil, err
		}
		if len(names) >= want {
			return at, names, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, nil, fmt.Errorf("%d tools listed, want %d: %w", len(names), want, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// startTogether is the floor for a proxy that starts its upstreams at
// once: it execs the fixture with each of upstreams (one goroutine each,
// each with its own client as in startToList) and returns the time from
// the instant before the first exec to the last of their tools/list
// answers, and each one's names. The processes are stopped (not timed)
// only once every one has answered or failed, so none ends while the
// others still start.
func startTogether(ctx context.Context, upstreams [][]string) (time.Duration, [][]string, error) {
	type result struct {
		p       piped
		started bool
		at      time.Time
		names   []string
		err     error
	}
	res := make([]result, len(upstreams))
	var wg sync.WaitGroup
	start := time.Now()
	for i, a := range upstreams {
		wg.Go(func() {
			r := &res[i]
			p, err := startPiped((*exec.Cmd).StdoutPipe, bins.fixture, a...)
			if err != nil {
				r.err = err
				return
			}
			r.p, r.started = p, true
			r.at, r.names, r.err = listOn(ctx, p, 1)
		})
	}
	wg.Wait()
	var last time.Time
	names := make([][]string, len(upstreams))
	var errs []error
	for i, r := range res {
		if r.started {
			r.p.stop(0)
		}
		if r.err != nil {
			errs = append(errs, fmt.Errorf("fixture %q: %w", upstreams[i], r.err))
			continue
		}
		if r.at.After(last) {
			last = r.at
		}
		names[i] = r.names
	}
	if err := errors.Join(errs...); err != nil {
		return 0, nil, err
	}
	return last.Sub(start), names, nil
}

// coldRun is one round of a coldCase: the proxy's start-to-list, the
// slowest of the upstreams' own start-to-list, each measured alone, and
// the last answer of all the upstreams started together.
type coldRun struct {
	proxy, slowest time.Duration
	proxyCPU       time.Duration // the proxy's CPU time up to the answer
	names          []string      // listed through the proxy

	together      time.Duration
	togetherNames [][]string // listed by each upstream started together
}

// coldSetup returns the case's config and how many tools a complete list
// through the proxy has (each upstream's, counted directly).
func coldSetup(tb testing.TB, cc coldCase) (string, int) {
	tb.Helper()
	if bins.err != nil {
		tb.Fatal(bins.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := 0
	for _, a := range cc.upstreams {
		_, names, _, err := startToList(ctx, 1, bins.fixture, a...)
		if err != nil {
			tb.Fatalf("%s: fixture %q: %v", cc.name, a, err)
		}
		want += len(names)
	}
	return writeConfig(tb, cc.upstreams), want
}

// coldRound measures one coldRun: the proxy, then each kind alone, then
// all the upstreams together, each one's processes stopped before the
// next starts.
func coldRound(ctx context.Context, cc coldCase, cfg string, want int) (coldRun, error) {
	var r coldRun
	var err error
	r.proxy, r.names, r.proxyCPU, err = startToList(ctx, want, bins.manifold, "serve", "--config", cfg)
	if err != nil {
		return r, fmt.Errorf("manifold: %w", err)
	}
	for _, a := range cc.kinds() {
		d, _, _, err := startToList(ctx, 1, bins.fixture, a...)
		if err != nil {
			return r, fmt.Errorf("fixture %q: %w", a, err)
		}
		r.slowest = max(r.slowest, d)
	}
	if r.together, r.togetherNames, err = startTogether(ctx, cc.upstreams); err != nil {
		return r, fmt.Errorf("together: %w", err)
	}
	return r, nil
}

// BenchmarkColdStart is issue 16's start-up measurement: the time from the
// exec of `manifold serve` (stdio) to the first tools/list answer that lists
// every upstream's tools, against the slowest upstream's own time from exec
// to its tools/list answer, measured the same way (each distinct upstream
// command started alone, right after the proxy, in every round). The proxy
// starts its upstreams at once, so each round then also starts all the
// case's upstreams together, each with its own client, and times from that
// common instant to the last of their answers: the floor on a machine with
// fewer cores than upstreams. Each of b.N rounds starts the proxy once; it
// reports the medians over the rounds of the proxy's time, of the slowest
// upstream's and of their difference (cold-minus-slowest-ms, the target's
// figure; its -max too), of the together time (together-ms) and of the
// proxy's time minus it (cold-minus-together-ms), of the CPU time the proxy
// process had run when it answered (proxy-cpu-ms: on a machine with fewer
// cores than processes starting, the start is bound by it, and the load
// moves it far less than the wall times), and the load average.
// Cases: three fixtures; the 20 × 50-tool catalog of
// BenchmarkToolsList1000; three fixtures of which one waits 300 ms before
// it serves. The client writes JSON-RPC lines and decodes the list outside
// the timed span. Nothing is asserted on time.
//
//	nice -n 10 go test ./internal/perf/ -run '^$' -bench BenchmarkColdStart -benchtime 100x
func BenchmarkColdStart(b *testing.B) {
	// A cache of the run's own (era verdicts, catalogs), filled by the
	// warm-up round: the user's may hold what other runs left, thousands
	// of entries on a machine that runs the tests.
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	for _, cc := range coldCases {
		b.Run(cc.name, func(b *testing.B) {
			cfg, want := coldSetup(b, cc)
			ctx := context.Background()
			if _, err := coldRound(ctx, cc, cfg, want); err != nil { // warm the page cache
				b.Fatal(err)
			}
			var proxy, slowest, diff, together, diffTogether, proxyCPU []time.Duration
			b.ResetTimer()
			for range b.N {
				r, err := coldRound(ctx, cc, cfg, want)
				if err != nil {
					b.Fatal(err)
				}
				proxy = append(proxy, r.proxy)
				slowest = append(slowest, r.slowest)
				diff = append(diff, r.proxy-r.slowest)
				together = append(together, r.together)
				diffTogether = append(diffTogether, r.proxy-r.together)
				proxyCPU = append(proxyCPU, r.proxyCPU)
			}
			b.StopTimer()
			ms := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Microseconds()) / 1e3
			}
			b.ReportMetric(ms(proxy), "cold-start-ms")
			b.ReportMetric(ms(slowest), "slowest-upstream-ms")
			b.ReportMetric(ms(diff), "cold-minus-slowest-ms")
			b.ReportMetric(float64(diff[len(diff)-1].Microseconds())/1e3, "cold-minus-slowest-ms-max")
			b.ReportMetric(ms(together), "together-ms")
			b.ReportMetric(ms(diffTogether), "cold-minus-together-ms")
			b.ReportMetric(ms(proxyCPU), "proxy-cpu-ms")
			if la, err := loadAverage(); err == nil {
				b.ReportMetric(la, "loadavg")
			}
		})
	}
}

// TestColdStartMeasurable checks BenchmarkColdStart's measurement, without
// timing anything: for every case, one round ends with a list through the
// proxy that has every upstream's tools under its prefix, the three
// durations are measured, and every upstream started together listed
// tools.
func TestColdStartMeasurable(t *testing.T) {
	for _, cc := range coldCases {
		t.Run(cc.name, func(t *testing.T) {
			cfg, want := coldSetup(t, cc)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			r, err := coldRound(ctx, cc, cfg, want)
			if err != nil {
				t.Fatal(err)
			}
			if r.proxy <= 0 || r.slowest <= 0 || r.together <= 0 || r.proxyCPU <= 0 {
				t.Errorf("durations %v, %v and %v, the proxy's CPU %v: want each above zero", r.proxy, r.slowest, r.together, r.proxyCPU)
			}
			if len(r.togetherNames) != len(cc.upstreams) {
				t.Errorf("%d upstreams answered together, want %d", len(r.togetherNames), len(cc.upstreams))
			}
			for i, names := range r.togetherNames {
				if len(names) == 0 {
					t.Errorf("together: %q listed no tools", cc.upstreams[i])
				}
			}
			if len(r.names) != want {
				t.Errorf("%d tools listed, want %d", len(r.names), want)
			}
			for i := range cc.upstreams {
				prefix := fmt.Sprintf("s%d__", i)
				if !slices.ContainsFunc(r.names, func(n string) bool { return strings.HasPrefix(n, prefix) }) {
					t.Errorf("no tool of s%d in %q", i, r.names)
				}
			}
		})
	}
}
