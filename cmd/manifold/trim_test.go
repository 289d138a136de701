package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

var sink []byte

// TestTrimWhenIdle checks that trimWhenIdle trims once when idle, not again
// while idle, and again after activity. (Nothing else in this package's
// tests allocates much while it runs; its intervals are generous.)
func TestTrimWhenIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var trims atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		trimWhenIdle(ctx, 50*time.Millisecond, 8<<20, func() { trims.Add(1) })
	}()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d trims", what, trims.Load())
			}
		}
	}
	waitFor("no trim when idle", func() bool { return trims.Load() >= 1 })
	time.Sleep(300 * time.Millisecond) // six idle intervals
	if n := trims.Load(); n != 1 {
		t.Fatalf("%d trims in one idle period, want 1", n)
	}
	// Activity: well over 8 MB per interval for a while.
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		sink = make([]byte, 1<<20)
	}
	waitFor("no trim after activity", func() bool { return trims.Load() >= 2 })
}
