package main

import (
	"os"
	"runtime/debug"
	"time"

	"github.com/manifold-mcp/manifold/internal/pagetrim"
)

// The garbage collector at start-up. A start allocates a great deal that
// lives briefly (the go-sdk decodes every message and every tool's schema
// through a 32 KB buffer of its own, twice per tool it registers) while the
// heap is still small, so that at the default GOGC the collector runs again
// and again: measured, about 45% of the process's CPU up to a complete
// catalog of 20 servers × 50 tools (240 ms, 130 ms with no collection). The
// collector is let to grow the heap more until every server's first start
// has ended and the client's opening with it; the memory that growth took
// is then given back, and so are the pages of the binary that the start
// touched (internal/pagetrim).
//
// The client's opening: its first requests come right when the start ends
// (over stdio the answer to its initialize waits for it), and a forced
// collection, the return of the free memory and the release of the
// binary's pages cost about 5 ms of CPU beside them (the release takes
// pages those first answers fault right back in). So the settle waits for
// the first tool call (the opening is over, work begins: the heap must not
// grow at startupGOGC under a load) or startupSettle, whichever comes first.

// startupGOGC is GOGC while the servers start.
const startupGOGC = 400

// startupGCBound bounds how long start-up lasts for the collector, for a
// proxy whose servers wait for a client that never comes.
const startupGCBound = 30 * time.Second

// startupSettle is how long after the start's end, at most, GOGC is
// restored and the memory given back.
const startupSettle = time.Second

// relaxGCUntil sets GOGC to startupGOGC until ready is closed (or
// startupGCBound passed) and then called is closed or settle has passed,
// then restores it, runs before (if not nil), returns the memory freed to
// the system and releases the binary's pages; the channel it returns is
// closed then. before is for work the start leaves to the next seconds,
// which would map back at once the pages just released: the catalog's size
// for the status file, computed once per catalog (without it, the proxy at
// rest held 1.7–2.1 MB more of its binary, BenchmarkProxyMemory). An
// operator's own GOGC or GOMEMLIMIT is left as it is (the memory and the
// pages are given back all the same).
func relaxGCUntil(ready, called <-chan struct{}, settle time.Duration, before func()) <-chan struct{} {
	old, relaxed := 0, os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
	if relaxed {
		old = debug.SetGCPercent(startupGOGC)
	}
	restored := make(chan struct{})
	go func() {
		defer close(restored)
		t := time.NewTimer(startupGCBound)
		defer t.Stop()
		select {
		case <-ready:
			t.Reset(settle)
			select {
			case <-called:
			case <-t.C:
			}
		case <-t.C:
		}
		if relaxed {
			debug.SetGCPercent(old)
		}
		if before != nil {
			before()
		}
		debug.FreeOSMemory()
		_, _ = pagetrim.Release()
	}()
	return restored
}
