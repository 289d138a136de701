package main

import (
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads GOGC (by setting it and setting it back).
func gcPercent() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

// TestRelaxGCUntil: GOGC is startupGOGC until the settle time after ready
// is closed has passed, and then what it was; with the operator's GOGC set,
// it is not touched.
func TestRelaxGCUntil(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	ready := make(chan struct{})
	restored := relaxGCUntil(ready, time.Second)
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("GOGC while starting = %d, want %d", got, startupGOGC)
	}
	close(ready)
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("GOGC right after the start's end = %d, want %d until the settle time passed", got, startupGOGC)
	}
	select {
	case <-restored:
	case <-time.After(10 * time.Second):
		t.Fatal("GOGC not restored within 10s of ready")
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after start-up = %d, want 100 (what it was)", got)
	}

	t.Setenv("GOGC", "50")
	ready = make(chan struct{})
	restored = relaxGCUntil(ready, 0)
	if got := gcPercent(); got != 100 {
		t.Errorf("with the operator's GOGC set: GOGC = %d while starting, want it untouched (100)", got)
	}
	close(ready)
	select {
	case <-restored:
	case <-time.After(10 * time.Second):
		t.Fatal("with the operator's GOGC set: the start-up's end not handled within 10s of ready")
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("with the operator's GOGC set: GOGC = %d after start-up, want it untouched (100)", got)
	}
}
