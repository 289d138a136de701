package session

import (
	"context"
	"sync"
)

// Calls tracks the calls in flight per HTTP session, so that a client
// that ends its session (DELETE) cancels them upstream at once; the SDK waits
// for in-flight handlers before it closes a session.
type Calls struct {
	mu    sync.Mutex
	calls map[string]map[*context.CancelFunc]struct{} // session id -> cancels; guarded by mu
}

// Track returns a context of ctx that a DELETE of session id cancels, and
// the func that ends it (and its tracking) once its call is over.
func (sc *Calls) Track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	untrack := sc.Add(id, cancel)
	return ctx, func() {
		untrack()
		cancel()
	}
}

// Add has a DELETE of session id call cancel, until the func it returns
// is called.
func (sc *Calls) Add(id string, cancel context.CancelFunc) func() {
	key := &cancel
	sc.mu.Lock()
	if sc.calls == nil {
		sc.calls = make(map[string]map[*context.CancelFunc]struct{})
	}
	if sc.calls[id] == nil {
		sc.calls[id] = make(map[*context.CancelFunc]struct{})
	}
	sc.calls[id][key] = struct{}{}
	sc.mu.Unlock()
	return func() {
		sc.mu.Lock()
		delete(sc.calls[id], key)
		if len(sc.calls[id]) == 0 {
			delete(sc.calls, id)
		}
		sc.mu.Unlock()
	}
}

// Cancel cancels every call in flight of session id.
func (sc *Calls) Cancel(id string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for c := range sc.calls[id] {
		(*c)()
	}
}

// Busy reports whether session id has a call in flight.
func (sc *Calls) Busy(id string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.calls[id]) > 0
}
