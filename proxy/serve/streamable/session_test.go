package streamable

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIdleSessionReaping: a session is closed after the idle timeout with no
// request open and no call in flight, and never while either lasts.
func TestIdleSessionReaping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newFakeCore()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := s.server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()

		const idle = time.Minute
		h := &httpSessions{core: s, max: 10, idle: idle}
		if !h.reserve() {
			t.Fatal("reserve refused below the cap")
		}
		e := h.register(ss.ID(), peer{UID: -1})
		if e == nil {
			t.Fatal("register did not find the session")
		}
		open := func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.byID[e.id] == e
		}

		// The creating request is open: no timer runs.
		time.Sleep(3 * idle)
		synctest.Wait()
		if !open() {
			t.Fatal("session closed while its creating request was open")
		}
		h.leave(e, false)

		// A call in flight whose request has gone keeps the session.
		_, done := s.calls.Track(ctx, e.id)
		time.Sleep(3 * idle)
		synctest.Wait()
		if !open() {
			t.Fatal("session closed with a call in flight")
		}
		done()

		// A request open (a GET stream) keeps it too.
		if _, res := h.enter(e.id, peer{UID: -1}, true); res != entered {
			t.Fatalf("enter = %v", res)
		}
		time.Sleep(3 * idle)
		synctest.Wait()
		if !open() {
			t.Fatal("session closed with its GET stream open")
		}
		h.leave(e, true)

		// Idle now: closed one idle timeout later, and its place is free.
		time.Sleep(idle - time.Second)
		synctest.Wait()
		if !open() {
			t.Fatal("session closed before the idle timeout")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if open() {
			t.Fatal("idle session not closed after the idle timeout")
		}
		waited := make(chan error, 1)
		go func() { waited <- ss.Wait() }()
		synctest.Wait()
		select {
		case <-waited:
		default:
			t.Fatal("the SDK session was not closed")
		}
		h.mu.Lock()
		n, pending := len(h.byID), h.pending
		h.mu.Unlock()
		if n != 0 || pending != 0 {
			t.Errorf("after reaping: %d sessions, %d pending; want 0, 0", n, pending)
		}
	})
}
