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
// has ended; the memory that growth took is then given back, and so are
// the pages of the binary that the start touched (internal/pagetrim).

// startupGOGC is GOGC while the servers start.
const startupGOGC = 400

// startupGCBound bounds how long start-up lasts for the collector, for a
// proxy whose servers wait for a client that never comes.
const startupGCBound = 30 * time.Second

// relaxGCUntil sets GOGC to startupGOGC until ready is closed (or
// startupGCBound passes), then restores it, returns the memory freed to the
// system and releases the binary's pages; the channel it returns is closed
// then. An operator's own GOGC or GOMEMLIMIT is left as it is (the memory
// and the pages are given back all the same).
func relaxGCUntil(ready <-chan struct{}) <-chan struct{} {
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
		case <-t.C:
		}
		if relaxed {
			debug.SetGCPercent(old)
		}
		debug.FreeOSMemory()
		_, _ = pagetrim.Release()
	}()
	return restored
}
