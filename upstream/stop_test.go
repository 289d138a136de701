//go:build linux

package upstream

import (
	"testing"
	"time"
)

// A stop waits StdinGrace, not StopGrace, between closing stdin and SIGTERM:
// one-shot commands set it short so that a server that ignores the end of
// its input (as server-everything does) does not hold them a full grace.
func TestCloseWaitsStdinGraceBeforeSIGTERM(t *testing.T) {
	opts := fixtureOptions(t, "ignore-eof")
	opts.StopGrace = time.Hour // waiting it would be declared stuck below
	opts.StdinGrace = 50 * time.Millisecond
	u := start(t, opts)
	done := make(chan struct{})
	go func() {
		_ = u.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not SIGTERM the server StdinGrace after closing its stdin (it waits StopGrace, 1h)")
	}
}
