package main

import (
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// gcPercent reads GOGC (by setting it and setting it back).
func gcPercent() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

// TestRelaxGCUntil: GOGC is startupGOGC until the start's end (ready) and
// then the first call or the settle time, whichever comes first, and then
// what it was; with the operator's GOGC set, it is not touched.
func TestRelaxGCUntil(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	waitRestored := func(what string, restored <-chan struct{}) {
		t.Helper()
		select {
		case <-restored:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the start-up's end not handled within 10s", what)
		}
	}

	// The first call ends it, long before the settle time.
	ready, called := make(chan struct{}), make(chan struct{})
	var primed atomic.Bool
	restored := relaxGCUntil(ready, called, time.Hour, func() {
		if gcPercent() != 100 {
			t.Error("before ran while GOGC was still relaxed")
		}
		primed.Store(true)
	})
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("GOGC while starting = %d, want %d", got, startupGOGC)
	}
	close(ready)
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("GOGC right after the start's end = %d, want %d until the first call or the settle time", got, startupGOGC)
	}
	if primed.Load() {
		t.Fatal("before ran before the first call or the settle time")
	}
	close(called)
	waitRestored("first call", restored)
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after start-up = %d, want 100 (what it was)", got)
	}
	if !primed.Load() {
		t.Error("the settle ended without running before")
	}

	// Without a call, the settle time ends it.
	ready, called = make(chan struct{}), make(chan struct{})
	restored = relaxGCUntil(ready, called, 50*time.Millisecond, nil)
	close(ready)
	waitRestored("no call", restored)
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after start-up without a call = %d, want 100 (what it was)", got)
	}

	t.Setenv("GOGC", "50")
	ready = make(chan struct{})
	restored = relaxGCUntil(ready, called, 0, nil)
	if got := gcPercent(); got != 100 {
		t.Errorf("with the operator's GOGC set: GOGC = %d while starting, want it untouched (100)", got)
	}
	close(ready)
	waitRestored("operator's GOGC", restored)
	if got := gcPercent(); got != 100 {
		t.Errorf("with the operator's GOGC set: GOGC = %d after start-up, want it untouched (100)", got)
	}
}
