package perf

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// memory is one reading of a process's resident memory, in kB: VmRSS and
// its parts RssAnon (heap, stacks, the runtime's own: the process's own
// memory) and RssFile (pages of the binary and libraries, shared with every
// process that maps the same file: the reaper, another manifold), and Pss
// (each shared page divided among the processes that map it).
type memory struct{ rss, anon, file, shmem, pss int }

// readMemory reads pid's memory from /proc/PID/status and smaps_rollup.
func readMemory(pid int) (memory, error) {
	var m memory
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m, err
	}
	fields := map[string]*int{"VmRSS:": &m.rss, "RssAnon:": &m.anon, "RssFile:": &m.file, "RssShmem:": &m.shmem, "Pss:": &m.pss}
	for line := range strings.SplitSeq(string(status)+"\n"+string(rollup), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			if p, ok := fields[f[0]]; ok && *p == 0 {
				if *p, err = strconv.Atoi(f[1]); err != nil {
					return m, fmt.Errorf("pid %d: %s: %w", pid, line, err)
				}
			}
		}
	}
	if m.rss == 0 || m.pss == 0 {
		return m, fmt.Errorf("pid %d: no VmRSS or Pss", pid)
	}
	return m, nil
}

// reaperOf returns the pid of the reaper process among pid's children.
func reaperOf(pid int) (int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for c := range strings.FieldsSeq(string(b)) {
			cmdline, err := os.ReadFile("/proc/" + c + "/cmdline")
			if err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), "__manifold-reaper") {
				return strconv.Atoi(c)
			}
		}
	}
	return 0, fmt.Errorf("no reaper among the children of %d", pid)
}

// settle, if set, is how long BenchmarkProxyMemory waits after the load
// before it reads the proxy's memory once more ("settled").
var settle = flag.Duration("settle", 0, "how long BenchmarkProxyMemory waits after the load for its settled reading (0: none)")

// memoryCases are the proxy's transports in BenchmarkProxyMemory.
var memoryCases = []floorCase{floorCases[0], floorCases[2]}

// BenchmarkProxyMemory reports the proxy's resident memory with three
// fixture upstreams, idle (connected and listed, before any call) and the
// reading of highest VmRSS while b.N calls run 8 in flight, and the
// reaper's, as VmRSS, RssAnon, RssFile and Pss in MB, medians over -rounds
// fresh proxies; with -settle D, also the proxy's memory D after the load
// ("settled": what a proxy keeps while it waits between bursts). RssAnon is the process's own memory; RssFile is pages of
// the binary, shared with the reaper (Pss divides them). These depend on
// the machine's load far less than latency does. Nothing is asserted.
//
//	go test ./internal/perf/ -run '^$' -bench BenchmarkProxyMemory -benchtime 2000x -args -rounds=5 -settle=25s
func BenchmarkProxyMemory(b *testing.B) {
	for _, fc := range memoryCases {
		b.Run(fc.name, func(b *testing.B) {
			var idle, load, settled, reaper []memory
			for range *rounds {
				i, l, st, r := memoryRound(b, fc, b.N, *settle)
				idle, load, settled, reaper = append(idle, i), append(load, l), append(settled, st), append(reaper, r)
			}
			sets := []struct {
				name string
				ms   []memory
			}{{"idle", idle}, {"load", load}, {"reaper", reaper}}
			if *settle > 0 {
				sets = append(sets, struct {
					name string
					ms   []memory
				}{"settled", settled})
			}
			for _, s := range sets {
				for _, f := range []struct {
					unit string
					of   func(memory) int
				}{
					{"rss", func(m memory) int { return m.rss }},
					{"anon", func(m memory) int { return m.anon }},
					{"file", func(m memory) int { return m.file }},
					{"pss", func(m memory) int { return m.pss }},
				} {
					v := make([]int, len(s.ms))
					for i, m := range s.ms {
						v[i] = f.of(m)
					}
					slices.Sort(v)
					b.ReportMetric(float64(v[len(v)/2])/1024, s.name+"-"+f.unit+"-MB")
				}
			}
		})
	}
}

// memoryRound starts a proxy of fc, reads its memory idle, under n calls 8
// in flight, settle after them (if settle > 0) and its reaper's, and stops
// it.
func memoryRound(tb testing.TB, fc floorCase, n int, settle time.Duration) (idle, load, settled, reaper memory) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cleanups := &cleanupTB{TB: tb}
	defer cleanups.run()
	_, p := fc.start(cleanups)
	var err error
	if idle, err = readMemory(p.pid); err != nil {
		tb.Fatal(err)
	}
	rpid, err := reaperOf(p.pid)
	if err != nil {
		tb.Fatal(err)
	}
	if reaper, err = readMemory(rpid); err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := readMemory(p.pid); err == nil {
				mu.Lock()
				if m.rss > load.rss {
					load = m
				}
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	_, err = parallel8(ctx, p, n)
	close(done)
	wg.Wait()
	if err != nil {
		tb.Fatal(err)
	}
	if settle > 0 {
		time.Sleep(settle)
		if settled, err = readMemory(p.pid); err != nil {
			tb.Fatal(err)
		}
	}
	return idle, load, settled, reaper
}

// cleanupTB runs the cleanups registered on it when run is called, so that
// each round's processes stop before the next round starts.
type cleanupTB struct {
	testing.TB
	fns []func()
}

func (c *cleanupTB) Cleanup(f func()) { c.fns = append(c.fns, f) }

func (c *cleanupTB) run() {
	for _, f := range slices.Backward(c.fns) {
		f()
	}
}

// TestProxyMemoryMeasurable checks BenchmarkProxyMemory's measurement: for
// both transports, the proxy's and the reaper's readings are found, and
// VmRSS is the sum of its parts (RssAnon + RssFile + RssShmem), as the
// kernel defines it.
func TestProxyMemoryMeasurable(t *testing.T) {
	for _, fc := range memoryCases {
		t.Run(fc.name, func(t *testing.T) {
			idle, load, _, reaper := memoryRound(t, fc, 32, 0)
			for _, m := range []memory{idle, load, reaper} {
				if m.rss != m.anon+m.file+m.shmem || m.anon <= 0 || m.file <= 0 || m.pss <= 0 {
					t.Errorf("reading %+v: VmRSS is not RssAnon+RssFile+RssShmem, or a part is missing", m)
				}
			}
		})
	}
}
