package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/manifold-mcp/manifold/internal/pagetrim"
)

// Idle trimming. The Go runtime keeps the heap's freed pages about as large
// as its next GC goal (twice the live heap) and gives the rest back to the
// system only slowly: a proxy that served a burst and then waits for hours
// (the common case on a desktop) keeps about 3 MB it does not use. Once a
// whole interval passed with next to no allocation, trimWhenIdle runs one
// GC and returns the free pages (debug.FreeOSMemory), releases the pages of
// the binary it mapped (internal/pagetrim), then waits for activity before
// it does so again. It never acts while calls flow, so the
// cost per call is unchanged; it costs one GC per idle period.
const (
	trimEvery     = 10 * time.Second
	trimIdleBytes = 1 << 20 // allocated in an interval below this is idle (the status file and the config check allocate a little every second)
)

// trimWhenIdle checks the bytes allocated every interval until ctx ends, and
// calls trim after the first interval with fewer than idle bytes since the
// last call or the start, and not again until an interval with more.
func trimWhenIdle(ctx context.Context, every time.Duration, idle uint64, trim func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last, trimmed := allocated(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := allocated()
		switch busy := now-last >= idle; {
		case busy:
			trimmed = false
		case !trimmed:
			trim()
			trimmed = true
			now = allocated()
		}
		last = now
	}
}

// startTrimming runs trimWhenIdle with the defaults and trimAll until the
// returned func is called.
func startTrimming(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		trimWhenIdle(ctx, trimEvery, trimIdleBytes, trimAll)
	}()
	return func() { cancel(); <-done }
}

// trimAll gives back the heap's free pages and the binary's mapped ones.
func trimAll() {
	debug.FreeOSMemory()
	_, _ = pagetrim.Release()
}
