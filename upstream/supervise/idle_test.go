package supervise

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoIdleTakesTheServerOutOfService: the idle stop takes the backend out
// of service in the same step as its check, so that a call arriving during
// the stop finds it idle (and wakes it) instead of the process being closed
// (seen in CI: "exited while running" right after "server idle").
func TestGoIdleTakesTheServerOutOfService(t *testing.T) {
	newB := func(lastUse time.Duration) *Backend {
		b := &Backend{cfg: Config{IdleTimeout: time.Second}, state: StateUp}
		b.lastUsed.Store(time.Now().Add(-lastUse).UnixNano())
		return b
	}

	b := newB(2 * time.Second)
	if !b.goIdle() {
		t.Fatal("goIdle after 2s unused with idle_timeout 1s = false, want true")
	}
	if st, up, _ := b.Snapshot(); st != StateIdle || up != nil {
		t.Errorf("after goIdle a call's snapshot is %v (up %v), want %v and no upstream", st, up, StateIdle)
	}

	if b := newB(10 * time.Millisecond); b.goIdle() {
		t.Error("goIdle of a server used 10ms ago = true, want false")
	}
	b = newB(2 * time.Second)
	done := b.Enter(context.Background(), &mcp.ServerSession{})
	if b.goIdle() {
		t.Error("goIdle with a call in flight = true, want false")
	}
	done()
	if !b.goIdle() {
		t.Error("goIdle once the call ended = false, want true")
	}
	b = newB(2 * time.Second)
	b.cfg.IdleTimeout = 0
	if b.goIdle() {
		t.Error("goIdle without idle_timeout = true, want false")
	}
}
