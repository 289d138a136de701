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

// readStatus reads pid's VmRSS, RssAnon, RssFile and RssShmem from
// /proc/PID/status, counters the kernel keeps: cheap enough to read every
// few ms beside a benchmark. Pss is left zero.
func readStatus(pid int) (memory, error) {
	var m memory
	path := fmt.Sprintf("/proc/%d/status", pid)
	if err := readFields(path, map[string]*int{"VmRSS:": &m.rss, "RssAnon:": &m.anon, "RssFile:": &m.file, "RssShmem:": &m.shmem}); err != nil {
		return m, err
	}
	if m.rss == 0 {
		return m, fmt.Errorf("no VmRSS in %s", path)
	}
	return m, nil
}

// readMemory is readStatus and, from /proc/PID/smaps_rollup, Pss, which
// the kernel sums over every mapping of pid when it is read.
func readMemory(pid int) (memory, error) {
	m, err := readStatus(pid)
	if err != nil {
		return m, err
	}
	path := fmt.Sprintf("/proc/%d/smaps_rollup", pid)
	if err := readFields(path, map[string]*int{"Pss:": &m.pss}); err != nil {
		return m, err
	}
	if m.pss == 0 {
		return m, fmt.Errorf("no Pss in %s", path)
	}
	return m, nil
}

// readFields reads the file at path, of lines "Key: N kB", into fields (by
// key with its colon); a key not in the file leaves its field as it was.
func readFields(path string, fields map[string]*int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if p, ok := fields[f[0]]; ok {
			if *p, err = strconv.Atoi(f[1]); err != nil {
				return fmt.Errorf("%s: %s: %w", path, line, err)
			}
		}
	}
	return nil
}

// sampleMemory reads pid's memory with read (readStatus or readMemory)
// now and every 10ms after until stop is called, which returns the
// reading of highest VmRSS, every field of it (zero if no reading
// succeeded: the process was gone).
func sampleMemory(pid int, read func(pid int) (memory, error)) (stop func() memory) {
	done := make(chan struct{})
	var peak memory // written by the sampler alone until it has exited
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := read(pid); err == nil && m.rss > peak.rss {
				peak = m
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() memory {
		close(done)
		wg.Wait()
		return peak
	}
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

// quiet is how long BenchmarkProxyMemory waits before its idle reading.
var quiet = flag.Duration("quiet", 2*time.Second, "how long BenchmarkProxyMemory leaves the proxy alone once it is connected and listed, before its idle reading (the end of its start: the collector restored, memory and the binary's pages given back)")

// settle, if set, is how long BenchmarkProxyMemory waits after the load
// before it reads the proxy's memory once more ("settled").
var settle = flag.Duration("settle", 0, "how long BenchmarkProxyMemory waits after the load for its settled reading (0: none)")

// memoryCases are the proxy's transports in BenchmarkProxyMemory: the
// cases of BenchmarkFloor named stdio and http.
var memoryCases = func() []floorCase {
	var out []floorCase
	for _, fc := range floorCases {
		if fc.name == "stdio" || fc.name == "http" {
			out = append(out, fc)
		}
	}
	return out
}()

// BenchmarkProxyMemory reports the proxy's resident memory with three
// fixture upstreams, idle (connected and listed, then -quiet without a call) and the
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
	time.Sleep(*quiet)
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
	stop := sampleMemory(p.pid, readMemory)
	_, err = parallel8(ctx, p, n)
	load = stop()
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
	if len(memoryCases) != 2 || memoryCases[0].http || !memoryCases[1].http || memoryCases[0].relay || memoryCases[1].relay {
		t.Fatalf("memoryCases = %+v; want Manifold over stdio, then over HTTP", memoryCases)
	}
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
